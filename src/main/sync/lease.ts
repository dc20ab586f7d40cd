/**
 * The lease an auto-revival agent acts under (issue 13: a slow device is not a dead one).
 * Pure: times come in as arguments, each read on two clocks (`Instant`).
 *
 * Every heartbeat this device sends carries its time `t`; a peer's heartbeat echoes the last
 * `t` it received from this device. An echo of `t` from a peer that hears this device proves
 * that peer heard it at or after the moment `t` was sent, so that peer cannot suspect it — and
 * nobody can revive its agents — before `sentAt(t) + window`. The lease ends `margin` earlier,
 * for clock-rate differences and the time a stopped agent needs to notice. Stale echoes (read
 * after a pause, sent before it) renew nothing: their send time is already more than a lease
 * ago. So a device that stalled past its lease acts again only once a heartbeat it sent after
 * waking has come back.
 *
 * Elapsed time is read on both clocks, and the lease holds only while both say it is within
 * its duration. The monotonic clock (performance.now, CLOCK_MONOTONIC on Linux) never jumps
 * but stands still while the machine is suspended (a closed lid), while peers' clocks run on;
 * the wall clock counts a suspend but can be set back or forward. A suspend or a forward jump
 * is caught by the wall clock (a jump only makes the device wait to hear its peers: safe), a
 * backward jump by the monotonic one. Only both at once (a suspend and the clock set back by
 * as much) would go unseen.
 */
export const LEASE_MARGIN_MS = 1000

/** A moment as read on both clocks: `mono` (monotonic, stops during a suspend) and `wall` (Date.now, may jump). */
export interface Instant { mono: number; wall: number }

/** The margin for a detection window: LEASE_MARGIN_MS, or a quarter of a shorter window (tests run with short ones). */
export function leaseMargin (windowMs: number): number { return Math.min(LEASE_MARGIN_MS, windowMs / 4) }

/** How many of its own heartbeats a lease remembers (a few seconds of them): echoes of older ones renew nothing anyway. */
const REMEMBERED = 32

export class Lease {
  /** heartbeats sent: `t` as sent → when, oldest first */
  private readonly sent = new Map<number, Instant>()
  /** per peer: the send time of the latest heartbeat it echoed while hearing this device (null: it speaks leases, none renewed yet) */
  private readonly renewedBy = new Map<string, Instant | null>()

  constructor (readonly windowMs: number, readonly marginMs = leaseMargin(windowMs)) {
    if (!(marginMs >= 0 && marginMs < windowMs)) throw new Error(`the lease margin (${marginMs} ms) must be at least 0 and below the detection window (${windowMs} ms)`)
  }

  /** How long a lease lasts from the send of the heartbeat that renewed it. */
  get durationMs (): number { return this.windowMs - this.marginMs }

  /** A heartbeat carrying `t` left this device at `at`. */
  sentHeartbeat (t: number, at: Instant): void {
    if (!this.sent.has(t)) this.sent.set(t, at)
    while (this.sent.size > REMEMBERED) this.sent.delete(this.sent.keys().next().value as number)
  }

  /**
   * `peer` speaks leases (its hello says a protocol that always echoes): from now on the lease
   * needs its echoes, whether or not one ever arrives (a link that carries nothing from this
   * device to it leaves its heartbeats without one, while it takes this device for dead).
   */
  mustVouch (peer: string): void {
    if (!this.renewedBy.has(peer)) this.renewedBy.set(peer, null)
  }

  /** `peer`'s heartbeat echoed `t`; `hearsMe`: it says it hears this device. Returns true if its part of the lease grew. */
  echoed (peer: string, t: number, hearsMe: boolean): boolean {
    const at = this.sent.get(t)
    if (!this.renewedBy.has(peer)) this.renewedBy.set(peer, null) // it speaks leases: from now on it must vouch
    const had = this.renewedBy.get(peer) ?? null
    if (!hearsMe || at === undefined || (had !== null && at.mono <= had.mono)) return false
    this.renewedBy.set(peer, at)
    return true
  }

  /** The freshest renewal (by the monotonic clock), null if none; undefined while no peer ever spoke leases. */
  private freshest (): Instant | null | undefined {
    if (this.renewedBy.size === 0) return undefined
    let best: Instant | null = null
    for (const r of this.renewedBy.values()) if (r !== null && (best === null || r.mono > best.mono)) best = r
    return best
  }

  /**
   * When the lease ends, on each clock: `durationMs` after the send of the freshest renewal. A
   * device that could revive this one's agents does so only once no peer it hears still hears
   * this one (SyncNode.isDown), so one peer that heard it lately holds every revival back.
   * +Infinity on both while no peer ever spoke leases (older versions, or none said hello
   * yet): the device acts as before leases; -Infinity while peers speak leases but none
   * renewed it.
   */
  expiresAt (): Instant {
    const r = this.freshest()
    if (r === undefined) return { mono: Number.POSITIVE_INFINITY, wall: Number.POSITIVE_INFINITY }
    if (r === null) return { mono: Number.NEGATIVE_INFINITY, wall: Number.NEGATIVE_INFINITY }
    return { mono: r.mono + this.durationMs, wall: r.wall + this.durationMs }
  }

  /**
   * After a stall (the device noticed it at `from`, monotonic): whether every one of `peers`
   * (those heard now) that speaks leases has echoed a heartbeat sent since, so everything it
   * sent before that echo — presence, feed announcements, word of a revival — has been read
   * here. On the monotonic clock, which never goes back: a heartbeat sent after `from` reads
   * later than it, one sent before a suspend earlier.
   */
  answeredSince (from: number, peers: Iterable<string>): boolean {
    let any = false
    for (const p of peers) {
      any = true
      if (!this.renewedBy.has(p)) continue // an older Arbor: it cannot answer
      const at = this.renewedBy.get(p) ?? null
      if (at === null || at.mono < from) return false
    }
    return any
  }

  /**
   * Whether an agent may act now: both clocks say the freshest renewal is less than
   * `durationMs` old. `alone`: nobody could revive its agents (the network is off by choice,
   * or there is no other device): it holds for ever.
   */
  holds (now: Instant, alone: boolean): boolean {
    if (alone) return true
    const end = this.expiresAt()
    return now.mono < end.mono && now.wall < end.wall
  }
}
