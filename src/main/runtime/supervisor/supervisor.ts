import { EventEmitter } from 'node:events'
import { systemClock, type Clock, type ClockTimer } from '../../../shared/clock'
import { RestartWindow, restartDelay, shouldRestart } from './restart-policy'
import {
  describeExit, type ChildSpec, type ChildState, type ExitReason, type RunningChild, type Shutdown,
  type Strategy, type SupervisorEvent, type SupervisorFlags, type SupervisorTree
} from './types'

export interface SupervisorOptions {
  clock?: Clock
  /** random numbers in [0, 1) for backoff jitter */
  random?: () => number
  /** simple_one_for_one: stop children in parallel, in no order, instead of in reverse order; forget children that end for good */
  parallelShutdown?: boolean
}

interface ChildRecord {
  spec: ChildSpec & { restart: NonNullable<ChildSpec['restart']>; shutdown: Shutdown; type: 'worker' | 'supervisor' }
  child: RunningChild | null
  state: ChildState
  instance: number
  restarts: number
  startedAt: number
  attempt: number          // consecutive restarts, for backoff
  lastExit?: ExitReason
  timer?: ClockTimer
}

export class ChildStartError extends Error {
  constructor (readonly child: string, readonly reason: unknown) {
    super(`child ${child} failed to start: ${reason instanceof Error ? reason.message : String(reason)}`, { cause: reason })
    this.name = 'ChildStartError'
  }
}

/**
 * A supervisor with OTP semantics (erlang/otp supervisor.erl): children start in order
 * and stop in reverse order; one_for_one, one_for_all and rest_for_one restart
 * strategies; permanent/transient/temporary children; shutdown by grace period or
 * brutal kill; restart intensity in a sliding window, past which the supervisor stops
 * everything and exits with `shutdown`, escalating to its own supervisor.
 *
 * It is itself a RunningChild, so supervisors nest. All state changes go through one
 * queue, as messages to an Erlang process would.
 */
export interface SupervisorEvents { event: [SupervisorEvent] }

export class Supervisor extends EventEmitter<SupervisorEvents> implements RunningChild {
  readonly id: string
  readonly exit: Promise<ExitReason>
  private readonly strategy: Strategy
  private readonly window: RestartWindow
  private readonly flags: SupervisorFlags
  private readonly clock: Clock
  private readonly random: () => number
  private readonly parallelShutdown: boolean
  private readonly children: ChildRecord[] = []
  private queue: Promise<void> = Promise.resolve()
  private state: SupervisorTree['state'] = 'starting'
  private resolveExit!: (r: ExitReason) => void
  private opening: Promise<void> | null = null
  private stopping: Promise<void> | null = null

  constructor (id: string, flags: SupervisorFlags, specs: ChildSpec[], opts: SupervisorOptions = {}) {
    super()
    this.id = id
    this.flags = flags
    this.strategy = flags.strategy ?? 'one_for_one'
    this.window = new RestartWindow(flags.intensity ?? 1, flags.periodMs ?? 5000)
    this.clock = opts.clock ?? systemClock
    this.random = opts.random ?? Math.random
    this.parallelShutdown = opts.parallelShutdown ?? false
    this.exit = new Promise(resolve => { this.resolveExit = resolve })
    const ids = new Set<string>()
    for (const s of specs) {
      if (ids.has(s.id)) throw new Error(`supervisor ${id}: duplicate child id ${s.id}`)
      ids.add(s.id)
      this.children.push(this.record(s))
    }
  }

  /** Starts the children in order. If one fails, the started ones are stopped and this rejects. */
  ready (): Promise<void> {
    if (this.opening === null) this.opening = this.serial(() => this.init())
    return this.opening
  }

  /** Stops every child (in reverse start order) and then the supervisor: exit 'shutdown'. */
  close (): Promise<void> {
    if (this.stopping === null) {
      this.stopping = (async () => {
        if (this.opening !== null) await this.opening.catch(() => undefined)
        await this.serial(() => this.terminate({ kind: 'shutdown' }))
      })()
    }
    return this.stopping
  }

