// Real `arbor serve` processes on a HyperDHT testnet on loopback, driven by the `arbor` CLI
// (which forwards into the running node), for the sync and failover tests and
// bench/failover.ts.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import createTestnet from 'hyperdht/testnet.js'
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

export class ProcessCluster {
  readonly devices = new Map<string, Device>()
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

  /** Sends a signal to a device's node and waits for it to exit. */
  async kill (name: string, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const proc = this.device(name).proc
    if (proc === null || proc.exitCode !== null || proc.signalCode !== null) return
    const exited = once(proc, 'exit')
    proc.kill(signal)
    await exited
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
