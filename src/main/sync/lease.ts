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
   * When the lease ends (monotonic): `durationMs` after the freshest renewal. A device that
   * could revive this one's agents does so only once no peer it hears still hears this one
   * (SyncNode.isDown), so one peer that heard it lately holds every revival back.
   * +Infinity while no peer ever spoke leases (older versions): the device acts as before leases.
   */
  expiresAt (): number {
    if (this.renewedBy.size === 0) return Number.POSITIVE_INFINITY
    return Math.max(...this.renewedBy.values()) + this.durationMs
  }

  /**
   * After a stall (the lease ended at `from`): whether every one of `peers` (those heard now)
   * that speaks leases has echoed a heartbeat sent since, so everything it sent before that
   * echo — presence, feed announcements, word of a revival — has been read here.
   */
  answeredSince (from: number, peers: Iterable<string>): boolean {
    let any = false
    for (const p of peers) {
      any = true
      const at = this.renewedBy.get(p)
      if (at !== undefined && at < from) return false
    }
    return any
  }

  /**
   * Whether an agent may act now. `alone`: nobody could revive its agents (the network is off
   * by choice, or there is no other device): it holds for ever.
   */
  holds (now: number, alone: boolean): boolean {
    return alone || now < this.expiresAt()
  }
}
