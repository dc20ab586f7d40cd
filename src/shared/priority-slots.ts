/** Gives back a slot; a second call does nothing (a slot is given back on whichever event comes first). */
export type Release = () => void

interface Waiter { priority: number; seq: number; grant: (release: Release) => void }

/**
 * At most `limit` holders at once; waiters are served highest priority first, in arrival
 * order among equals. A binary heap: thousands of waiters (a first sync learns every feed at
 * once) cost log n each, not n.
 */
export class PrioritySlots {
  private held = 0
  private seq = 0
  private readonly heap: Waiter[] = []

  constructor (readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`a slot limit must be a positive integer, not ${limit}`)
  }

  /** slots held now */
  get active (): number { return this.held }
  /** callers waiting for a slot */
  get waiting (): number { return this.heap.length }

  /** Resolves with the release of a slot once one is free and no waiter ranks before this one. */
  take (priority = 0): Promise<Release> {
    return new Promise(resolve => {
      this.push({ priority, seq: this.seq++, grant: resolve })
      this.serve()
    })
  }

  private serve (): void {
    while (this.held < this.limit && this.heap.length > 0) {
      const w = this.pop()
      this.held++
      let given = false
      w.grant(() => {
        if (given) return
        given = true
        this.held--
        this.serve()
      })
    }
  }

  /** whether a ranks before b */
  private before (a: Waiter, b: Waiter): boolean {
    return a.priority > b.priority || (a.priority === b.priority && a.seq < b.seq)
  }

  private push (w: Waiter): void {
    const h = this.heap
    h.push(w)
    let i = h.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (!this.before(h[i] as Waiter, h[p] as Waiter)) break
      ;[h[i], h[p]] = [h[p] as Waiter, h[i] as Waiter]
      i = p
    }
  }

  private pop (): Waiter {
    const h = this.heap
    const top = h[0] as Waiter
    const last = h.pop() as Waiter
    if (h.length > 0) {
      h[0] = last
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        if (l < h.length && this.before(h[l] as Waiter, h[m] as Waiter)) m = l
        if (r < h.length && this.before(h[r] as Waiter, h[m] as Waiter)) m = r
        if (m === i) break
        ;[h[i], h[m]] = [h[m] as Waiter, h[i] as Waiter]
        i = m
      }
    }
    return top
  }
}
