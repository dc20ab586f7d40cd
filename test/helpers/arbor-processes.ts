// Real `arbor serve` processes on a HyperDHT testnet on loopback, driven by the `arbor` CLI
// (which forwards into the running node), for the sync, failover and pause tests and
// bench/failover.ts.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import createTestnet from 'hyperdht/testnet.js'
import { afterAll, beforeAll } from 'vitest'
import type { Entry } from '../../src/shared/entry/entry'
import { until } from './temp-dir'

const BIN = fileURLToPath(new URL('../../bin/arbor.js', import.meta.url))

export interface ArborResult { code: number; out: string; err: string }

export interface Device {
  name: string
  dir: string
  /** where its agents work in conversations it was given no directory for (ARBOR_WORKSPACES): not the user's home */
  workspaces: string
  proc: ChildProcess | null
  /** everything the current and earlier processes of this device printed */
  log: string
}

/** A row of `arbor devices --json`, as far as the tests read it. */
export interface DeviceRow { device: string; name: string; self: boolean; connected: boolean; suspected: boolean; suspectedSince?: number }

export class ProcessCluster {
  readonly devices = new Map<string, Device>()
  /** each device's key by its name, as the device says of itself (filled by startPaired) */
  readonly keys = new Map<string, string>()
  private testnet: { bootstrap: Array<{ host: string; port: number }>; destroy: () => Promise<void> } | null = null
  private bootstrap = ''
  private readonly dirs: string[] = []
  private readonly background = new Set<ChildProcess>()

  /** Starts the testnet (in this process: keep the event loop free, every call here is asynchronous). */
  async ready (): Promise<void> {
    this.testnet = await createTestnet(3)
    this.bootstrap = this.testnet.bootstrap.map(b => `${b.host}:${b.port}`).join(',')
  }

  async tempDir (prefix = 'arbor-proc-'): Promise<string> {
    const d = await fs.mkdtemp(path.join(os.tmpdir(), prefix))
    this.dirs.push(d)
    return d
  }

  private device (name: string): Device {
    const d = this.devices.get(name)
    if (d === undefined) throw new Error(`no device ${name}`)
    return d
  }

  private env (name: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    const d = this.device(name)
    return { ...process.env, ARBOR_DATA: d.dir, ARBOR_WORKSPACES: d.workspaces, ARBOR_BOOTSTRAP: this.bootstrap, ...extra }
  }

  /** Starts (or restarts) a device's node; resolves once it serves. */
  async serve (name: string, args: string[] = [], timeoutMs = 30_000): Promise<Device> {
    let dev = this.devices.get(name)
    if (dev === undefined) {
      dev = { name, dir: await this.tempDir('arbor-node-'), workspaces: await this.tempDir('arbor-ws-'), proc: null, log: '' }
      this.devices.set(name, dev)
    }
    if (dev.proc !== null && dev.proc.exitCode === null && dev.proc.signalCode === null) throw new Error(`${name} is already running`)
    const d = dev
    const mark = d.log.length
    const proc = spawn(process.execPath, [BIN, 'serve', '--name', name, '--port', '0', ...args], { env: this.env(name) })
    d.proc = proc
    proc.stdout?.on('data', (b: Buffer) => { d.log += String(b) })
    proc.stderr?.on('data', (b: Buffer) => { d.log += String(b) })
    await until(() => {
      if (proc.exitCode !== null) throw new Error(`${name}'s node exited (${proc.exitCode}): ${d.log.slice(mark)}`)
      return d.log.indexOf('is serving', mark) >= 0
    }, `${name}'s node to start`, timeoutMs, 50)
    return d
  }

  /** Runs `arbor ...` for a device (through its node when it serves). */
  arbor (name: string, ...args: string[]): Promise<ArborResult> {
    return runArbor(this.env(name), args)
  }

  /** Like arbor(), but fails with what the command said unless it exits 0; returns its stdout. */
  async ok (name: string, ...args: string[]): Promise<string> {
    const r = await this.arbor(name, ...args)
    if (r.code !== 0) throw new Error(`arbor ${args.join(' ')} on ${name} exited ${r.code}: ${r.err}${r.out}`)
    return r.out
  }

  /** Starts `arbor ...` without waiting for it (e.g. a chat whose turn is cut short); ended by close(). */
  spawnArbor (name: string, ...args: string[]): { proc: ChildProcess; output: () => string } {
    const proc = spawn(process.execPath, [BIN, ...args], { env: this.env(name) })
    let output = ''
    proc.stdout?.on('data', (b: Buffer) => { output += String(b) })
    proc.stderr?.on('data', (b: Buffer) => { output += String(b) })
    this.background.add(proc)
    proc.once('exit', () => this.background.delete(proc))
    return { proc, output: () => output }
  }

  /** Pairs every other device with the first one, by invite codes made there. */
  async pair (first: string, ...others: string[]): Promise<void> {
    for (const joiner of others) {
      const code = (await this.ok(first, 'invite')).trim()
      await this.ok(joiner, 'join', code)
    }
  }