  shutdown (): void { void this.close() }

  /** Brutal kill: every child is killed at once, whatever its shutdown spec. */
  kill (): void {
    if (this.state === 'stopped') return
    this.state = 'stopping'
    for (const rec of this.children) {
      if (rec.timer !== undefined) this.clock.clearTimeout(rec.timer)
      rec.child?.kill()
    }
    void Promise.all(this.children.map(r => r.child?.exit)).then(() => this.finish({ kind: 'killed' }))
  }

  // ------------------------------------------------------------------ API

  /** Adds a child at the end and starts it (OTP start_child). */
  startChild (spec: ChildSpec): Promise<void> {
    return this.serial(async () => {
      this.assertRunning()
      if (this.children.some(r => r.spec.id === spec.id)) throw new Error(`supervisor ${this.id}: a child ${spec.id} already exists`)
      const rec = this.record(spec)
      this.children.push(rec)
      try {
        await this.startRecord(rec)
      } catch (err) {
        this.children.splice(this.children.indexOf(rec), 1)
        throw err
      }
    })
  }

  /** Stops a child; its spec stays (unless temporary) so it can be restarted (OTP terminate_child). */
  terminateChild (id: string): Promise<void> {
    return this.serial(async () => {
      const rec = this.find(id)
      await this.stopRecord(rec)
      if (rec.spec.restart === 'temporary') this.remove(rec)
    })
  }

  /** Starts a stopped child again (OTP restart_child). */
  restartChild (id: string): Promise<void> {
    return this.serial(async () => {
      this.assertRunning()
      const rec = this.find(id)
      if (rec.child !== null) throw new Error(`supervisor ${this.id}: child ${id} is running`)
      await this.startRecord(rec)
    })
  }

  /** Removes a stopped child's spec (OTP delete_child). */
  deleteChild (id: string): Promise<void> {
    return this.serial(async () => {
      const rec = this.find(id)
      if (rec.child !== null) throw new Error(`supervisor ${this.id}: child ${id} is running; terminate it first`)
      this.remove(rec)
    })
  }

  /** The running child with this id, if any. */
  child (id: string): RunningChild | undefined {
    return this.children.find(r => r.spec.id === id)?.child ?? undefined
  }

  /** Ids of the children, in start order. */
  childIds (): string[] {
    return this.children.map(r => r.spec.id)
  }

  tree (): SupervisorTree {
    return {
      id: this.id,
      strategy: this.parallelShutdown ? 'simple_one_for_one' : this.strategy,
      state: this.state,
      children: this.children.map(r => {
        const node: SupervisorTree['children'][number] = { id: r.spec.id, type: r.spec.type, state: r.state, restarts: r.restarts }
        if (r.lastExit !== undefined) node.lastExit = describeExit(r.lastExit)
        const sub = r.child?.tree?.()
        if (sub !== undefined) node.tree = sub
        return node
      })
    }
  }

  // ------------------------------------------------------------------ internals

  private record (s: ChildSpec): ChildRecord {
    // OTP: a permanent child is always restarted, so it can never end the supervisor.
    if (s.significant === true && (s.restart ?? 'permanent') === 'permanent') throw new Error(`supervisor ${this.id}: child ${s.id} cannot be both significant and permanent`)
    const type = s.type ?? 'worker'
    return {
      spec: { ...s, type, restart: s.restart ?? 'permanent', shutdown: s.shutdown ?? (type === 'supervisor' ? 'infinity' : 5000) },
      child: null,
      state: 'stopped',
      instance: 0,
      restarts: 0,
      startedAt: 0,
      attempt: 0
    }
  }

  private find (id: string): ChildRecord {
    const rec = this.children.find(r => r.spec.id === id)
    if (rec === undefined) throw new Error(`supervisor ${this.id}: no child ${id}`)
    return rec
  }

  private remove (rec: ChildRecord): void {
    const i = this.children.indexOf(rec)
    if (i >= 0) this.children.splice(i, 1)
  }

