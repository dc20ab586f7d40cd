// A RunningChild that a test drives by hand, and a lab that makes child specs over it and
// records every start and stop in one shared log (for model-based supervisor tests).
import type { Clock } from '../../src/shared/clock'
import type { ChildSpec, ExitReason, Restart, RunningChild, Shutdown } from '../../src/main/runtime/supervisor/types'

/** How a child instance ended, as its exit reason's kind. */
export type StopHow = 'error' | 'normal' | 'shutdown' | 'killed'

export type LogEvent =
  | { ev: 'start'; id: string; instance: number; at: number }
  | { ev: 'stop'; id: string; instance: number; how: StopHow; at: number }

/** One running instance of a child; every method is a no-op once it has ended. */
export class ControlledChild implements RunningChild {
  readonly exit: Promise<ExitReason>
  /** Ignores shutdown(): it is only gone when killed (at the grace deadline). */
  slow = false
  /** shutdown() was called while slow, and ignored. */
  shutdownIgnored = false
  private resolve!: (r: ExitReason) => void
  private ended: ExitReason | undefined

  constructor (readonly id: string, readonly instance: number, private readonly onEnd: (c: ControlledChild, r: ExitReason) => void) {
    this.exit = new Promise(resolve => { this.resolve = resolve })
  }

  get alive (): boolean { return this.ended === undefined }
  get reason (): ExitReason | undefined { return this.ended }

  crash (error: unknown = new Error(`${this.id} crashed`)): void { this.end({ kind: 'error', error }) }
  exitNormally (): void { this.end({ kind: 'normal' }) }
  exitShutdown (): void { this.end({ kind: 'shutdown' }) }

  shutdown (): void {
    if (!this.alive) return
    if (this.slow) { this.shutdownIgnored = true; return }
    this.end({ kind: 'shutdown' })
  }

  kill (): void { this.end({ kind: 'killed' }) }

  private end (r: ExitReason): void {
    if (!this.alive) return
    this.ended = r
    this.onEnd(this, r)
    this.resolve(r)
  }
}

export interface ControlledSpecOptions { restart?: Restart; shutdown?: Shutdown }

/**
 * Makes child specs whose instances are ControlledChild, keeps the live instance of each
 * id, counts starts, and logs starts and stops (with clock time) in `log`.
 */
export class ChildLab {
  readonly log: LogEvent[] = []
  /** Problems no supervisor should cause (e.g. starting an id that is still running). */
  readonly violations: string[] = []
  private readonly live = new Map<string, ControlledChild>()
  private readonly startCounts = new Map<string, number>()
  private readonly slowIds = new Set<string>()

  constructor (private readonly clock: Clock) {}

  /** A ChildSpec whose start() creates a new ControlledChild for `id`. */
  spec (id: string, opts: ControlledSpecOptions = {}): ChildSpec {
    const s: ChildSpec = { id, start: this.starter(id) }
    if (opts.restart !== undefined) s.restart = opts.restart
    if (opts.shutdown !== undefined) s.shutdown = opts.shutdown
    return s
  }

  /** A start function for `id` (for DynamicSupervisor templates: `start: id => lab.starter(id)()`). */
  starter (id: string): () => Promise<RunningChild> {
    return async () => this.startOne(id)
  }

  /**
   * Makes `id` slow (or not): its running instance and every later one ignore shutdown()
   * and are only gone when killed.
   */
  setSlow (id: string, slow = true): void {
    if (slow) this.slowIds.add(id)
    else this.slowIds.delete(id)
    const c = this.live.get(id)
    if (c !== undefined) c.slow = slow
  }

  /** The running instance of `id`, if any. */
  current (id: string): ControlledChild | undefined { return this.live.get(id) }
  running (id: string): boolean { return this.live.has(id) }
  runningIds (): string[] { return [...this.live.keys()].sort() }
  starts (id: string): number { return this.startCounts.get(id) ?? 0 }

  private startOne (id: string): ControlledChild {
    if (this.live.has(id)) this.violations.push(`${id} started while an instance is still running`)
    const instance = (this.startCounts.get(id) ?? 0) + 1
    this.startCounts.set(id, instance)
    const child = new ControlledChild(id, instance, (c, r) => {
      if (this.live.get(c.id) === c) this.live.delete(c.id)
      this.log.push({ ev: 'stop', id: c.id, instance: c.instance, how: r.kind, at: this.clock.now() })
    })
    child.slow = this.slowIds.has(id)
    this.live.set(id, child)
    this.log.push({ ev: 'start', id, instance, at: this.clock.now() })
    return child
  }
}
