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
 *
 * Whom the lease is owed to: the peers that could revive this device's agents now. Every peer
 * that speaks leases (its hello says a protocol that always echoes, or it has echoed) and that
 * this device does not soundly suspect must have renewed it within its duration; a connected
 * one that never echoes (a link carrying nothing from here to it, so it may take this device
 * for dead) lets it expire. A suspicion is sound once the peer has been silent a full window
 * (counted from the last word heard of it, as it counts this device's silence before it may
 * revive) with no stall on this side since: the peer is dead or cut off (a partition:
 * ARCHITECTURE §14 leaves it for a majority). On waking from a stall the timers fire before the sockets are read, so
 * the suspicions they raise drop nobody: they count from the stall. A lost connection is a
 * suspicion like silence. With nobody owed (every peer soundly suspected, or none speaks
 * leases) the lease holds: an agent is never blocked for ever by peers that are gone.
 */
export const LEASE_MARGIN_MS = 1000

/** A moment as read on both clocks: `mono` (monotonic, stops during a suspend) and `wall` (Date.now, may jump). */
export interface Instant { mono: number; wall: number }

/** The margin for a detection window: LEASE_MARGIN_MS, or a quarter of a shorter window (tests run with short ones). */
export function leaseMargin (windowMs: number): number { return Math.min(LEASE_MARGIN_MS, windowMs / 4) }

/** How many of its own heartbeats a lease remembers (a few seconds of them): echoes of older ones renew nothing anyway. */
const REMEMBERED = 32

/** What the lease knows of one peer. */
interface PeerPart {
  /** it may take this device for dead and revive its agents: its hello says a protocol that always echoes, or it has echoed */
  speaks: boolean
  /** the send time of the latest heartbeat it echoed while hearing this device */
  renewed: Instant | null
  /** while this device suspects it (silence or a lost connection): since when it has been silent; null while it does not */
  suspectedAt: Instant | null
}

const later = (a: Instant, b: Instant | null): Instant => b === null ? a : { mono: Math.max(a.mono, b.mono), wall: Math.max(a.wall, b.wall) }

export class Lease {
  /** heartbeats sent: `t` as sent → when, oldest first */
  private readonly sent = new Map<number, Instant>()
  private readonly parts = new Map<string, PeerPart>()
  /** the last moment this device was seen running (check), to tell a stall */
  private seen: Instant | null = null
  /** the last stall on this side: suspicions count from it */
  private stalledAt: Instant | null = null
  /** whether it held at the last check */
  private heldAtCheck = true
  private lapsed: number | null = null

  /**
   * `stallMs`: a gap longer than this between two checks is a stall on this side (the node
   * checks on every heartbeat tick; default a second's tick and the margin).
   */
  constructor (readonly windowMs: number, readonly marginMs = leaseMargin(windowMs), readonly stallMs = 1000 + marginMs) {
    if (!(marginMs >= 0 && marginMs < windowMs)) throw new Error(`the lease margin (${marginMs} ms) must be at least 0 and below the detection window (${windowMs} ms)`)
  }

  /** How long a lease lasts from the send of the heartbeat that renewed it. */
  get durationMs (): number { return this.windowMs - this.marginMs }

  /** When (monotonic) the lease was last found lapsed: a stall on this side, or a check that found it no longer held. */
  get lapsedAt (): number | null { return this.lapsed }

  /** A heartbeat carrying `t` left this device at `at`. */
  sentHeartbeat (t: number, at: Instant): void {
    if (!this.sent.has(t)) this.sent.set(t, at)
    while (this.sent.size > REMEMBERED) this.sent.delete(this.sent.keys().next().value as number)
  }

  private part (peer: string): PeerPart {
    let p = this.parts.get(peer)
    if (p === undefined) this.parts.set(peer, p = { speaks: false, renewed: null, suspectedAt: null })
    return p
  }

  /** `peer`'s session opened (its hello came); `speaks`: its protocol always echoes (1.3 on), so its echoes are owed from now on. */
  hello (peer: string, speaks: boolean): void {
    const p = this.part(peer)
    p.speaks ||= speaks
    p.suspectedAt = null
  }

  /** `peer`'s heartbeat echoed `t`; `hearsMe`: it says it hears this device. Returns true if its part of the lease grew. */
  echoed (peer: string, t: number, hearsMe: boolean): boolean {
    const p = this.part(peer)
    p.speaks = true // it speaks leases: from now on it must vouch
    const at = this.sent.get(t)
    if (!hearsMe || at === undefined || (p.renewed !== null && at.mono <= p.renewed.mono)) return false
    p.renewed = at
    return true
  }

