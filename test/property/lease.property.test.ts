// The lease of auto-revival agents (src/main/sync/lease.ts, issue 13): a device
// sends heartbeats; two peers receive some of them, late or never, and echo the last one they
// received in their own heartbeats, which reach the device late, out of order or never; time
// jumps (a stall, a suspend that stops the monotonic clock, the wall clock set forward or back).
// Whatever happens, the device never acts while a peer may already suspect it; after a stall it
// acts again only once every peer echoed a heartbeat sent after the wake; a device alone by
// choice always acts; steady heartbeats keep the lease without a gap.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Lease, LEASE_MARGIN_MS, type Instant } from '../../src/main/sync/lease'

const WINDOW = 4000
const PEERS = ['p', 'q']

type Op =
  | { op: 'beat' }
  /** peer `p` receives the i-th of the device's heartbeats still in flight to it */
  | { op: 'receive'; p: number; i: number }
  /** peer `p` sends a heartbeat echoing the last one it received (it may not hear the device) */
  | { op: 'echo'; p: number; hearsMe: boolean }
  /** the device reads the i-th of the peers' heartbeats in flight */
  | { op: 'read'; i: number }
  | { op: 'advance'; ms: number }
  /** a suspend (lid closed): time passes, the wall clock counts it, the monotonic clock does not */
  | { op: 'suspend'; ms: number }
  /** the wall clock set forward (no time passes) */
  | { op: 'jump'; ms: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.constant({ op: 'beat' as const }),
  fc.record({ op: fc.constant('receive' as const), p: fc.nat(1), i: fc.nat(5) }),
  fc.record({ op: fc.constant('echo' as const), p: fc.nat(1), hearsMe: fc.boolean() }),
  fc.record({ op: fc.constant('read' as const), i: fc.nat(5) }),
  // mostly short steps, sometimes a stall past the lease
  fc.record({ op: fc.constant('advance' as const), ms: fc.oneof(fc.integer({ min: 1, max: 1500 }), fc.integer({ min: 3000, max: 20_000 })) }),
  fc.record({ op: fc.constant('suspend' as const), ms: fc.oneof(fc.integer({ min: 1, max: 1500 }), fc.integer({ min: 3000, max: 600_000 })) }),
  fc.record({ op: fc.constant('jump' as const), ms: fc.integer({ min: 1, max: 100_000 }) })
)
const at = (mono: number, wall = mono): Instant => ({ mono, wall })

