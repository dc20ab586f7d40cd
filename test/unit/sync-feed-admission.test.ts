// What a peer may make this device record before any of it verifies (feed-admission.ts): for
// any sequence of announcements, verifications and forgotten peers, the pending feeds stay
// within both bounds, a feed is dropped only at a bound, a peer is asked again only after a
// drop and once well under the bounds, and every peer that had a feed dropped is asked again
// once what is pending has verified (nothing legitimate is lost for good). fast-check prints
// the seed and path of a failure: replay with fc.assert(..., { seed, path }).
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { FeedAdmission, MAX_PENDING_PER_PEER, MAX_PENDING_TOTAL } from '../../src/main/sync/feed-admission'
import { PEER_FEEDS_AT_ONCE } from '../../src/main/history/peer-feed-follower'

const DEVICES = ['a', 'b', 'c', 'd']
const KEYS = Array.from({ length: 16 }, (_, i) => `k${i}`)

type Op =
  | { t: 'admit'; device: string; key: string }
  | { t: 'verified'; key: string }
  | { t: 'forget'; device: string }

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ t: fc.constant('admit' as const), device: fc.constantFrom(...DEVICES), key: fc.constantFrom(...KEYS) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('verified' as const), key: fc.constantFrom(...KEYS) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('forget' as const), device: fc.constantFrom(...DEVICES) }) }
)

const bounds = fc.integer({ min: 1, max: 5 }).chain(perPeer => fc.record({ perPeer: fc.constant(perPeer), total: fc.integer({ min: perPeer, max: 3 * perPeer }) }))

describe('FeedAdmission', () => {
  it('keeps pending feeds within both bounds, drops only at a bound, and asks every peer again that had a feed dropped', () => {
    fc.assert(fc.property(bounds, fc.array(op, { maxLength: 80 }), ({ perPeer, total }, ops) => {
      const a = new FeedAdmission(perPeer, total)
      /** what each device has pending, as this test keeps it */
      const pending = new Map<string, Set<string>>(DEVICES.map(d => [d, new Set()]))
      const owner = (key: string): string | undefined => DEVICES.find(d => pending.get(d)?.has(key))
      const sum = (): number => DEVICES.reduce((n, d) => n + (pending.get(d) as Set<string>).size, 0)
      /** devices that had a feed dropped and were not asked again since */
      const owed = new Set<string>()
      const check = (): void => {
        for (const d of DEVICES) {
          expect(a.pendingOf(d)).toBe((pending.get(d) as Set<string>).size)
          expect(a.pendingOf(d)).toBeLessThanOrEqual(perPeer)
        }
        expect(a.pendingOf()).toBe(sum())
        expect(a.pendingOf()).toBeLessThanOrEqual(total)
      }
      const asked = (devices: string[]): void => {
        for (const d of devices) {
          expect(owed.has(d), `${d} asked again without a drop`).toBe(true)
          expect(a.pendingOf(d) * 2).toBeLessThanOrEqual(perPeer)
          expect(a.pendingOf() * 2).toBeLessThanOrEqual(total)
          owed.delete(d)
        }
      }
      for (const o of ops) {
        if (o.t === 'admit') {
          const by = owner(o.key)
          const full = (pending.get(o.device) as Set<string>).size >= perPeer || sum() >= total
          const got = a.admit(o.device, o.key)
          if (by !== undefined) expect(got).toBe('admitted') // already pending: counted once
          else expect(got).toBe(full ? 'dropped' : 'admitted')
          if (got === 'dropped') owed.add(o.device)
          else if (by === undefined) (pending.get(o.device) as Set<string>).add(o.key)
        } else if (o.t === 'verified') {
          const by = owner(o.key)
          if (by !== undefined) (pending.get(by) as Set<string>).delete(o.key)
          asked(a.verified(o.key))
        } else {
          a.forget(o.device)
          ;(pending.get(o.device) as Set<string>).clear()
          owed.delete(o.device)
        }
        check()
      }
      // once all that is pending has arrived, every peer with a feed dropped is asked again
      for (const k of KEYS) {
        const by = owner(k)
        if (by !== undefined) (pending.get(by) as Set<string>).delete(k)
        asked(a.verified(k))
      }
      asked(a.due())
      expect([...owed]).toEqual([])
    }), { numRuns: 500 })
  })

  it('has bounds above what downloads at once, and a total above one peer\'s', () => {
    expect(MAX_PENDING_PER_PEER).toBeGreaterThanOrEqual(16 * PEER_FEEDS_AT_ONCE)
    expect(MAX_PENDING_TOTAL).toBeGreaterThan(MAX_PENDING_PER_PEER)
    expect(() => new FeedAdmission(10, 5)).toThrow(/bad admission bounds/)
  })
})
