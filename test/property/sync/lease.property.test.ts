// The lease of auto-revival agents (src/main/sync/peers/lease.ts, issue 13): a device
// sends heartbeats; peers receive some of them, late or never, and echo the last one they
// received in their own heartbeats, which reach the device late, out of order or never; the
// device suspects peers and hears them again, loses connections, and stalls (a pause, a suspend
// that stops the monotonic clock, the wall clock set forward or back). Whatever happens, the
// device never acts while a peer it is owed to (it speaks leases, and is not soundly suspected:
// a full window, no stall since) has not renewed it within its duration — so not while a
// connected unsuspected 1.3 peer has not echoed, nor on the suspicions raised on waking; it is
// never blocked once every peer is soundly suspected or gone; after a lapse it counts as
// answered only once every peer owed echoed a heartbeat sent since; a device alone by choice
// always acts; steady heartbeats keep the lease without a gap.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Lease, LEASE_MARGIN_MS, type Instant } from '../../../src/main/sync/peers/lease'

const WINDOW = 4000
const PEERS = ['p', 'q', 'r']
/** the third peer is of an older Arbor: it says hello without speaking leases, and never echoes */
const OLD = 2

type Op =
  | { op: 'beat' }
  /** peer `p` receives the i-th of the device's heartbeats still in flight to it */
  | { op: 'receive'; p: number; i: number }
  /** peer `p` sends a heartbeat echoing the last one it received (it may not hear the device) */
  | { op: 'echo'; p: number; hearsMe: boolean }
  /** the device reads the i-th of the peers' echoes in flight */
  | { op: 'read'; i: number }
  /** peer `p`'s session opens (its hello) */
  | { op: 'hello'; p: number }
  /** the device suspects `p`: silent a window, or its connection lost (the node reports both as a suspicion); last heard `ago` ms before */
  | { op: 'suspect'; p: number; ago: number }
  /** the device hears `p` again */
  | { op: 'recover'; p: number }
  | { op: 'advance'; ms: number }
  /** a suspend (lid closed): time passes, the wall clock counts it, the monotonic clock does not */
  | { op: 'suspend'; ms: number }
  /** the wall clock set forward (no time passes) */
  | { op: 'jump'; ms: number }

const peerArb = fc.nat(PEERS.length - 1)
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.constant({ op: 'beat' as const }),
  fc.record({ op: fc.constant('receive' as const), p: peerArb, i: fc.nat(5) }),
  fc.record({ op: fc.constant('echo' as const), p: fc.nat(1), hearsMe: fc.boolean() }),
  fc.record({ op: fc.constant('read' as const), i: fc.nat(5) }),
  fc.record({ op: fc.constant('hello' as const), p: peerArb }),
  fc.record({ op: fc.constant('suspect' as const), p: peerArb, ago: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2 * WINDOW })) }),
  fc.record({ op: fc.constant('recover' as const), p: peerArb }),
  // mostly short steps (within a tick and the margin: no stall), sometimes a stall past the lease
  fc.record({ op: fc.constant('advance' as const), ms: fc.oneof(fc.integer({ min: 1, max: 1500 }), fc.integer({ min: 3000, max: 20_000 })) }),
  fc.record({ op: fc.constant('suspend' as const), ms: fc.oneof(fc.integer({ min: 1, max: 1500 }), fc.integer({ min: 3000, max: 600_000 })) }),
  fc.record({ op: fc.constant('jump' as const), ms: fc.integer({ min: 1, max: 100_000 }) })
)
const at = (mono: number, wall = mono): Instant => ({ mono, wall })

