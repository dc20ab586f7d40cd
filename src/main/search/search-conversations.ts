// What the full-text index keeps per conversation (pure; the only part of its memory that grows
// with the history, ~100 B a conversation): its number in the segments, the joined entries
// counted, where in the log it was last forgotten (documents before are dead: a conversation
// indexed again needs no segment rewritten), and the bytes of its live records (for compaction).

/** A copy of the table as it was (the segment manifest writes it). */
export interface ConversationsState {
  ids: string[]
  seen: number[]
  dropAt: number[]
  liveBytes: number[]
  deadBytes: number
}

function grownF64 (a: Float64Array<ArrayBuffer>, n: number): Float64Array<ArrayBuffer> { const b = new Float64Array(Math.max(64, n * 2)); b.set(a); return b }

export class SearchConversations {
  private readonly ids: string[] = []
  private readonly numbers = new Map<string, number>()
  private seenCounts = new Float64Array(64)
  /** the log offset of the conversation's last "forget" record; -1: never */
  private dropAt = new Float64Array(64).fill(-1)
  private liveBytes = new Float64Array(64)
  /** bytes of the log a compaction would leave out */
  deadBytes = 0

  get size (): number { return this.ids.length }

  /** The conversation's number, given on first sight. */
  number (id: string): number {
    let n = this.numbers.get(id)
    if (n === undefined) {
      n = this.ids.length
      this.ids.push(id)
      this.numbers.set(id, n)
      if (n >= this.seenCounts.length) {
        this.seenCounts = grownF64(this.seenCounts, n)
        const d = grownF64(this.dropAt, n); d.fill(-1, this.dropAt.length); this.dropAt = d
        this.liveBytes = grownF64(this.liveBytes, n)
      }
    }
    return n
  }

  id (n: number): string { return this.ids[n] as string }

  /** Joined entries of a conversation counted so far (what the index compares to the DAG). */
  seen (id: string): number {
    const n = this.numbers.get(id)
    return n === undefined ? 0 : this.seenCounts[n] as number
  }

  /** A record of `bytes` at `at` of the log: `entries` joined entries of the conversation counted. */
  counted (id: string, entries: number, bytes: number): number {
    const c = this.number(id)
    this.seenCounts[c] = (this.seenCounts[c] as number) + entries
    this.liveBytes[c] = (this.liveBytes[c] as number) + bytes
    return c
  }

  /** The conversation is forgotten by a record of `bytes` at `at`: what it had in the log is dead. */
  drop (id: string, at: number, bytes: number): void {
    const c = this.number(id)
    this.deadBytes += (this.liveBytes[c] as number) + bytes
    this.liveBytes[c] = 0
    this.seenCounts[c] = 0
    this.dropAt[c] = at
  }

  /** Its records were given up: `seen` is set to a count no DAG has, so it is indexed again (a forget resets it). */
  markStale (id: string, seen: number): void {
    this.seenCounts[this.number(id)] = seen
  }

  /** Whether a document of conversation number c whose record is at `at` was forgotten since. */
  isDead (c: number, at: number): boolean { return at < (this.dropAt[c] as number) }

  /** Whether a record of the conversation at `at` is still needed (a compaction keeps it). */
  isLive (id: string, at: number): boolean {
    const n = this.numbers.get(id)
    return n === undefined || at > (this.dropAt[n] as number)
  }

  state (): ConversationsState {
    const n = this.ids.length
    return { ids: [...this.ids], seen: [...this.seenCounts.subarray(0, n)], dropAt: [...this.dropAt.subarray(0, n)], liveBytes: [...this.liveBytes.subarray(0, n)], deadBytes: this.deadBytes }
  }

  static from (s: ConversationsState): SearchConversations {
    if (s.seen.length !== s.ids.length || s.dropAt.length !== s.ids.length || s.liveBytes.length !== s.ids.length) throw new Error('the conversation table is inconsistent')
    const t = new SearchConversations()
    for (const [i, id] of s.ids.entries()) {
      const c = t.number(id)
      t.seenCounts[c] = s.seen[i] as number
      t.dropAt[c] = s.dropAt[i] as number
      t.liveBytes[c] = s.liveBytes[i] as number
    }
    t.deadBytes = s.deadBytes
    return t
  }

  /** Estimated bytes held (the ids and their numbers; about 100 B a conversation). */
  get bytes (): number { return this.ids.length * (24 + 8 * 3 + 2 * 64 / 2 + 40) + this.seenCounts.length * 24 }
}