  /**
   * This device began to suspect `peer` at `at` (silent a window, or its connection lost),
   * having last heard it at `silentSince`. A look at the lease: on waking from a stall the
   * timer that suspects a peer may fire before any other, and the stall must count.
   */
  suspected (peer: string, at: Instant, silentSince: Instant = at): void {
    this.look(at)
    const p = this.part(peer)
    p.suspectedAt ??= { mono: Math.min(silentSince.mono, at.mono), wall: Math.min(silentSince.wall, at.wall) }
  }

  /** `peer` was heard again. */
  recovered (peer: string): void {
    const p = this.parts.get(peer)
    if (p !== undefined) p.suspectedAt = null
  }

  /** Forgets the peers `keep` refuses (devices no longer paired). */
  retain (keep: (peer: string) => boolean): void {
    for (const peer of [...this.parts.keys()]) if (!keep(peer)) this.parts.delete(peer)
  }

  /** Whether `peer`, suspected, has been silent a full window on both clocks, with no stall on this side in that time. */
  private soundlySuspected (p: PeerPart, now: Instant): boolean {
    if (p.suspectedAt === null) return false
    const from = later(p.suspectedAt, this.stalledAt)
    return now.mono - from.mono >= this.windowMs && now.wall - from.wall >= this.windowMs
  }

  /** The peers the lease is owed to at `now`: those that speak leases and are not soundly suspected. */
  owed (now: Instant): string[] {
    const out: string[] = []
    for (const [peer, p] of this.parts) if (p.speaks && !this.soundlySuspected(p, now)) out.push(peer)
    return out
  }

  /** How long until the next suspicion of a peer owed becomes sound (and the lease may hold): +Infinity if none is suspected. */
  soundIn (now: Instant): number {
    let ms = Number.POSITIVE_INFINITY
    for (const peer of this.owed(now)) {
      const s = (this.parts.get(peer) as PeerPart).suspectedAt
      if (s === null) continue
      const from = later(s, this.stalledAt)
      ms = Math.min(ms, Math.max(0, from.mono + this.windowMs - now.mono, from.wall + this.windowMs - now.wall))
    }
    return ms
  }

  /**
   * When the lease ends, on each clock: `durationMs` after the send of the stalest renewal
   * among the peers it is owed to (default: at the last check). +Infinity while it is owed to
   * nobody (peers of older versions, or none said hello yet, or all soundly suspected);
   * -Infinity while one it is owed to has not renewed it.
   */
  expiresAt (now: Instant | null = this.seen): Instant {
    let end: Instant = { mono: Number.POSITIVE_INFINITY, wall: Number.POSITIVE_INFINITY }
    for (const peer of now === null ? [] : this.owed(now)) {
      const r = (this.parts.get(peer) as PeerPart).renewed
      if (r === null) return { mono: Number.NEGATIVE_INFINITY, wall: Number.NEGATIVE_INFINITY }
      end = { mono: Math.min(end.mono, r.mono + this.durationMs), wall: Math.min(end.wall, r.wall + this.durationMs) }
    }
    return end
  }

  /**
   * After a lapse (noticed at `from`, monotonic): whether every peer the lease is owed to has
   * echoed a heartbeat sent since, so everything it sent before that echo — presence, feed
   * announcements, word of a revival — has been read here. On the monotonic clock, which never
   * goes back: a heartbeat sent after `from` reads later than it, one sent before a suspend
   * earlier. True when it is owed to nobody.
   */
  answeredSince (from: number, now: Instant): boolean {
    for (const peer of this.owed(now)) {
      const r = (this.parts.get(peer) as PeerPart).renewed
      if (r === null || r.mono < from) return false
    }
    return true
  }

  /**
   * Whether an agent may act at `now`: every peer the lease is owed to renewed it less than
   * `durationMs` ago, on both clocks. `alone`: nobody could revive its agents (the network is
   * off by choice, or there is no other device): it holds for ever.
   */
  holds (now: Instant, alone: boolean): boolean {
    if (alone) return true
    const end = this.expiresAt(now)
    return now.mono < end.mono && now.wall < end.wall
  }

  /**
   * `holds`, as the device looks at `now` (on every heartbeat tick, every echo, every agent's
   * check): a gap since the last look longer than `stallMs` on either clock is a stall (a
   * pause, a suspend, a clock set forward), and a stall or a look that finds the lease no
   * longer held is a lapse (`lapsedAt`).
   */
  check (now: Instant, alone: boolean): boolean {
    this.look(now)
    const held = this.holds(now, alone)
    if (!held && this.heldAtCheck) this.lapsed = now.mono
    this.heldAtCheck = held
    return held
  }

  /** The device is running at `now`: a gap since the last look longer than `stallMs` on either clock was a stall. */
  private look (now: Instant): void {
    const seen = this.seen
    if (seen !== null && (now.mono - seen.mono > this.stallMs || now.wall - seen.wall > this.stallMs)) {
      this.stalledAt = now
      this.lapsed = now.mono
    }
    this.seen = now
  }
}
