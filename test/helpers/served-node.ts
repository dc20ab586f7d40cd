// A device as the e2e UI tests run it: `arbor serve` in a real process with its own data
// directory (the scripted `fake` model set up), its API over the WebSocket the browser uses,
// and the `arbor` CLI against it.
import WebSocket from 'ws'
import type { ApiEvent, ApiMethod, ApiMethods, ServerMessage } from '../../src/shared/api'
import { runArbor, type ArborResult } from './arbor-processes'
import { startServe, type Served } from './ui-session'

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

export interface ServedNode extends Served { name: string; dir: string; bootstrap: string; api: ApiSocket }

/**
 * `arbor serve` for one device in `dir` (startServe), meeting its devices on the DHT
 * `bootstrap` (host:port,…); resolves once it printed its address and its API answers.
 * Its stop() closes the API socket too.
 */
export async function serveNode (name: string, dir: string, bootstrap: string): Promise<ServedNode> {
  const served = await startServe(dir, { name, bootstrap })
  const api = await ApiSocket.open(served.url).catch(async (err: unknown) => { await served.stop(); throw err })
  return { ...served, name, dir, bootstrap, api, stop: async () => { api.close(); await served.stop() } }
}

/** Runs `arbor ...` against a device (through its running node). */
export function arbor (dev: ServedNode, ...args: string[]): Promise<ArborResult> {
  return runArbor({ ...process.env, ARBOR_DATA: dev.dir, ARBOR_BOOTSTRAP: dev.bootstrap, HOME: dev.dir }, args, 30_000)
}
