// The newest hits of a query across the parts of the index (pure): the live postings and each
// segment offer their matches here, and only the newest `limit` below the cursor are kept.
// A document is named by where the log holds its record (`at`): unique, and the same in every part.

export interface DocHit { ts: number; at: number }

/** Whether a is newer than b: by entry time, then by place in the log. */
export function newer (a: DocHit, b: DocHit): boolean {
  return a.ts > b.ts || (a.ts === b.ts && a.at > b.at)
}

/** The newest `limit` hits offered, older than `after` (the last hit of the previous page). */
export class TopHits {
  /** kept sorted oldest first, so the oldest is the one pushed out */
  private readonly top: DocHit[] = []
  constructor (readonly limit: number, private readonly after?: DocHit) {}

  /** Whether a hit of this time and place would be kept (check it before anything costlier). */
  wants (ts: number, at: number): boolean {
    const h = { ts, at }
    if (this.after !== undefined && !newer(this.after, h)) return false
    return this.top.length < this.limit || newer(h, this.top[0] as DocHit)
  }

  /** The oldest time a hit may have to be kept: parts whose newest document is older are skipped. */
  get floor (): number { return this.top.length < this.limit ? -Infinity : (this.top[0] as DocHit).ts }

  offer (ts: number, at: number): void {
    if (!this.wants(ts, at)) return
    const h = { ts, at }
    let i = this.top.length
    while (i > 0 && newer(this.top[i - 1] as DocHit, h)) i--
    this.top.splice(i, 0, h)
    if (this.top.length > this.limit) this.top.shift()
  }

  /** Newest first. */
  hits (): DocHit[] { return [...this.top].reverse() }
}
