/** Time as the runtime sees it; injected so tests can move time instead of sleeping. */
export interface Clock {
  now (): number
  setTimeout (fn: () => void, ms: number): ClockTimer
  clearTimeout (timer: ClockTimer): void
}

export type ClockTimer = { readonly id: number } | NodeJS.Timeout

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: timer => { clearTimeout(timer as NodeJS.Timeout) }
}

/**
 * A clock that only moves when told. Timers fire in due order during advance(); a timer
 * set by a firing timer fires in the same advance if it is due by then.
 */
export class ManualClock implements Clock {
  private t: number
  private seq = 0
  private readonly timers = new Map<number, { at: number; fn: () => void }>()

  constructor (start = 0) { this.t = start }

  now (): number { return this.t }

  setTimeout (fn: () => void, ms: number): ClockTimer {
    const id = ++this.seq
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn })
    return { id }
  }

  clearTimeout (timer: ClockTimer): void {
    this.timers.delete((timer as { id: number }).id)
  }

  /** Timers waiting to fire. */
  get pending (): number { return this.timers.size }

  /** Moves time forward by ms, firing due timers in order, letting promises settle between. */
  async advance (ms: number): Promise<void> {
    const end = this.t + ms
    for (;;) {
      await settle()
      let next: [number, { at: number; fn: () => void }] | undefined
      for (const entry of this.timers) if (entry[1].at <= end && (next === undefined || entry[1].at < next[1].at || (entry[1].at === next[1].at && entry[0] < next[0]))) next = entry
      if (next === undefined) break
      this.timers.delete(next[0])
      this.t = Math.max(this.t, next[1].at)
      next[1].fn()
    }
    this.t = end
    await settle()
  }
}

/** Lets pending promise callbacks run (several macrotask turns). */
export async function settle (turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>(resolve => setImmediate(resolve))
}
