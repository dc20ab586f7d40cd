import type { ExitReason, RunningChild } from './types'

/** Why a task's signal was aborted: the task can tell a stop from a kill. */
export type AbortCause = 'shutdown' | 'killed'

/**
 * A child that is an async function in this thread. shutdown() aborts its signal and
 * waits for it to return; kill() aborts and stops waiting at once (JavaScript cannot
 * pre-empt a running function: a task that ignores its signal keeps running in the
 * background, so put work that may hang in a worker or a process child).
 */
export function taskChild (run: (signal: AbortSignal) => Promise<void>): RunningChild {
  const controller = new AbortController()
  let settle!: (r: ExitReason) => void
  let done = false
  const exit = new Promise<ExitReason>(resolve => { settle = resolve })
  const finish = (r: ExitReason): void => { if (!done) { done = true; settle(r) } }
  let running: Promise<void>
  try {
    running = run(controller.signal)
  } catch (error) {
    running = Promise.reject(error) // a synchronous throw is a crash like any other
  }
  running.then(
    () => finish(controller.signal.aborted ? { kind: 'shutdown' } : { kind: 'normal' }),
    (error: unknown) => finish(controller.signal.aborted && isAbort(error) ? { kind: 'shutdown' } : { kind: 'error', error })
  )
  return {
    exit,
    shutdown () { if (!controller.signal.aborted) controller.abort('shutdown' satisfies AbortCause) },
    kill () {
      if (!controller.signal.aborted) controller.abort('killed' satisfies AbortCause)
      finish({ kind: 'killed' })
    }
  }
}

function isAbort (error: unknown): boolean {
  return error === 'shutdown' || error === 'killed' || (error instanceof Error && error.name === 'AbortError')
}
