// A device as the e2e UI tests run it: `arbor serve` in a real process with its own data
// directory (the scripted `fake` model set up), its API over the WebSocket the browser uses,
// and the `arbor` CLI against it.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import WebSocket from 'ws'
import type { ApiEvent, ApiMethod, ApiMethods, ServerMessage } from '../../src/shared/api'
import { until } from './temp-dir'

const BIN = path.resolve('bin/arbor.js')

/** A client of a node's API over its WebSocket, as the browser speaks it. */
export class ApiSocket {
  readonly events: ApiEvent[] = []
  private next = 1
  private readonly waiting = new Map<number, (m: ServerMessage) => void>()
  private constructor (private readonly ws: WebSocket) {
    ws.on('message', data => {
      const m = JSON.parse(String(data)) as ServerMessage
      if ('event' in m) this.events.push(m.event)
      else this.waiting.get(m.id)?.(m)
    })
  }

  static open (url: string): Promise<ApiSocket> {
    const u = new URL(url)
    const token = new URLSearchParams(u.hash.slice(1)).get('token') ?? ''
    const ws = new WebSocket(`ws://${u.host}/api?token=${token}`, { origin: u.origin })
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new ApiSocket(ws)))
      ws.once('error', reject)
    })
  }

  request<M extends ApiMethod> (method: M, params: ApiMethods[M]['params']): Promise<ApiMethods[M]['result']> {
    const id = this.next++
    return new Promise((resolve, reject) => {
      this.waiting.set(id, m => {
        this.waiting.delete(id)
        if ('error' in m) reject(new Error(`${method}: ${m.error.message}`))
        else resolve((m as { result: unknown }).result as ApiMethods[M]['result'])
      })
      this.ws.send(JSON.stringify({ id, method, params }))
    })
  }

  close (): void { this.ws.close() }
}

export interface ServedNode { name: string; dir: string; bootstrap: string; proc: ChildProcess; log: string; url: string; api: ApiSocket }

/**
 * `arbor serve` for one device in `dir`, meeting its devices on the DHT `bootstrap`
 * (host:port,…); resolves once it prints its address and its API answers. `started`
 * gets the device as soon as its process runs, so the caller can stop it whatever happens.
 */
export async function serveNode (name: string, dir: string, bootstrap: string, started: (d: ServedNode) => void): Promise<ServedNode> {
  fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ provider: 'fake' }))
  const proc = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--name', name], { env: { ...process.env, ARBOR_DATA: dir, ARBOR_BOOTSTRAP: bootstrap, HOME: dir } })
  const dev = { name, dir, bootstrap, proc, log: '', url: '' } as ServedNode
  started(dev)
  proc.stdout?.on('data', d => { dev.log += String(d) })
  proc.stderr?.on('data', d => { dev.log += String(d) })
  const address = /http:\/\/127\.0\.0\.1:\d+\/#token=[0-9a-f]{64}/
  await until(() => address.test(dev.log), `${name}'s node to print its address`, 30_000)
  dev.url = (dev.log.match(address) as RegExpMatchArray)[0]
  dev.api = await ApiSocket.open(dev.url)
  return dev
}

/** Closes the device's API socket and stops its node (SIGTERM), waiting for it to exit. */
export async function stopNode (d: ServedNode): Promise<void> {
  d.api?.close()
  if (d.proc.exitCode === null && d.proc.signalCode === null) {
    const exited = new Promise(resolve => d.proc.once('exit', resolve))
    d.proc.kill('SIGTERM')
    await exited
  }
}

/** Runs `arbor ...` against a device (through its running node). Asynchronous: the testnet lives in the test's process. */
export function arbor (dev: ServedNode, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise(resolve => {
    execFile(process.execPath, [BIN, ...args], { env: { ...process.env, ARBOR_DATA: dev.dir, ARBOR_BOOTSTRAP: dev.bootstrap, HOME: dev.dir }, encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, out: stdout, err: stderr })
    })
  })
}
