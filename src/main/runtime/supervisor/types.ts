/** Why a child (or supervisor) ended, after OTP's exit reasons. */
export type ExitReason =
  | { kind: 'normal' }
  | { kind: 'shutdown'; detail?: string }
  | { kind: 'error'; error: unknown }
  | { kind: 'killed' }

/** OTP: normal and shutdown are normal exits; anything else is abnormal. */
export function isAbnormal (r: ExitReason): boolean {
  return r.kind === 'error' || r.kind === 'killed'
}

export function describeExit (r: ExitReason): string {
  switch (r.kind) {
    case 'normal': return 'normal'
    case 'shutdown': return r.detail === undefined ? 'shutdown' : `shutdown (${r.detail})`
    case 'killed': return 'killed'
    case 'error': return `error: ${r.error instanceof Error ? r.error.message : String(r.error)}`
  }
}

/**
 * A running child, "linked" to its supervisor by its exit promise, which must never
 * reject: every way a child can end is an ExitReason.
 */
export interface RunningChild {
  readonly exit: Promise<ExitReason>
  /** Asks the child to stop (OTP's exit(Child, shutdown)); it should exit soon with 'shutdown'. */
  shutdown (): void
  /** Ends the child now (exit(Child, kill)); its exit resolves with 'killed'. */
  kill (): void
  /** For children that are supervisors: their live tree. */
  tree? (): SupervisorTree
}

export type Restart = 'permanent' | 'transient' | 'temporary'
export type Shutdown = 'brutal_kill' | 'infinity' | number

export interface ChildSpec {
  id: string
  /** Starts the child. Throwing (or rejecting) is a failed start; 'ignore' keeps the spec without a child. */
  start: () => Promise<RunningChild | 'ignore'>
  restart?: Restart       // default permanent
  shutdown?: Shutdown     // default 5000 ms for a worker, infinity for a supervisor
  type?: 'worker' | 'supervisor'
  /** OTP: with autoShutdown, this child ending by itself (not restarted) ends the supervisor */
  significant?: boolean
}

export type Strategy = 'one_for_one' | 'one_for_all' | 'rest_for_one'

/** Pekko-style exponential backoff between restarts (off unless given). */
export interface Backoff {
  minMs: number
  maxMs: number
  /** jitter in [0, 1]: the delay is multiplied by 1 + random·randomFactor */
  randomFactor: number
  /** a child that ran this long without failing starts over at minMs (default minMs) */
  resetAfterMs?: number
}

export interface SupervisorFlags {
  strategy?: Strategy     // default one_for_one
  intensity?: number      // default 1 restart ...
  periodMs?: number       // ... in 5000 ms
  backoff?: Backoff
  /** OTP auto_shutdown: end the supervisor when any / all significant children have ended by themselves */
  autoShutdown?: 'never' | 'any_significant' | 'all_significant'
}

export type ChildState = 'starting' | 'running' | 'restarting' | 'stopping' | 'stopped' | 'ignored'

/** A live view of a supervisor and its children, for logs and the UI. */
export interface SupervisorTree {
  id: string
  strategy: Strategy | 'simple_one_for_one'
  state: 'starting' | 'running' | 'stopping' | 'stopped'
  children: Array<{
    id: string
    type: 'worker' | 'supervisor'
    state: ChildState
    restarts: number
    lastExit?: string
    tree?: SupervisorTree
  }>
}

export type SupervisorEvent =
  | { type: 'started'; child: string; restarts: number }
  | { type: 'exited'; child: string; reason: ExitReason }
  | { type: 'restarting'; child: string; delayMs: number }
  | { type: 'start-failed'; child: string; error: unknown }
  | { type: 'intensity-exceeded'; restarts: number; periodMs: number }
  | { type: 'stopped'; reason: ExitReason }
