// The lease of auto-revival agents (src/main/sync/lease.ts, issue 13): a device
// sends heartbeats; two peers receive some of them, late or never, and echo the last one they
// received in their own heartbeats, which reach the device late, out of order or never; time
// jumps (a stall, a sleep). Whatever happens, the device never acts while a peer may already
// suspect it; after a stall it acts again only once every peer echoed a heartbeat sent after
// the wake; a device alone by choice always acts; steady heartbeats keep the lease without a gap.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Lease, LEASE_MARGIN_MS } from '../../src/main/sync/lease'

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

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.constant({ op: 'beat' as const }),
  fc.record({ op: fc.constant('receive' as const), p: fc.nat(1), i: fc.nat(5) }),
  fc.record({ op: fc.constant('echo' as const), p: fc.nat(1), hearsMe: fc.boolean() }),
  fc.record({ op: fc.constant('read' as const), i: fc.nat(5) }),
  // mostly short steps, sometimes a stall past the lease
  fc.record({ op: fc.constant('advance' as const), ms: fc.oneof(fc.integer({ min: 1, max: 1500 }), fc.integer({ min: 3000, max: 20_000 })) })
)

describe('Lease', () => {
  it('never holds once every peer may suspect the device; after a stall, only echoes of heartbeats sent since renew it and count as answers', () => {
    fc.assert(fc.property(fc.array(opArb, { minLength: 20, maxLength: 100 }), ops => {
      const lease = new Lease(WINDOW)
      let now = 0
      let t = 1000 // heartbeat times as sent (a wall clock: any numbers)
      let wake = Number.NEGATIVE_INFINITY
      const sentAt = new Map<number, number>()
      const inFlight: number[][] = PEERS.map(() => [])
      const peerLast: Array<number | null> = PEERS.map(() => null) // the t of the latest heartbeat each peer received
      const peerHeardAt = PEERS.map(() => Number.NEGATIVE_INFINITY) // when each peer last heard the device (it suspects it a window later)
      const echoes: Array<{ p: number; t: number; hearsMe: boolean }> = []
      const spoke = new Set<number>() // peers that echoed at least once
      const renewedFrom = PEERS.map(() => Number.NEGATIVE_INFINITY) // send time of each peer's latest renewing echo
      for (const o of ops) {
        if (o.op === 'beat') { t += 7; lease.sentHeartbeat(t, now); sentAt.set(t, now); for (const q of inFlight) q.push(t) }
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
        if (o.op === 'advance') { if (o.ms >= lease.durationMs) wake = now + o.ms; now += o.ms }
        if (spoke.size > 0 && lease.holds(now, false)) {
          // some peer heard the device less than a window ago, with the margin to spare: it holds every revival back
          expect([...spoke].some(p => now + LEASE_MARGIN_MS <= (peerHeardAt[p] as number) + WINDOW)).toBe(true)
          // after a stall: renewed by a heartbeat sent since the wake
          if (now >= wake) expect(Math.max(...renewedFrom)).toBeGreaterThanOrEqual(wake)
        }
        // after a stall, every peer answered since only once each echoed a heartbeat sent after it
        if (lease.answeredSince(wake, PEERS)) for (const p of spoke) expect(renewedFrom[p]).toBeGreaterThanOrEqual(wake)
      }
    }), { numRuns: 1000 })
  })

  it('a device alone by choice holds it for ever', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 1e9 }), { maxLength: 20 }), times => {
      const lease = new Lease(WINDOW)
      lease.sentHeartbeat(1, 0)
      lease.echoed('p', 1, true)
      for (const at of times) expect(lease.holds(at, true)).toBe(true)
    }))
  })

  it('heartbeats every second, echoed within the margin, keep it without a gap', () => {
    fc.assert(fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: LEASE_MARGIN_MS - 1 }), fc.integer({ min: 0, max: LEASE_MARGIN_MS - 1 })), { minLength: 2, maxLength: 60 }), (delays) => {
      const lease = new Lease(WINDOW)
      lease.sentHeartbeat(0, 0)
      for (const p of PEERS) lease.echoed(p, 0, true)
      for (const [k, [dp, dq]] of delays.entries()) {
        const sent = (k + 1) * 1000
        lease.sentHeartbeat(sent, sent)
        // until the later echo of this beat arrives, the previous ones still hold
        expect(lease.holds(sent + Math.max(dp, dq), false)).toBe(true)
        lease.echoed('p', sent, true)
        lease.echoed('q', sent, true)
      }
    }))
  })

  it('no peer that speaks leases: held as before leases; answers after a stall need every peer heard, and one at least', () => {
    const lease = new Lease(WINDOW)
    expect(lease.holds(10_000, false)).toBe(true)
    lease.sentHeartbeat(5, 0)
    lease.echoed('p', 5, false)
    expect(lease.holds(1, false)).toBe(false)
    lease.echoed('p', 5, true)
    expect(lease.holds(1, false)).toBe(true)
    expect(lease.holds(lease.durationMs, false)).toBe(false)
    lease.sentHeartbeat(6, 5000)
    lease.echoed('q', 6, true)
    expect(lease.answeredSince(5000, ['q'])).toBe(true)
    expect(lease.answeredSince(5000, ['p', 'q'])).toBe(false)
    expect(lease.answeredSince(5000, ['old', 'q'])).toBe(true) // a peer that never echoed cannot answer
    expect(lease.answeredSince(5000, [])).toBe(false)
  })

  it('refuses a margin that leaves no lease', () => {
    expect(() => new Lease(WINDOW, WINDOW)).toThrow(/margin/)
    expect(() => new Lease(WINDOW, -1)).toThrow(/margin/)
  })
})