  private assertRunning (): void {
    if (this.state !== 'running' && this.state !== 'starting') throw new Error(`supervisor ${this.id} is ${this.state}`)
  }

  /** Runs operations one at a time, in order; a failed one does not stop the queue. */
  private serial<T> (op: () => Promise<T>): Promise<T> {
    const run = this.queue.then(op)
    this.queue = run.then(() => undefined, () => undefined)
    return run
  }

  private async init (): Promise<void> {
    for (const rec of [...this.children]) {
      try {
        await this.startRecord(rec)
      } catch (err) {
        await this.terminate({ kind: 'shutdown', detail: `failed_to_start_child ${rec.spec.id}` })
        throw err
      }
    }
    this.state = 'running'
  }

  /** Starts one child and links it: its exit comes back through the queue. */
  private async startRecord (rec: ChildRecord): Promise<void> {
    rec.state = 'starting'
    let started: RunningChild | 'ignore'
    try {
      started = await rec.spec.start()
    } catch (err) {
      rec.state = 'stopped'
      this.emit('event', { type: 'start-failed', child: rec.spec.id, error: err } satisfies SupervisorEvent)
      throw new ChildStartError(rec.spec.id, err)
    }
    if (started === 'ignore') {
      rec.state = 'ignored'
      if (rec.spec.restart === 'temporary') this.remove(rec)
      return
    }
    const instance = ++rec.instance
    rec.child = started
    rec.state = 'running'
    rec.startedAt = this.clock.now()
    this.emit('event', { type: 'started', child: rec.spec.id, restarts: rec.restarts } satisfies SupervisorEvent)
    void started.exit.then(reason => { void this.serial(() => this.onExit(rec, instance, reason)) })
  }

  /** Stops one child by its shutdown spec; resolves with its exit reason. */
  private async stopRecord (rec: ChildRecord): Promise<ExitReason | undefined> {
    if (rec.timer !== undefined) { this.clock.clearTimeout(rec.timer); delete rec.timer }
    const child = rec.child
    if (child === null) {
      if (rec.state === 'restarting') rec.state = 'stopped'
      return undefined
    }
    rec.state = 'stopping'
    const how = rec.spec.shutdown
    let reason: ExitReason
    if (how === 'brutal_kill') {
      child.kill()
      reason = await child.exit
    } else {
      child.shutdown()
      if (how === 'infinity') {
        reason = await child.exit
      } else {
        let timer: ClockTimer | undefined
        const deadline = new Promise<'deadline'>(resolve => { timer = this.clock.setTimeout(() => resolve('deadline'), how) })
        const first = await Promise.race([child.exit, deadline])
        if (timer !== undefined) this.clock.clearTimeout(timer)
        if (first === 'deadline') child.kill()
        reason = await child.exit
      }
    }
    rec.child = null
    rec.state = 'stopped'
    rec.lastExit = reason
    this.emit('event', { type: 'exited', child: rec.spec.id, reason } satisfies SupervisorEvent)
    return reason
  }

  private async stopAll (recs: ChildRecord[]): Promise<void> {
    if (this.parallelShutdown) {
      await Promise.all(recs.map(r => this.stopRecord(r)))
      return
    }
    for (const rec of [...recs].reverse()) await this.stopRecord(rec)
  }

  /** A child exited by itself (not stopped by us): apply the restart strategy. */
  private async onExit (rec: ChildRecord, instance: number, reason: ExitReason): Promise<void> {
    if (rec.instance !== instance || rec.state !== 'running' || !this.children.includes(rec)) return // stopped on purpose
    rec.child = null
    rec.state = 'stopped'
    rec.lastExit = reason
    this.emit('event', { type: 'exited', child: rec.spec.id, reason } satisfies SupervisorEvent)
    if (this.state !== 'running') return
    if (!shouldRestart(rec.spec.restart, reason)) {
      // simple_one_for_one keeps no spec for a child that is gone (OTP del_child erases it)
      if (rec.spec.restart === 'temporary' || this.parallelShutdown) this.remove(rec)
      if (this.autoShutdownDue(rec)) await this.terminate({ kind: 'shutdown', detail: 'auto_shutdown' })
      return
    }
    await this.restart(rec)
  }

