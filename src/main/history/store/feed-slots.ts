/**
 * At most `limit` feeds at once hold a slot; the others wait in the order they were wanted.
 * Pure accounting: what a slot is for (opening and downloading a peer's feed) is the caller's
 * `start`, and the caller releases the slot on every way that work ends.
 */
export class FeedSlots {
  private readonly held = new Set<string>()
  /** waiting keys, each with the number of its want */
  private readonly queue = new Map<string, number>()
  /** the wants in order, from `head`; one whose key left `queue` (or was wanted again since) is skipped when reached */
  private order: Array<[string, number]> = []
  private head = 0
  private wants = 0
  private serving = false

  constructor (readonly limit: number, private readonly start: (key: string) => void) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`a slot limit must be a positive integer, not ${limit}`)
  }

  /** slots held now */
  get active (): number { return this.held.size }
  /** keys waiting for a slot */
  get waiting (): number { return this.queue.size }
  holds (key: string): boolean { return this.held.has(key) }
  queued (key: string): boolean { return this.queue.has(key) }

  /** Asks a slot for a key: started at once if one is free, else queued; nothing if it holds one or waits already. */
  want (key: string): void {
    if (this.held.has(key) || this.queue.has(key)) return
    const n = this.wants++
    this.queue.set(key, n)
    this.order.push([key, n])
    this.serve()
  }

  /** Gives back a key's slot (the next waiting key starts), or takes it out of the queue; nothing if neither. */
  release (key: string): void {
    if (this.queue.delete(key)) return
    if (this.held.delete(key)) this.serve()
  }

  /** Releases every slot and empties the queue (the store closes): nothing starts after it. */
  clear (): void {
    this.queue.clear()
    this.order = []
    this.head = 0
    this.held.clear()
  }

  private serve (): void {
    // a start that releases at once (it fails, or finds nothing to do) serves the next from this
    // loop, not from a call inside the start: thousands queued would otherwise nest as deep
    if (this.serving) return
    this.serving = true
    try {
      while (this.held.size < this.limit && this.queue.size > 0) {
        // a Set's first value after many deletions is found past their holes: an array and a head instead
        const [key, n] = this.order[this.head++] as [string, number]
        if (this.queue.get(key) !== n) continue // taken out while it waited (or wanted again since: that want is further on)
        this.queue.delete(key)
        this.held.add(key)
        this.start(key)
      }
      if (this.head > 1024 && this.head * 2 > this.order.length) { this.order = this.order.slice(this.head); this.head = 0 }
    } finally {
      this.serving = false
    }
  }
}
