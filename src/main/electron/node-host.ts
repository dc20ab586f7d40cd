// Electron main's side of the node (DESIGN.md, "Processes"): forks it as a utilityProcess,
// supervises it with the runtime's OTP supervisor (restart with backoff, bounded intensity),
// hands it the secrets, keeps new ones for it, and opens API channels to it for windows.
// No Electron import: the process and channel factories are injected, so it is tested as is.
import { EventEmitter } from 'node:events'
import readline from 'node:readline'
import type { Logger } from '../../shared/logger'
import type { FromNode, ToNode } from './node-process-protocol'
import { systemClock, type Clock, type ClockTimer } from '../../shared/clock'
import { Supervisor } from '../runtime/supervisor/supervisor'
import { describeExit, type Backoff, type ExitReason, type RunningChild, type SupervisorEvent } from '../runtime/supervisor/types'
import type { SecretStore, Secrets } from '../secrets/secret-store'

/** What main uses of Electron's UtilityProcess. */
export interface NodeChild {
  readonly pid: number | undefined
  readonly stdout: NodeJS.ReadableStream | null
  readonly stderr: NodeJS.ReadableStream | null
  postMessage (message: unknown, transfer?: unknown[]): void
  kill (): boolean
  on (event: 'exit', listener: (code: number) => void): unknown
  on (event: 'message', listener: (message: unknown) => void): unknown
}

export interface NodeHostOptions<Port> {
  /** forks the node: utilityProcess.fork(out/main/node.js, …) */
  fork: () => NodeChild
  /** a new MessageChannelMain */
  channel: () => { port1: Port; port2: Port }
  dataDir: string
  /** main's own store (encrypted with safeStorage where it can be) */
  secrets: SecretStore
  log: Logger
  clock?: Clock
  random?: () => number
  /** OTP restart intensity: more than this many restarts within periodMs and main gives up (default 5 in 60 s) */
  intensity?: number
  periodMs?: number
  backoff?: Backoff
  /** how long a clean shutdown may take before the node is killed (default 10 s) */
  shutdownMs?: number
  /** after a kill, how long before SIGKILL, for a node too stuck to handle SIGTERM (default 3 s) */
  killGraceMs?: number
  forceKill?: (pid: number) => void
}

export type NodeHostState = 'starting' | 'up' | 'restarting' | 'failed' | 'stopping' | 'stopped'

export interface NodeHostEvents {
  /** the node is open: connect() gives windows their ports now */
  up: []
  /** the node stopped unexpectedly; a restart is due in restartInMs */
  down: [{ message: string; restartInMs: number }]
  /** the node stopped too often and is not restarted until retry() */
  failed: [{ message: string }]
}

const DEFAULT_BACKOFF: Backoff = { minMs: 500, maxMs: 10_000, randomFactor: 0.2, resetAfterMs: 30_000 }

export class NodeHost<Port = unknown> extends EventEmitter<NodeHostEvents> {
  private readonly opts: NodeHostOptions<Port>
  private readonly log: Logger
  private readonly clock: Clock
  private supervisor: Supervisor | null = null
  private child: NodeChild | null = null
  private ready_ = false
  private state_: NodeHostState = 'stopped'
  /** why the last node ended, for the user */
  private lastWhy: string | undefined
  private closing: Promise<void> | null = null

  constructor (opts: NodeHostOptions<Port>) {
    super()
    this.opts = opts
    this.log = opts.log
    this.clock = opts.clock ?? systemClock
  }

  get state (): NodeHostState { return this.state_ }

  /** Forks the node and starts supervising it. */
  async ready (): Promise<void> {
    if (this.supervisor !== null || this.closing !== null) return
    await this.supervise()
  }

  /** After `failed`: a fresh supervisor, with a fresh restart budget. */
  async retry (): Promise<void> {
    if (this.state_ !== 'failed' || this.closing !== null) return
    await this.supervise()
  }

  /** Asks the node to shut down cleanly; kills it if it takes longer than shutdownMs. */
  close (): Promise<void> {
    if (this.closing === null) {
      this.state_ = 'stopping'
      this.closing = (async () => {
        await this.supervisor?.close()
        this.state_ = 'stopped'
      })()
    }
    return this.closing
  }

  /** A new API channel: one end goes to the node, the other is returned for a window; null while the node is not up. */
  connect (): Port | null {
    const child = this.child
    if (child === null || !this.ready_ || this.state_ !== 'up') return null
    const { port1, port2 } = this.opts.channel()
    child.postMessage({ type: 'connect' } satisfies ToNode, [port1])
    return port2
  }

