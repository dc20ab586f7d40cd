// Devices as separate processes (test/fixtures/sync-node-child.ts) on a HyperDHT testnet in
// this process, for the discovery test and bench/sync: how long paired devices take to find
// each other after `net on` or a restart, timed on the devices' own clock.
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import createTestnet from 'hyperdht/testnet.js'
import crypto from 'hypercore-crypto'

const CHILD = fileURLToPath(new URL('../fixtures/sync-node-child.ts', import.meta.url))
const ROOT = fileURLToPath(new URL('../..', import.meta.url))

export interface ChildEvent { t: number; ev: string; device?: string; state?: string; on?: boolean; level?: string; m?: string }

/** One device's process; its events are kept (and its log, for a failure's message). */
export class DeviceProcess {
  readonly events: ChildEvent[] = []
  device = ''
  private proc: ChildProcess | null = null
  private stderr = ''

  constructor (readonly name: string, readonly dir: string, private readonly args: () => string[]) {}

  /** Starts the process (again, on the same directory); resolves with the time its node began to start. */
  async start (trusted: string[] = [], timeoutMs = 60_000): Promise<number> {
    if (this.running) throw new Error(`${this.name} is already running`)
    const from = this.events.length
    const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, this.dir, ...this.args(), ...trusted], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] })
    this.proc = proc
    let buffered = ''
    proc.stdout?.setEncoding('utf8').on('data', (s: string) => {
      buffered += s
      let nl: number
      while ((nl = buffered.indexOf('\n')) !== -1) {
        const line = buffered.slice(0, nl)
        buffered = buffered.slice(nl + 1)
        try { this.events.push(JSON.parse(line) as ChildEvent) } catch { this.stderr += `${line}\n` }
      }
    })
    proc.stderr?.setEncoding('utf8').on('data', (s: string) => { this.stderr += s })
    const ready = await this.next(e => e.ev === 'ready', from, timeoutMs)
    this.device = ready.device as string
    return (this.events.slice(from).find(e => e.ev === 'start') as ChildEvent).t
  }

  get running (): boolean { return this.proc !== null && this.proc.exitCode === null && this.proc.signalCode === null }

  send (cmd: Record<string, unknown>): void { this.proc?.stdin?.write(JSON.stringify(cmd) + '\n') }

  /** Turns the node's network on or off; resolves with the time setOnline was called. */
  async online (on: boolean): Promise<number> {
    const from = this.events.length
    this.send({ online: on })
    return (await this.next(e => e.ev === 'online' && e.on === on, from)).t
  }

  /** The first event from index `from` on that matches; fails after timeoutMs, or if the process exits. */
  async next (match: (e: ChildEvent) => boolean, from = 0, timeoutMs = 20_000): Promise<ChildEvent> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const e = this.events.slice(from).find(match)
      if (e !== undefined) return e
      if (!this.running) throw new Error(`${this.name} exited: ${this.tail()}`)
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting on ${this.name}: ${this.tail()}`)
      await new Promise(resolve => setTimeout(resolve, 5))
    }
  }

  /** The first 'connected' event for `device` at or after time t. */
  connectedTo (device: string, t: number, timeoutMs = 20_000): Promise<ChildEvent> {
    return this.next(e => e.ev === 'peer' && e.device === device && e.state === 'connected' && e.t >= t, 0, timeoutMs)
  }

  /** Closes the node and its store cleanly and waits for the process to exit. */
  async close (): Promise<void> {
    const proc = this.proc
    if (proc === null || !this.running) return
    const exited = once(proc, 'exit')
    this.send({ close: true })
    await exited
  }

  async kill (): Promise<void> {
    const proc = this.proc
    if (proc === null || !this.running) return
    const exited = once(proc, 'exit')
    proc.kill('SIGKILL')
    await exited
  }

  /** What the process said last (log lines and stderr), for a failure's message. */
  tail (n = 40): string {
    const lines = this.events.slice(-n).map(e => `${e.t} ${e.ev} ${e.device?.slice(0, 8) ?? ''} ${e.state ?? ''} ${e.on ?? ''} ${e.m ?? ''}`)
    return `\n${lines.join('\n')}\n${this.stderr.slice(-2000)}`
  }
}

/** A testnet and the devices on it, all in one cluster (a fresh topic secret). */
export class DeviceProcesses {
  private testnet: { bootstrap: Array<{ host: string; port: number }>; destroy: () => Promise<void> } | null = null
  private readonly secret = crypto.randomBytes(32).toString('hex')
  private readonly dirs: string[] = []
  readonly devices: DeviceProcess[] = []

  async ready (): Promise<void> {
    this.testnet = await createTestnet(3)
  }

  /** A device (not started) in a fresh directory; `bare`: a bare Hyperswarm instead of a SyncNode. */
  async device (name: string, opts: { bare?: boolean } = {}): Promise<DeviceProcess> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), `arbor-dev-${name}-`))
    this.dirs.push(dir)
    const d = new DeviceProcess(name, dir, () => {
      if (this.testnet === null) throw new Error('the testnet is not running')
      return [JSON.stringify(this.testnet.bootstrap), this.secret, ...(opts.bare === true ? ['bare'] : [])]
    })
    this.devices.push(d)
    return d
  }

  /** Starts two devices paired with each other and waits until each has connected to the other. */
  async pair (a: DeviceProcess, b: DeviceProcess): Promise<void> {
    await a.start()
    const t = await b.start([a.device])
    a.send({ trust: b.device })
    await Promise.all([a.connectedTo(b.device, t), b.connectedTo(a.device, t)])
  }

  async close (): Promise<void> {
    await Promise.all(this.devices.map(d => d.kill()))
    await this.testnet?.destroy()
    this.testnet = null
    await Promise.all(this.dirs.splice(0).map(d => fs.rm(d, { recursive: true, force: true })))
  }
}

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

/** ms from t until each of a and b has connected to the other (the later of the two, on their own clock). */
async function bothConnected (a: DeviceProcess, b: DeviceProcess, t: number): Promise<number> {
  const [x, y] = await Promise.all([a.connectedTo(b.device, t), b.connectedTo(a.device, t)])
  return Math.max(x.t, y.t) - t
}

/**
 * `net off` on b (and on a too, with `both`), until a has seen b go; away for awayMs; `net on`
 * (b first): ms from b's setOnline(true) until each has connected to the other again.
 */
export async function netOnOnce (a: DeviceProcess, b: DeviceProcess, awayMs: number, both = false): Promise<number> {
  const from = a.events.length
  await b.online(false)
  if (both) await a.online(false)
  else await a.next(e => e.ev === 'peer' && e.device === b.device && e.state === 'disconnected', from)
  await sleep(awayMs)
  const t = await b.online(true)
  if (both) await a.online(true)
  return bothConnected(a, b, t)
}

/** b stops (closed cleanly, or SIGKILLed), is away for awayMs, and starts again on its directory: ms from its node's start until each has connected to the other. */
export async function restartOnce (a: DeviceProcess, b: DeviceProcess, awayMs: number, how: 'close' | 'kill' = 'close'): Promise<number> {
  if (how === 'close') await b.close()
  else await b.kill()
  await sleep(awayMs)
  const t = await b.start([a.device])
  return bothConnected(a, b, t)
}

/** The away time of run i: spread over 0.3–1.8 s, the same in every run of a test or bench. */
export function awayMs (i: number): number { return 300 + (i * 677) % 1500 }
