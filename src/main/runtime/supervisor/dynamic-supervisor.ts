import { Supervisor, type SupervisorOptions } from './supervisor'
import type { ChildSpec, ExitReason, RunningChild, SupervisorFlags, SupervisorTree } from './types'

/** The template every child of a dynamic supervisor is started from. */
export interface ChildTemplate<A> {
  start: (args: A) => Promise<RunningChild | 'ignore'>
  restart?: ChildSpec['restart']   // default permanent, as OTP
  shutdown?: ChildSpec['shutdown']
  type?: ChildSpec['type']
}

/**
 * OTP's simple_one_for_one: children started on demand from one template (one per
 * conversation agent), restarted one_for_one, stopped in parallel on shutdown.
 */
export class DynamicSupervisor<A> implements RunningChild {
  private readonly sup: Supervisor
  private readonly template: ChildTemplate<A>

  constructor (id: string, template: ChildTemplate<A>, flags: Omit<SupervisorFlags, 'strategy'> = {}, opts: SupervisorOptions = {}) {
    this.template = template
    this.sup = new Supervisor(id, { ...flags, strategy: 'one_for_one' }, [], { ...opts, parallelShutdown: true })
  }

  get id (): string { return this.sup.id }
  get exit (): Promise<ExitReason> { return this.sup.exit }
  get events (): Supervisor { return this.sup }

  ready (): Promise<void> { return this.sup.ready() }
  close (): Promise<void> { return this.sup.close() }
  shutdown (): void { this.sup.shutdown() }
  kill (): void { this.sup.kill() }
  tree (): SupervisorTree { return this.sup.tree() }

  /** Starts a child with its own id (e.g. a conversation id) and arguments. */
  startChild (id: string, args: A): Promise<void> {
    const spec: ChildSpec = { id, start: () => this.template.start(args) }
    if (this.template.restart !== undefined) spec.restart = this.template.restart
    if (this.template.shutdown !== undefined) spec.shutdown = this.template.shutdown
    if (this.template.type !== undefined) spec.type = this.template.type
    return this.sup.startChild(spec)
  }

  /** Stops a child and forgets it (dynamic children are not kept once terminated). */
  async terminateChild (id: string): Promise<void> {
    await this.sup.terminateChild(id)
    if (this.sup.childIds().includes(id)) await this.sup.deleteChild(id)
  }

  child (id: string): RunningChild | undefined { return this.sup.child(id) }
  childIds (): string[] { return this.sup.childIds() }
}