  private async supervise (): Promise<void> {
    this.state_ = 'starting'
    this.lastWhy = undefined
    const sup = new Supervisor('arbor-desktop', {
      intensity: this.opts.intensity ?? 5,
      periodMs: this.opts.periodMs ?? 60_000,
      backoff: this.opts.backoff ?? DEFAULT_BACKOFF
    }, [{ id: 'node', restart: 'permanent', shutdown: this.opts.shutdownMs ?? 10_000, start: () => this.start() }], {
      clock: this.clock,
      ...(this.opts.random !== undefined ? { random: this.opts.random } : {})
    })
    this.supervisor = sup
    sup.on('event', (ev: SupervisorEvent) => { if (this.supervisor === sup) this.onSupervisorEvent(ev) })
    try {
      await sup.ready()
    } catch (err) {
      this.giveUp(`the node could not be started: ${(err as Error).message}`)
    }
  }

  private onSupervisorEvent (ev: SupervisorEvent): void {
    if (this.closing !== null) return
    if (ev.type === 'restarting') {
      this.state_ = 'restarting'
      const message = `the node stopped unexpectedly (${this.lastWhy ?? 'no reason given'}); restarting it`
      this.log.warn(`${message} in ${ev.delayMs} ms`)
      this.emit('down', { message, restartInMs: ev.delayMs })
    } else if (ev.type === 'intensity-exceeded') {
      // The supervisor stops itself; retry() starts a fresh one.
      this.giveUp(`the node stopped ${ev.restarts} times within ${Math.round(ev.periodMs / 1000)} s and is not restarted again; the last time: ${this.lastWhy ?? 'no reason given'}`)
    }
  }

  private giveUp (message: string): void {
    this.state_ = 'failed'
    this.log.error(message)
    this.emit('failed', { message })
  }

  /** Starts one node process (the supervisor's child start function). */
  private async start (): Promise<RunningChild> {
    const secrets = await this.readSecrets()
    const child = this.opts.fork()
    this.child = child
    this.ready_ = false
    this.pipe(child.stdout, 'info')
    this.pipe(child.stderr, 'warn')
    let asked: 'shutdown' | 'killed' | null = null
    let forceTimer: ClockTimer | undefined
    let failure: string | undefined
    const exit = new Promise<ExitReason>(resolve => {
      child.on('exit', code => {
        if (forceTimer !== undefined) this.clock.clearTimeout(forceTimer)
        if (this.child === child) { this.child = null; this.ready_ = false }
        let reason: ExitReason
        if (asked === 'killed') reason = { kind: 'killed' }
        else if (asked === 'shutdown' && code === 0) reason = { kind: 'shutdown' }
        else if (code === 0) reason = { kind: 'normal' }
        else reason = { kind: 'error', error: new Error(failure ?? `exit code ${code}`) }
        this.lastWhy = failure ?? `exit code ${code}`
        this.log.info(`the node exited (${describeExit(reason)})`)
        resolve(reason)
      })
    })
    child.on('message', (message: unknown) => {
      const msg = message as FromNode | null
      if (msg?.type === 'ready') {
        if (this.child !== child || this.closing !== null) return
        this.ready_ = true
        this.state_ = 'up'
        this.log.info(`the node is up (device ${msg.device.slice(0, 12)})`)
        this.emit('up')
      } else if (msg?.type === 'failed') {
        failure = msg.message
      } else if (msg?.type === 'secret-set') {
        this.opts.secrets.set(msg.name, msg.value ?? undefined).then(
          () => { child.postMessage({ type: 'secret-saved', id: msg.id } satisfies ToNode) },
          (err: Error) => {
            this.log.error(`could not store the ${msg.name}: ${err.message}`)
            child.postMessage({ type: 'secret-saved', id: msg.id, error: err.message } satisfies ToNode)
          })
      }
    })
    child.postMessage({ type: 'start', dataDir: this.opts.dataDir, secrets, secretsDescription: this.opts.secrets.description } satisfies ToNode)
    return {
      exit,
      shutdown: () => {
        if (asked !== null) return
        asked = 'shutdown'
        child.postMessage({ type: 'shutdown' } satisfies ToNode)
      },
      kill: () => {
        asked = 'killed'
        child.kill()
        // SIGTERM needs a live event loop; a node stuck in a loop gets SIGKILL.
        const pid = child.pid
        if (pid !== undefined && forceTimer === undefined) forceTimer = this.clock.setTimeout(() => { (this.opts.forceKill ?? sigkill)(pid) }, this.opts.killGraceMs ?? 3000)
      }
    }
  }

  private async readSecrets (): Promise<Secrets> {
    try {
      const apiKey = await this.opts.secrets.get('apiKey')
      return apiKey !== undefined ? { apiKey } : {}
    } catch (err) {
      this.log.error(`could not read the stored API key: ${(err as Error).message}`)
      return {}
    }
  }

  /** The node's output goes to main's log, line by line. */
  private pipe (stream: NodeJS.ReadableStream | null, level: 'info' | 'warn'): void {
    if (stream === null) return
    readline.createInterface({ input: stream, crlfDelay: Infinity }).on('line', line => { if (line.trim() !== '') this.log[level](line) })
  }
}

function sigkill (pid: number): void {
  try {
    process.kill(pid, 'SIGKILL')
  } catch {
    // it exited meanwhile
  }
}