  /**
   * Starts these devices' nodes, pairs the others with the first, learns each one's key and
   * waits (up to connectMs) until every device hears every other one directly.
   */
  async startPaired (names: readonly string[], connectMs: number): Promise<void> {
    await Promise.all(names.map(n => this.serve(n)))
    await this.pair(names[0] as string, ...names.slice(1))
    for (const n of names) this.keys.set(n, (await this.devicesOf(n)).find(d => d.self)?.device ?? '')
    await this.waitConnected(names, 'every pair of devices to connect', connectMs)
  }

  /** What `arbor devices --json` says on a device. */
  async devicesOf (name: string): Promise<DeviceRow[]> {
    return (JSON.parse(await this.ok(name, 'devices', '--json')) as { devices: DeviceRow[] }).devices
  }

  /** The name of the device with this key (the key itself when none has it). */
  nameOf (key: string): string {
    return [...this.keys].find(([, k]) => k === key)?.[0] ?? key
  }

  /** Waits until each of these devices hears every other device it knows, none suspected. */
  async waitConnected (names: readonly string[], what: string, timeoutMs: number): Promise<void> {
    await until(async () => {
      for (const n of names) if ((await this.devicesOf(n)).some(d => !d.self && (!d.connected || d.suspected))) return false
      return true
    }, what, timeoutMs, 250)
  }

  /** A conversation's entries as a device exports them; none when it cannot (not there yet, or its node is starting). */
  async entries (name: string, conversation: string): Promise<Entry[]> {
    const r = await this.arbor(name, 'export', conversation, '--format', 'json')
    return r.code === 0 ? (JSON.parse(r.out) as { entries: Entry[] }).entries : []
  }

  /**
   * Writes the scripted `fake` model `script` to a fresh directory and makes it every device's
   * own setting (a device never takes its model from a peer's entries); returns the script's
   * path and a `work` directory beside it for the conversations' tools.
   */
  async fakeModel (prefix: string, script: unknown): Promise<{ script: string; work: string }> {
    const shared = await this.tempDir(prefix)
    const work = path.join(shared, 'work')
    await fs.mkdir(work)
    const file = path.join(shared, 'model.json')
    await fs.writeFile(file, JSON.stringify(script))
    for (const d of this.devices.values()) await fs.writeFile(path.join(d.dir, 'settings.json'), JSON.stringify({ provider: 'fake', script: file }))
    return { script: file, work }
  }

  /** Freezes (SIGSTOP) or wakes (SIGCONT) a device's node. */
  pause (name: string, paused: boolean): void {
    this.device(name).proc?.kill(paused ? 'SIGSTOP' : 'SIGCONT')
  }

  /** Sends a signal to a device's node and waits for it to exit. */
  async kill (name: string, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const proc = this.device(name).proc
    if (proc === null || proc.exitCode !== null || proc.signalCode !== null) return
    const exited = once(proc, 'exit')
    proc.kill(signal)
    proc.kill('SIGCONT') // a frozen node acts on the signal only once woken
    await exited
  }

  /** Prints the end of what each node said, to read when a test fails. */
  printLogs (chars = 3000): void {
    for (const [name, dev] of this.devices) if (dev.log !== '') console.log(`--- ${name}\n${dev.log.slice(-chars)}`)
  }

  /** Stops every node and command still running, the testnet, and removes the data. */
  async close (): Promise<void> {
    for (const p of this.background) p.kill('SIGKILL')
    await Promise.all([...this.devices.keys()].map(n => this.kill(n, 'SIGTERM')))
    await this.testnet?.destroy()
    this.testnet = null
    await Promise.all(this.dirs.splice(0).map(d => fs.rm(d, { recursive: true, force: true })))
  }
}

/**
 * A cluster for a test file, registered as its hooks (call it at the file's top level): the
 * testnet started before the tests; after them each node's log printed and everything closed.
 */
export function processCluster (logChars = 3000): ProcessCluster {
  const cluster = new ProcessCluster()
  beforeAll(() => cluster.ready(), 30_000)
  afterAll(async () => {
    cluster.printLogs(logChars)
    await cluster.close()
  }, 30_000)
  return cluster
}

/** How many runs a marker file records: each run appends a line. */
export async function markerRuns (file: string): Promise<number> {
  const text = await fs.readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => { if (err.code === 'ENOENT') return ''; throw err })
  return text.split('\n').filter(Boolean).length
}

/**
 * Runs `arbor ...` with `env` (through the device's node when it serves). Asynchronous on
 * purpose: a testnet in this process must keep answering.
 */
export function runArbor (env: NodeJS.ProcessEnv, args: string[], timeoutMs = 60_000): Promise<ArborResult> {
  return new Promise(resolve => {
    execFile(process.execPath, [BIN, ...args], { env, encoding: 'utf8', timeout: timeoutMs }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, out: stdout, err: stderr })
    })
  })
}
