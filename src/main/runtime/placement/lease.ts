/**
 * The lease an auto-revival agent acts under (issue 13: a slow device is not a dead one).
 * Pure: times come in as arguments, on one monotonic clock.
 *
 * Every heartbeat this device sends carries its time `t`; a peer's heartbeat echoes the last
 * `t` it received from this device. An echo of `t` from a peer that hears this device proves
 * that peer heard it at or after the moment `t` was sent, so that peer cannot suspect it — and
 * nobody can revive its agents — before `sentAt(t) + window`. The lease ends `margin` earlier,
 * for clock-rate differences and the time a stopped agent needs to notice. Stale echoes (read
 * after a pause, sent before it) renew nothing: their send time is already more than a lease
 * ago. So a device that stalled past its lease acts again only once a heartbeat it sent after
 * waking has come back.
 */
export const LEASE_MARGIN_MS = 1000

/** The margin for a detection window: LEASE_MARGIN_MS, or a quarter of a shorter window (tests run with short ones). */
export function leaseMargin (windowMs: number): number { return Math.min(LEASE_MARGIN_MS, windowMs / 4) }

/** How many of its own heartbeats a lease remembers (a few seconds of them): echoes of older ones renew nothing anyway. */
const REMEMBERED = 32

export class Lease {
  /** heartbeats sent: `t` as sent → when (monotonic), oldest first */
  private readonly sent = new Map<number, number>()
  /** per peer: the send time of the latest heartbeat it echoed while hearing this device */
  private readonly renewedBy = new Map<string, number>()

  constructor (readonly windowMs: number, readonly marginMs = leaseMargin(windowMs)) {
    if (!(marginMs >= 0 && marginMs < windowMs)) throw new Error(`the lease margin (${marginMs} ms) must be at least 0 and below the detection window (${windowMs} ms)`)
  }

  /** How long a lease lasts from the send of the heartbeat that renewed it. */
  get durationMs (): number { return this.windowMs - this.marginMs }

  /** A heartbeat carrying `t` left this device at `at`. */
  sentHeartbeat (t: number, at: number): void {
    if (!this.sent.has(t)) this.sent.set(t, at)
    while (this.sent.size > REMEMBERED) this.sent.delete(this.sent.keys().next().value as number)
  }

  /** `peer`'s heartbeat echoed `t`; `hearsMe`: it says it hears this device. Returns true if its part of the lease grew. */
  echoed (peer: string, t: number, hearsMe: boolean): boolean {
    const at = this.sent.get(t)
    if (!this.renewedBy.has(peer)) this.renewedBy.set(peer, Number.NEGATIVE_INFINITY) // it speaks leases: from now on it must vouch
    if (!hearsMe || at === undefined || at <= (this.renewedBy.get(peer) as number)) return false
    this.renewedBy.set(peer, at)
    return true
  }

  /**
   * When the lease ends (monotonic). `peers`: the devices that could revive this one's agents
   * (heard now, and those they hear). Every one of them that speaks leases must have heard this
   * device lately, since any one may be the reviver: `durationMs` after the oldest of their
   * renewals. After a stall each must answer a heartbeat sent since, so what the reviver sent
   * before (presence, its revival) is read first. When none of them does (on waking, every peer
   * is suspected; cut off, none is heard) the freshest renewal of any peer counts: a stale one
   * holds nothing. +Infinity while no peer ever spoke leases (older versions): as before leases.
   */
  expiresAt (peers: Iterable<string>): number {
    let oldest = Number.POSITIVE_INFINITY
    for (const p of peers) {
      const at = this.renewedBy.get(p)
      if (at !== undefined && at < oldest) oldest = at
    }
    if (oldest === Number.POSITIVE_INFINITY && this.renewedBy.size > 0) oldest = Math.max(...this.renewedBy.values())
    return oldest + this.durationMs
  }

  /**
   * Whether an agent may act now. `alone`: nobody could revive its agents (the network is off
   * by choice, or there is no other device): it holds for ever.
   */
  holds (now: number, alone: boolean, peers: Iterable<string>): boolean {
    return alone || now < this.expiresAt(peers)
  }
}
