/**
 * How many feeds a peer may make this device record before any block of them verifies
 * (docs/ARCHITECTURE.md 5.4, "What a peer may announce"). A feed announced by a peer is only
 * the peer's word until its signed header arrives; a compromised device could otherwise name
 * feeds without end, and this device would keep a record of each. Pure bookkeeping: which
 * feeds each peer's word added here that are still unverified (pending), per peer and in
 * total; which peers had announcements dropped (or pending feeds evicted) and are owed a new
 * request for their list once they are well under their share again.
 *
 * Only pending feeds count: a feed leaves the count as its first block verifies, whoever
 * served it, so a new device takes a peer's whole history, however large, in rounds, asking
 * for the rest as the earlier feeds arrive.
 *
 * The total is shared fairly: while it is full, a peer below its fair share (the total divided
 * among the peers with feeds pending, itself among them) still has its announcement taken, and
 * the newest pending feed of the peer furthest over its share is evicted for it (forgotten
 * here, its peer owed a new request). So devices a compromised one planted, however many feeds
 * they name, hold at most their shares, and never keep another device's new feeds out.
 */

/**
 * Feeds one peer may have pending here at once: 64 times the feeds downloaded at once
 * (PEER_FEEDS_AT_ONCE), so downloads never wait on a new request, yet a peer's made-up list
 * costs at most this many records.
 */
export const MAX_PENDING_PER_PEER = 4096
/** Feeds pending here at once from every peer together (four peers at their bound). */
export const MAX_PENDING_TOTAL = 4 * MAX_PENDING_PER_PEER

/** A pending feed evicted to take another peer's announcement: `device`'s word had added it. */
export interface Eviction { key: string; device: string }

/** Whether an announcement was taken, and which pending feed it evicted, if any. */
export type Admission = { admitted: false } | { admitted: true; evicted?: Eviction }

/** One peer's pending feeds, in the order they were admitted (its newest is evicted first). */
class PendingFeeds {
  /** key → the number of its admission */
  private readonly at = new Map<string, number>()
  /** the admissions in order; one whose key left `at` (or was admitted again since) is stale */
  private order: Array<[string, number]> = []
  private admissions = 0

  get size (): number { return this.at.size }
  keys (): IterableIterator<string> { return this.at.keys() }

  add (key: string): void {
    const n = this.admissions++
    this.at.set(key, n)
    this.order.push([key, n])
  }

  delete (key: string): void {
    if (!this.at.delete(key)) return
    if (this.order.length > 2 * this.at.size + 64) this.order = this.order.filter(([k, n]) => this.at.get(k) === n)
  }

  /** The most recently admitted key for which `busy` does not hold. */
  newest (busy: (key: string) => boolean): string | undefined {
    for (let i = this.order.length - 1; i >= 0; i--) {
      const [key, n] = this.order[i] as [string, number]
      if (this.at.get(key) !== n) {
        if (i === this.order.length - 1) this.order.pop()
        continue
      }
      if (!busy(key)) return key
    }
    return undefined
  }
}

export class FeedAdmission {
  /** per peer: the feeds its word added here, not verified yet */
  private readonly pending = new Map<string, PendingFeeds>()
  /** feed → the peer whose word added it */
  private readonly addedBy = new Map<string, string>()
  /** peers that had announcements dropped or feeds evicted, and are not yet asked again */
  private readonly owed = new Set<string>()
  private total = 0

  constructor (readonly perPeer = MAX_PENDING_PER_PEER, readonly inTotal = MAX_PENDING_TOTAL) {
    if (!Number.isInteger(perPeer) || perPeer < 1 || !Number.isInteger(inTotal) || inTotal < perPeer) throw new Error(`bad admission bounds: ${perPeer} per peer, ${inTotal} in total`)
  }

  /** Feeds pending here on `device`'s word (or everyone's). */
  pendingOf (device?: string): number {
    return device === undefined ? this.total : this.pending.get(device)?.size ?? 0
  }

