// The lease of auto-revival agents (src/main/runtime/placement/lease.ts, issue 13): a device
// sends heartbeats; two peers receive some of them, late or never, and echo the last one they
// received in their own heartbeats, which reach the device late, out of order or never; time
// jumps (a stall, a sleep). Whatever happens, the device never acts while a peer may already
// suspect it; after a stall it acts again only once every peer echoed a heartbeat sent after
// the wake; a device alone by choice always acts; steady heartbeats keep the lease without a gap.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Lease, LEASE_MARGIN_MS } from '../../src/main/runtime/placement/lease'

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
  it('never holds while a peer that speaks leases may suspect the device; after a stall, only echoes of heartbeats sent since renew it', () => {
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
        if (spoke.size > 0 && lease.holds(now, false, PEERS)) {
          for (const p of spoke) {
            // each peer that speaks leases heard the device less than a window ago, with the margin to spare
            expect(now + LEASE_MARGIN_MS).toBeLessThanOrEqual((peerHeardAt[p] as number) + WINDOW)
            // after a stall: renewed by a heartbeat sent since the wake
            if (now >= wake) expect(renewedFrom[p]).toBeGreaterThanOrEqual(wake)
          }
        }
      }
    }), { numRuns: 1000 })
  })

  it('a device alone by choice holds it for ever', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 1e9 }), { maxLength: 20 }), times => {
      const lease = new Lease(WINDOW)
      lease.sentHeartbeat(1, 0)
      lease.echoed('p', 1, true)
      for (const at of times) expect(lease.holds(at, true, PEERS)).toBe(true)
    }))
  })

  it('heartbeats every second, echoed by every peer within the margin, keep it without a gap', () => {
    fc.assert(fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: LEASE_MARGIN_MS - 1 }), fc.integer({ min: 0, max: LEASE_MARGIN_MS - 1 })), { minLength: 2, maxLength: 60 }), (delays) => {
      const lease = new Lease(WINDOW)
      lease.sentHeartbeat(0, 0)
      for (const p of PEERS) lease.echoed(p, 0, true)
      for (const [k, [dp, dq]] of delays.entries()) {
        const sent = (k + 1) * 1000
        lease.sentHeartbeat(sent, sent)
        // until the later echo of this beat arrives, the previous ones still hold
        expect(lease.holds(sent + Math.max(dp, dq), false, PEERS)).toBe(true)
        lease.echoed('p', sent, true)
        lease.echoed('q', sent, true)
      }
    }))
  })

  it('a peer that never echoed (an older version) holds nothing back; one that did must vouch', () => {
    const lease = new Lease(WINDOW)
    expect(lease.holds(10_000, false, ['old'])).toBe(true)
    lease.sentHeartbeat(5, 0)
    lease.echoed('p', 5, false)
    expect(lease.holds(1, false, ['old', 'p'])).toBe(false)
    lease.echoed('p', 5, true)
    expect(lease.holds(1, false, ['old', 'p'])).toBe(true)
    expect(lease.holds(3000, false, ['old', 'p'])).toBe(false)
  })

  it('with no vouching peer heard (waking, cut off), the freshest renewal of any counts', () => {
    const lease = new Lease(WINDOW)
    lease.sentHeartbeat(5, 0)
    lease.sentHeartbeat(6, 1000)
    lease.echoed('p', 5, true)
    lease.echoed('q', 6, true)
    expect(lease.expiresAt([])).toBe(1000 + lease.durationMs)
    expect(lease.expiresAt(['p', 'q'])).toBe(0 + lease.durationMs)
    expect(lease.holds(1000 + lease.durationMs, false, [])).toBe(false)
  })

  it('refuses a margin that leaves no lease', () => {
    expect(() => new Lease(WINDOW, WINDOW)).toThrow(/margin/)
    expect(() => new Lease(WINDOW, -1)).toThrow(/margin/)
  })
})
