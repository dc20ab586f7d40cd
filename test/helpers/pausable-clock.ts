import type { Clock, ClockTimer } from '../../src/shared/clock'

/**
 * The real clock of one node, which a test can pause as SIGSTOP pauses a process: while
 * paused none of the node's timers fire; time goes on (now() is the real time), so on thaw
 * every timer that fell due meanwhile fires at once, in due order, before anything else the
 * thaw lets through (the node's buffered network input, its tools' and model's answers).
 */
export class PausableClock implements Clock {
  private isPaused = false
  /** timers that fell due while paused, by id: when they were due, and what they do */
  private readonly overdue = new Map<number, { due: number; fn: () => void }>()
  private seq = 0
  /** what waits for the thaw (after the overdue timers) */
  private readonly waiting: Array<() => void> = []
  private readonly live = new Map<number, NodeJS.Timeout>()

  now (): number { return Date.now() }

  setTimeout (fn: () => void, ms: number): ClockTimer {
    const id = ++this.seq
    const due = Date.now() + Math.max(0, ms)
    const t = setTimeout(() => {
      this.live.delete(id)
      if (this.isPaused) this.overdue.set(id, { due, fn })
      else fn()
    }, ms)
    this.live.set(id, t)
    return { id }
  }

  clearTimeout (timer: ClockTimer): void {
    const id = (timer as { id: number }).id
    const t = this.live.get(id)
    if (t !== undefined) clearTimeout(t)
    this.live.delete(id)
    // overdue, and cleared while paused or by an overdue timer that fired before it at the thaw
    this.overdue.delete(id)
  }

  get paused (): boolean { return this.isPaused }

  pause (): void { this.isPaused = true }

  /**
   * Ends the pause: the overdue timers fire now, in due order (a timer cleared by one that
   * fired before it does not), then whatever waited for the thaw continues.
   */
  thaw (): void {
    if (!this.isPaused) return
    this.isPaused = false
    const order = [...this.overdue].sort(([ia, a], [ib, b]) => a.due - b.due || ia - ib).map(([id]) => id)
    for (const id of order) {
      const t = this.overdue.get(id)
      if (t === undefined) continue
      this.overdue.delete(id)
      t.fn()
    }
    for (const resume of this.waiting.splice(0)) resume()
  }

  /** Resolves at once while running, else at the thaw (after the overdue timers): what the node sees of the outside world. */
  running (): Promise<void> {
    if (!this.isPaused) return Promise.resolve()
    return new Promise(resolve => { this.waiting.push(resolve) })
  }
}