  /** Whether a feed is pending here on some peer's word. */
  isPending (key: string): boolean { return this.addedBy.has(key) }

  /** The total divided among the peers with feeds pending here, `device` among them. */
  fairShare (device: string): number {
    return Math.floor(this.inTotal / (this.pending.size + (this.pending.has(device) ? 0 : 1)))
  }

  /**
   * `device` announced a feed this device holds no record of: admitted (counted as pending on
   * its word) while both bounds allow; with the total full, admitted all the same if the peer
   * is below its fair share, evicting the newest pending feed not `busy` (its blocks being
   * checked now) of the peer furthest over its share; else dropped. A peer dropped or evicted
   * from is owed a request. Admitting one already pending on anyone's word counts nothing.
   */
  admit (device: string, key: string, busy: (key: string) => boolean = () => false): Admission {
    if (this.addedBy.has(key)) return { admitted: true }
    const mine = this.pendingOf(device)
    let evicted: Eviction | undefined
    if (mine >= this.perPeer) return this.drop(device)
    if (this.total >= this.inTotal) {
      const fair = this.fairShare(device)
      if (mine >= fair) return this.drop(device)
      evicted = this.evictOver(fair, busy)
      if (evicted === undefined) return this.drop(device)
    }
    let feeds = this.pending.get(device)
    if (feeds === undefined) this.pending.set(device, feeds = new PendingFeeds())
    feeds.add(key)
    this.addedBy.set(key, device)
    this.total++
    return evicted === undefined ? { admitted: true } : { admitted: true, evicted }
  }

  private drop (device: string): Admission {
    this.owed.add(device)
    return { admitted: false }
  }

  /** Evicts the newest evictable feed of the peer furthest over `fair` (the next one over, if all of its are busy). */
  private evictOver (fair: number, busy: (key: string) => boolean): Eviction | undefined {
    const over = [...this.pending].filter(([, feeds]) => feeds.size > fair).sort((a, b) => b[1].size - a[1].size)
    for (const [device, feeds] of over) {
      const key = feeds.newest(busy)
      if (key === undefined) continue
      this.remove(key)
      this.owed.add(device)
      return { key, device }
    }
    return undefined
  }

  /**
   * A block of `key` verified here (or it is no longer held): it is pending no more. Returns
   * the owed peers that may be asked again now (due).
   */
  verified (key: string): string[] {
    this.remove(key)
    return this.due()
  }

  private remove (key: string): void {
    const by = this.addedBy.get(key)
    if (by === undefined) return
    this.addedBy.delete(key)
    const feeds = this.pending.get(by)
    feeds?.delete(key)
    if (feeds?.size === 0) this.pending.delete(by)
    this.total--
  }

  /** `device` is owed a request for its list (a feed it announced was forgotten here). */
  owe (device: string): void { this.owed.add(device) }

  /**
   * What `device` may be sure to have admitted now: its bound while the total is at most half
   * full, else its fair share (within its bound).
   */
  share (device: string): number {
    return this.total * 2 <= this.inTotal ? this.perPeer : Math.min(this.perPeer, this.fairShare(device))
  }

  /**
   * The owed peers that may be asked again now: those with at most half their share pending
   * (so a request brings a batch, not one feed). They are owed no longer (a new drop owes them again).
   */
  due (): string[] {
    if (this.owed.size === 0) return []
    const out: string[] = []
    for (const device of this.owed) if (this.pendingOf(device) * 2 <= this.share(device)) out.push(device)
    for (const device of out) this.owed.delete(device)
    return out
  }

  /** A peer is no longer paired: its word counts for nothing here any more (what it added stays pending, uncounted). */
  forget (device: string): void {
    const feeds = this.pending.get(device)
    for (const key of feeds?.keys() ?? []) this.addedBy.delete(key)
    this.total -= feeds?.size ?? 0
    this.pending.delete(device)
    this.owed.delete(device)
  }
}