describe('Lease', () => {
  it('never holds once every peer may suspect the device; after a stall, only echoes of heartbeats sent since renew it and count as answers', () => {
    fc.assert(fc.property(fc.array(opArb, { minLength: 20, maxLength: 100 }), ops => {
      const lease = new Lease(WINDOW)
      let now = 0 // real time: what the peers' failure detectors count
      let mono = 0
      let wall = 5_000_000
      let t = 1000 // heartbeat times as sent (a wall clock: any numbers)
      let wake = Number.NEGATIVE_INFINITY // real time
      let wakeMono = Number.NEGATIVE_INFINITY // the same moment on the monotonic clock
      const sentAt = new Map<number, number>() // real time
      const monoAt = new Map<number, number>()
      const inFlight: number[][] = PEERS.map(() => [])
      const peerLast: Array<number | null> = PEERS.map(() => null) // the t of the latest heartbeat each peer received
      const peerHeardAt = PEERS.map(() => Number.NEGATIVE_INFINITY) // when each peer last heard the device (it suspects it a window later)
      const echoes: Array<{ p: number; t: number; hearsMe: boolean }> = []
      const spoke = new Set<number>() // peers that echoed at least once
      const renewedFrom = PEERS.map(() => Number.NEGATIVE_INFINITY) // send time of each peer's latest renewing echo
      for (const o of ops) {
        if (o.op === 'beat') { t += 7; lease.sentHeartbeat(t, at(mono, wall)); sentAt.set(t, now); monoAt.set(t, mono); for (const q of inFlight) q.push(t) }
        if (o.op === 'receive') {
          const q = inFlight[o.p] as number[]
          const [m] = q.splice(Math.min(o.i, q.length - 1), 1)
          if (m !== undefined) {
            peerHeardAt[o.p] = now
            const last = peerLast[o.p] ?? null
            if (last === null || (sentAt.get(m) as number) > (sentAt.get(last) as number)) peerLast[o.p] = m
          }
        }
        const last = o.op === 'echo' ? peerLast[o.p] ?? null : null
        if (o.op === 'echo' && last !== null) echoes.push({ p: o.p, t: last, hearsMe: o.hearsMe })
        if (o.op === 'read' && echoes.length > 0) {
          const [e] = echoes.splice(Math.min(o.i, echoes.length - 1), 1)
          if (e !== undefined) {
            spoke.add(e.p)
            if (lease.echoed(PEERS[e.p] as string, e.t, e.hearsMe)) {
              expect(e.hearsMe).toBe(true)
              renewedFrom[e.p] = sentAt.get(e.t) as number
            }
          }
        }
        if (o.op === 'advance' || o.op === 'suspend') {
          if (o.ms >= lease.durationMs) { wake = now + o.ms; wakeMono = o.op === 'advance' ? mono + o.ms : mono + 0.5 } // noticed just after the wake
          now += o.ms
          wall += o.ms
          if (o.op === 'advance') mono += o.ms
        }
        if (o.op === 'jump') wall += o.ms
        if (spoke.size > 0 && lease.holds(at(mono, wall), false)) {
          // some peer heard the device less than a window ago, with the margin to spare: it holds every revival back
          expect([...spoke].some(p => now + LEASE_MARGIN_MS <= (peerHeardAt[p] as number) + WINDOW)).toBe(true)
          // after a stall: renewed by a heartbeat sent since the wake
          if (now >= wake) expect(Math.max(...renewedFrom)).toBeGreaterThanOrEqual(wake)
        }
        // after a stall, every peer answered since only once each echoed a heartbeat sent after it
        if (lease.answeredSince(wakeMono, PEERS)) for (const p of spoke) expect(renewedFrom[p]).toBeGreaterThanOrEqual(wake)
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
      for (const p of PEERS) lease.echoed(p, 0, true)
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

  it('no peer that speaks leases: held as before leases; answers after a stall need every peer heard, and one at least', () => {
    const lease = new Lease(WINDOW)
    expect(lease.holds(at(10_000), false)).toBe(true)
    lease.sentHeartbeat(5, at(0))
    lease.echoed('p', 5, false)
    expect(lease.holds(at(1), false)).toBe(false)
    lease.echoed('p', 5, true)
    expect(lease.holds(at(1), false)).toBe(true)
    expect(lease.holds(at(lease.durationMs), false)).toBe(false)
    lease.sentHeartbeat(6, at(5000))
    lease.echoed('q', 6, true)
    expect(lease.answeredSince(5000, ['q'])).toBe(true)
    expect(lease.answeredSince(5000, ['p', 'q'])).toBe(false)
    expect(lease.answeredSince(5000, ['old', 'q'])).toBe(true) // a peer that never echoed cannot answer
    expect(lease.answeredSince(5000, [])).toBe(false)
  })

  it('a peer that must vouch (its hello said 1.3) holds nothing before its first echo, and is waited for after a stall', () => {
    const lease = new Lease(WINDOW)
    lease.mustVouch('p')
    expect(lease.holds(at(0), false)).toBe(false)
    expect(lease.holds(at(0), true)).toBe(true) // alone by choice
    lease.sentHeartbeat(5, at(10))
    expect(lease.answeredSince(10, ['p'])).toBe(false)
    expect(lease.echoed('p', 5, true)).toBe(true)
    expect(lease.holds(at(11), false)).toBe(true)
    expect(lease.answeredSince(10, ['p'])).toBe(true)
    lease.mustVouch('p') // a later hello takes nothing back
    expect(lease.holds(at(11), false)).toBe(true)
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