  /** OTP auto_shutdown: a significant child ended by itself and was not restarted. */
  private autoShutdownDue (ended: ChildRecord): boolean {
    const mode = this.flags.autoShutdown ?? 'never'
    if (mode === 'never' || ended.spec.significant !== true) return false
    if (mode === 'any_significant') return true
    return this.children.every(r => r.spec.significant !== true || r.child === null)
  }

  /** Counts a restart against the intensity and restarts per strategy (after backoff, if set). */
  private async restart (failed: ChildRecord): Promise<void> {
    if (!this.window.add(this.clock.now())) {
      this.emit('event', { type: 'intensity-exceeded', restarts: this.window.recent, periodMs: this.window.periodMs } satisfies SupervisorEvent)
      await this.terminate({ kind: 'shutdown', detail: 'reached_max_restart_intensity' })
      return
    }
    // The children to restart with it, in start order.
    const i = this.children.indexOf(failed)
    let group: ChildRecord[]
    if (this.strategy === 'one_for_all') group = [...this.children]
    else if (this.strategy === 'rest_for_one') group = this.children.slice(i)
    else group = [failed]
    const others = group.filter(r => r !== failed)
    await this.stopAll(others)
    for (const r of others) if (r.spec.restart === 'temporary') this.remove(r)
    group = group.filter(r => this.children.includes(r))

    const b = this.flags.backoff
    if (b !== undefined) {
      const ranLong = this.clock.now() - failed.startedAt >= (b.resetAfterMs ?? b.minMs)
      if (ranLong) failed.attempt = 0
      const delay = restartDelay(b, failed.attempt, this.random())
      failed.attempt++
      for (const r of group) r.state = 'restarting'
      this.emit('event', { type: 'restarting', child: failed.spec.id, delayMs: delay } satisfies SupervisorEvent)
      failed.timer = this.clock.setTimeout(() => {
        delete failed.timer
        void this.serial(() => this.startGroup(failed, group))
      }, delay)
      return
    }
    this.emit('event', { type: 'restarting', child: failed.spec.id, delayMs: 0 } satisfies SupervisorEvent)
    await this.startGroup(failed, group)
  }

  /** (Re)starts a group in order; a start that fails counts as another restart (OTP try_again_restart). */
  private async startGroup (failed: ChildRecord, group: ChildRecord[]): Promise<void> {
    if (this.state !== 'running') return
    const started: ChildRecord[] = []
    for (const r of group) {
      if (!this.children.includes(r) || r.child !== null) continue
      try {
        r.restarts++
        await this.startRecord(r)
        started.push(r)
      } catch (err) {
        r.lastExit = { kind: 'error', error: err }
        await this.stopAll(started)
        for (const s of group) if (s.child === null && this.children.includes(s)) s.state = 'stopped'
        await this.restart(failed)
        return
      }
    }
  }

  /** Stops every child and ends the supervisor with `reason`. */
  private async terminate (reason: ExitReason): Promise<void> {
    if (this.state === 'stopped') return
    this.state = 'stopping'
    await this.stopAll(this.children)
    for (const r of [...this.children]) if (r.spec.restart === 'temporary') this.remove(r)
    this.finish(reason)
  }

  private finish (reason: ExitReason): void {
    if (this.state === 'stopped') return
    this.state = 'stopped'
    this.emit('event', { type: 'stopped', reason } satisfies SupervisorEvent)
    this.resolveExit(reason)
  }
}

/** A child spec for a nested supervisor (type supervisor, shutdown infinity). */
export function supervisorSpec (id: string, flags: SupervisorFlags, specs: ChildSpec[], opts: SupervisorOptions & { restart?: ChildSpec['restart'] } = {}): ChildSpec {
  return {
    id,
    type: 'supervisor',
    shutdown: 'infinity',
    restart: opts.restart ?? 'permanent',
    start: async () => {
      const sup = new Supervisor(id, flags, specs, opts)
      await sup.ready()
      return sup
    }
  }
}
