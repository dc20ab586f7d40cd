/**
 * How many feeds a peer may make this device record before any block of them verifies
 * (docs/ARCHITECTURE.md 5.4, "What a peer may announce"). A feed announced by a peer is only
 * the peer's word until its signed header arrives; a compromised device could otherwise name
 * feeds without end, and this device would keep a record of each. Pure bookkeeping: which
 * feeds each peer's word added here that are still unverified (pending), per peer and in
 * total; which peers had announcements dropped over the bound and are owed a new request for
 * their list once they are well under it again.
 *
 * Only pending feeds count: a feed leaves the count as its first block verifies, whoever
 * served it, so a new device takes a peer's whole history, however large, in rounds, asking
 * for the rest as the earlier feeds arrive.
 */

/**
 * Feeds one peer may have pending here at once: 64 times the feeds downloaded at once
 * (PEER_FEEDS_AT_ONCE), so downloads never wait on a new request, yet a peer's made-up list
 * costs at most this many records.
 */
export const MAX_PENDING_PER_PEER = 4096
/** Feeds pending here at once from every peer together (four peers at their bound). */
export const MAX_PENDING_TOTAL = 4 * MAX_PENDING_PER_PEER

export type Admission = 'admitted' | 'dropped'

export class FeedAdmission {
  /** per peer: the feeds its word added here, not verified yet */
  private readonly pending = new Map<string, Set<string>>()
  /** feed → the peer whose word added it */
  private readonly addedBy = new Map<string, string>()
  /** peers that had announcements dropped and are not yet asked again */
  private readonly owed = new Set<string>()
  private total = 0

  constructor (readonly perPeer = MAX_PENDING_PER_PEER, readonly inTotal = MAX_PENDING_TOTAL) {
    if (!Number.isInteger(perPeer) || perPeer < 1 || !Number.isInteger(inTotal) || inTotal < perPeer) throw new Error(`bad admission bounds: ${perPeer} per peer, ${inTotal} in total`)
  }

  /** Feeds pending here on `device`'s word (or everyone's). */
  pendingOf (device?: string): number {
    return device === undefined ? this.total : this.pending.get(device)?.size ?? 0
  }

  /**
   * `device` announced a feed this device holds no record of: admitted (counted as pending on
   * its word) if both bounds allow, else dropped and the peer owed a request. Admitting one
   * already pending on its word again counts nothing.
   */
  admit (device: string, key: string): Admission {
    const by = this.addedBy.get(key)
    if (by !== undefined) return 'admitted'
    const mine = this.pending.get(device)
    if ((mine?.size ?? 0) >= this.perPeer || this.total >= this.inTotal) {
      this.owed.add(device)
      return 'dropped'
    }
    if (mine === undefined) this.pending.set(device, new Set([key]))
    else mine.add(key)
    this.addedBy.set(key, device)
    this.total++
    return 'admitted'
  }

  /**
   * A block of `key` verified here (or it is no longer held): it is pending no more. Returns
   * the owed peers that are now at most half their bound, with the total at most half its own
   * (so a request brings a batch, not one feed): ask each for its list again.
   */
  verified (key: string): string[] {
    const by = this.addedBy.get(key)
    if (by !== undefined) {
      this.addedBy.delete(key)
      const mine = this.pending.get(by)
      mine?.delete(key)
      if (mine?.size === 0) this.pending.delete(by)
      this.total--
    }
    return this.due()
  }

  /** The owed peers that may be asked again now; they are owed no longer (a new drop owes them again). */
  due (): string[] {
    if (this.owed.size === 0 || this.total * 2 > this.inTotal) return []
    const out: string[] = []
    for (const device of this.owed) if (this.pendingOf(device) * 2 <= this.perPeer) out.push(device)
    for (const device of out) this.owed.delete(device)
    return out
  }

  /** A peer is no longer paired: its word counts for nothing here any more (what it added stays pending, uncounted). */
  forget (device: string): void {
    const mine = this.pending.get(device)
    for (const key of mine ?? []) this.addedBy.delete(key)
    this.total -= mine?.size ?? 0
    this.pending.delete(device)
    this.owed.delete(device)
  }
}