describe('Lease', () => {
  it('never held while a peer it is owed to has not renewed it within its duration (wake-up suspicions included); never blocked once every peer is soundly suspected or gone; answers after a lapse only from echoes of heartbeats sent since', () => {
    fc.assert(fc.property(fc.array(opArb, { minLength: 20, maxLength: 120 }), ops => {
      const lease = new Lease(WINDOW)
      let mono = 0
      let wall = 5_000_000
      let t = 1000 // heartbeat times as sent (a wall clock: any numbers)
      let lastLook: Instant | null = null
      let stall: Instant | null = null // the last stall on the device, as it noticed it
      let lapse = Number.NEGATIVE_INFINITY // monotonic: the last lapse (a stall, or a look that found it no longer held)
      let heldBefore = true
      const sentAt = new Map<number, Instant>()
      const inFlight: number[][] = PEERS.map(() => [])
      const peerLast: Array<number | null> = PEERS.map(() => null) // the t of the latest heartbeat each peer received
      const echoes: Array<{ p: number; t: number; hearsMe: boolean }> = []
      const speaks = PEERS.map(() => false) // said hello as 1.3, or echoed
      const renewed: Array<Instant | null> = PEERS.map(() => null) // send time of each peer's latest heartbeat it echoed hearing the device
      const suspectedAt: Array<Instant | null> = PEERS.map(() => null)
      for (const o of ops) {
        if (o.op === 'beat') { t += 7; sentAt.set(t, at(mono, wall)); lease.sentHeartbeat(t, at(mono, wall)); for (const q of inFlight) q.push(t) }
        if (o.op === 'receive') {
          const q = inFlight[o.p] as number[]
          const [m] = q.splice(Math.min(o.i, q.length - 1), 1)
          const last = peerLast[o.p] ?? null
          if (m !== undefined && (last === null || (sentAt.get(m) as Instant).mono > (sentAt.get(last) as Instant).mono)) peerLast[o.p] = m
        }
        const last = o.op === 'echo' ? peerLast[o.p] ?? null : null
        if (o.op === 'echo' && last !== null) echoes.push({ p: o.p, t: last, hearsMe: o.hearsMe })
        if (o.op === 'read' && echoes.length > 0) {
          const [e] = echoes.splice(Math.min(o.i, echoes.length - 1), 1) as [{ p: number; t: number; hearsMe: boolean }]
          speaks[e.p] = true
          const sent = sentAt.get(e.t) as Instant
          const had = renewed[e.p] ?? null
          const grew = lease.echoed(PEERS[e.p] as string, e.t, e.hearsMe)
          expect(grew).toBe(e.hearsMe && (had === null || sent.mono > had.mono))
          if (grew) renewed[e.p] = sent
        }
        if (o.op === 'hello') { lease.hello(PEERS[o.p] as string, o.p !== OLD); if (o.p !== OLD) speaks[o.p] = true; suspectedAt[o.p] = null }
        if (o.op === 'suspect') { lease.suspected(PEERS[o.p] as string, at(mono, wall), at(mono - o.ago, wall - o.ago)); suspectedAt[o.p] ??= at(mono - o.ago, wall - o.ago) }
        if (o.op === 'recover') { lease.recovered(PEERS[o.p] as string); suspectedAt[o.p] = null }
        if (o.op === 'advance' || o.op === 'suspend') {
          wall += o.ms
          if (o.op === 'advance') mono += o.ms
        }
        if (o.op === 'jump') wall += o.ms
        // the device looks (its heartbeat tick, an echo, an agent's check)
        const look = at(mono, wall)
        if (lastLook !== null && (look.mono - lastLook.mono > lease.stallMs || look.wall - lastLook.wall > lease.stallMs)) { stall = look; lapse = mono }
        lastLook = look
        const held = lease.check(look, false)
        if (!held && heldBefore) lapse = mono
        heldBefore = held
        expect(lease.lapsedAt ?? Number.NEGATIVE_INFINITY).toBe(lapse)
        const within = (r: Instant | null): boolean => r !== null && mono < r.mono + lease.durationMs && wall < r.wall + lease.durationMs
        // suspected, and silent a full window on both clocks, counted from the last stall if later (the suspicions raised on waking)
        const sound = (p: number): boolean => {
          const s = suspectedAt[p] ?? null
          if (s === null) return false
          const from = stall === null ? s : { mono: Math.max(s.mono, stall.mono), wall: Math.max(s.wall, stall.wall) }
          return mono - from.mono >= WINDOW && wall - from.wall >= WINDOW
        }
        const owed = PEERS.map((_, p) => p).filter(p => speaks[p] === true && !sound(p))
        if (held) {
          // every peer that may take the device for dead heard it less than a lease ago: none suspects it yet
          for (const p of owed) expect(within(renewed[p] ?? null), `held while ${PEERS[p]} has not renewed it`).toBe(true)
          // in particular a connected, unsuspected peer that speaks leases
          for (const p of PEERS.keys()) if (speaks[p] === true && suspectedAt[p] === null) expect(within(renewed[p] ?? null)).toBe(true)
        }
        // never blocked for ever: owed to nobody (all soundly suspected, gone, or of an older Arbor) it holds, and nothing is left to answer
        if (owed.length === 0) { expect(held).toBe(true); expect(lease.answeredSince(mono, look)).toBe(true) }
        // answered since the lapse only once every peer owed echoed a heartbeat sent since
        if (lease.answeredSince(lapse, look)) for (const p of owed) expect((renewed[p] ?? null)?.mono ?? Number.NEGATIVE_INFINITY).toBeGreaterThanOrEqual(lapse)
        expect(new Set(lease.owed(look))).toEqual(new Set(owed.map(p => PEERS[p])))
        // when a waiting agent looks again: the moment the first suspicion of a peer owed turns sound
        const due = lease.soundIn(look)
        if (Number.isFinite(due)) expect(lease.owed(at(mono + due, wall + due)).length).toBeLessThan(owed.length)
        else expect(owed.every(p => suspectedAt[p] === null)).toBe(true)
      }
    }), { numRuns: 1000 })
  })

  it('a device alone by choice holds it for ever', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 1e9 }), { maxLength: 20 }), times => {
      const lease = new Lease(WINDOW)
      lease.sentHeartbeat(1, at(0))
      lease.echoed('p', 1, true)
      for (const x of times) expect(lease.holds(at(x, -x), true)).toBe(true)
    }))
  })

  it('heartbeats every second, echoed within the margin, keep it without a gap', () => {
    fc.assert(fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: LEASE_MARGIN_MS - 1 }), fc.integer({ min: 0, max: LEASE_MARGIN_MS - 1 })), { minLength: 2, maxLength: 60 }), (delays) => {
      const lease = new Lease(WINDOW)
      lease.sentHeartbeat(0, at(0, 7e12))
      for (const p of ['p', 'q']) lease.echoed(p, 0, true)
      for (const [k, [dp, dq]] of delays.entries()) {
        const sent = (k + 1) * 1000
        lease.sentHeartbeat(sent, at(sent, 7e12 + sent))
        // until the later echo of this beat arrives, the previous ones still hold
        const d = Math.max(dp, dq)
        expect(lease.holds(at(sent + d, 7e12 + sent + d), false)).toBe(true)
        lease.echoed('p', sent, true)
        lease.echoed('q', sent, true)
      }
    }))
  })

  it('owed to nobody (no peer speaks leases): held as before leases; a 1.3 hello owes it to that peer before its first echo; answers count from a lapse', () => {
    const lease = new Lease(WINDOW)
    expect(lease.holds(at(10_000), false)).toBe(true)
    lease.hello('old', false) // an older Arbor: it may not echo, and holds nothing back
    expect(lease.holds(at(10_000), false)).toBe(true)
    lease.hello('p', true)
    expect(lease.owed(at(0))).toEqual(['p'])
    expect(lease.holds(at(0), false)).toBe(false)
    expect(lease.holds(at(0), true)).toBe(true) // alone by choice
    lease.sentHeartbeat(5, at(10))
    expect(lease.echoed('p', 5, false)).toBe(false) // it does not hear this device: it renews nothing
    expect(lease.answeredSince(10, at(11))).toBe(false)
    expect(lease.echoed('p', 5, true)).toBe(true)
    expect(lease.holds(at(11), false)).toBe(true)
    expect(lease.answeredSince(10, at(11))).toBe(true)
    expect(lease.answeredSince(11, at(11))).toBe(false) // a heartbeat sent before the lapse answers nothing
    lease.hello('p', true) // a later hello takes nothing back
    expect(lease.holds(at(11), false)).toBe(true)
    expect(lease.holds(at(10 + lease.durationMs), false)).toBe(false)
    // every peer owed must vouch: q echoing lately does not cover p
    lease.sentHeartbeat(6, at(3000))
    lease.echoed('q', 6, true)
    expect(lease.holds(at(3500), false)).toBe(false)
  })

  it('the wake-up trap: suspicions raised on waking drop nobody; a stall restarts the count; a peer suspected a full window since no longer counts (the reviver of a dead device acts)', () => {
    const lease = new Lease(WINDOW, 1000, 2000)
    const look = (ms: number): boolean => lease.check(at(ms), false)
    lease.hello('p', true)
    lease.sentHeartbeat(1, at(0))
    lease.echoed('p', 1, true)
    for (let ms = 0; ms <= 2000; ms += 500) expect(look(ms)).toBe(true)
    // paused 20 s: on waking a timer suspects p before its socket is read
    lease.suspected('p', at(22_000))
    expect(look(22_000)).toBe(false)
    expect(lease.soundIn(at(22_000))).toBe(WINDOW)
    expect(lease.lapsedAt).toBe(22_000)
    for (let ms = 22_000; ms <= 30_000; ms += 1000) expect(look(ms), `${ms}`).toBe(ms >= 22_000 + WINDOW) // a full window since
    // p was heard again, and suspected once more just before a stall: the count starts again after it
    lease.recovered('p')
    lease.sentHeartbeat(2, at(30_000))
    lease.echoed('p', 2, true)
    expect(look(30_000)).toBe(true)
    lease.suspected('p', at(31_000))
    expect(look(31_000)).toBe(true)
    expect(look(33_500)).toBe(false) // its lease ran out (30 000 + 3000)
    expect(look(40_000)).toBe(false) // stalled 6.5 s: the suspicion counts from here, not from 31 000
    expect(look(42_000)).toBe(false)
    expect(look(44_000)).toBe(true)
    expect(lease.answeredSince(lease.lapsedAt as number, at(44_000))).toBe(true) // nobody is owed: nothing to wait for
  })

  it('the silence counts from the last word heard: a reviver that suspects its dead owner a window after it last heard it acts at once — unless it stalled meanwhile', () => {
    const make = (): { lease: Lease; look: (ms: number) => boolean } => {
      const lease = new Lease(WINDOW, 1000, 2000)
      lease.hello('owner', true)
      lease.sentHeartbeat(1, at(0))
      lease.echoed('owner', 1, true)
      return { lease, look: (ms: number): boolean => lease.check(at(ms), false) }
    }
    const a = make()
    for (let ms = 0; ms <= 3000; ms += 500) a.look(ms)
    expect(a.look(3500)).toBe(false) // the owner went silent at 500: its part ran out at 3000
    a.lease.suspected('owner', at(4500), at(500)) // silent since 500: a full window at 4500
    expect(a.look(4500)).toBe(true)
    expect(a.lease.owed(at(4500))).toEqual([])
    // the same suspicion raised by a timer on waking from a stall: it drops nobody for a window
    const b = make()
    b.look(500)
    b.lease.suspected('owner', at(4500), at(500))
    expect(b.look(4500)).toBe(false)
    expect(b.lease.soundIn(at(4500))).toBe(WINDOW)
  })

  it('held only while both clocks say it is within its duration: a suspend (wall only), a clock set forward or back, in any combination', () => {
    // steps of [monotonic advance, wall advance]: a suspend moves only the wall clock, a jump
    // moves the wall clock either way, an ordinary step moves both
    const step = fc.oneof(
      fc.integer({ min: 0, max: 2000 }).map(ms => [ms, ms] as const),
      fc.integer({ min: 0, max: 600_000 }).map(ms => [0, ms] as const),
      fc.integer({ min: -100_000, max: 100_000 }).map(ms => [0, ms] as const),
      fc.tuple(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: -100_000, max: 600_000 }))
    )
    fc.assert(fc.property(fc.integer({ min: 0, max: 1e6 }), fc.integer({ min: 0, max: 2e12 }), fc.array(step, { minLength: 1, maxLength: 12 }), (m0, w0, steps) => {
      const lease = new Lease(WINDOW)
      lease.sentHeartbeat(1, at(m0, w0))
      lease.echoed('p', 1, true)
      let mono = m0
      let wall = w0
      for (const [dm, dw] of steps) {
        mono += dm
        wall += dw
        const within = mono - m0 < lease.durationMs && wall - w0 < lease.durationMs
        expect(lease.holds(at(mono, wall), false)).toBe(within)
      }
    }), { numRuns: 2000 })
  })

  it('refuses a margin that leaves no lease', () => {
    expect(() => new Lease(WINDOW, WINDOW)).toThrow(/margin/)
    expect(() => new Lease(WINDOW, -1)).toThrow(/margin/)
  })
})
