// What a peer may make this device record before any of it verifies (feed-admission.ts),
// against a model kept by this test: for any sequence of announcements (some with feeds
// being checked, which are never evicted), verifications and forgotten peers, the pending
// feeds stay within both bounds; a peer below its fair share (the total divided among the
// peers with feeds pending, itself among them) always has its announcement taken, evicting
// the newest feed of the peer furthest over its share, which is never pushed below its own
// share and is owed a new request; an owed peer is asked again exactly when it has at most
// half its share pending; and every peer owed is asked again once what is pending has
// verified (nothing legitimate is lost for good). fast-check prints the seed and path of a
// failure: replay with fc.assert(..., { seed, path }).
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { FeedAdmission, MAX_PENDING_PER_PEER, MAX_PENDING_TOTAL } from '../../../src/main/sync/peers/feed-admission'
import { PEER_FEEDS_AT_ONCE } from '../../../src/main/history/store/peer-feed-follower'

const DEVICES = ['a', 'b', 'c', 'd', 'e']
const KEYS = Array.from({ length: 24 }, (_, i) => `k${i}`)

type Op =
  | { t: 'admit'; device: string; key: string; busy: string[] }
  | { t: 'verified'; key: string }
  | { t: 'forget'; device: string }

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('admit' as const),
      device: fc.constantFrom(...DEVICES),
      key: fc.constantFrom(...KEYS),
      // mostly none: feeds whose blocks are being checked are few
      busy: fc.oneof({ weight: 4, arbitrary: fc.constant<string[]>([]) }, { weight: 1, arbitrary: fc.subarray(KEYS, { maxLength: 8 }) })
    })
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('verified' as const), key: fc.constantFrom(...KEYS) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('forget' as const), device: fc.constantFrom(...DEVICES) }) }
)

const bounds = fc.integer({ min: 1, max: 6 }).chain(perPeer => fc.record({ perPeer: fc.constant(perPeer), total: fc.integer({ min: perPeer, max: 3 * perPeer }) }))

describe('FeedAdmission', () => {
  it('keeps both bounds, takes a peer below its fair share by evicting from the furthest over, and asks every owed peer again', () => {
    fc.assert(fc.property(bounds, fc.array(op, { maxLength: 120 }), ({ perPeer, total }, ops) => {
      const a = new FeedAdmission(perPeer, total)
      /** what each device has pending, oldest first, as this test keeps it */
      const pending = new Map<string, string[]>(DEVICES.map(d => [d, []]))
      const of = (d: string): string[] => pending.get(d) as string[]
      const owner = (key: string): string | undefined => DEVICES.find(d => of(d).includes(key))
      const sum = (): number => DEVICES.reduce((n, d) => n + of(d).length, 0)
      const withPending = (): number => DEVICES.filter(d => of(d).length > 0).length
      const fair = (d: string): number => Math.floor(total / (withPending() + (of(d).length === 0 ? 1 : 0)))
      const share = (d: string): number => sum() * 2 <= total ? perPeer : Math.min(perPeer, fair(d))
      /** devices that had a feed dropped or evicted and were not asked again since */
      const owed = new Set<string>()
      const check = (): void => {
        for (const d of DEVICES) {
          expect(a.pendingOf(d)).toBe(of(d).length)
          expect(a.pendingOf(d)).toBeLessThanOrEqual(perPeer)
        }
        expect(a.pendingOf()).toBe(sum())
        expect(a.pendingOf()).toBeLessThanOrEqual(total)
        // asked exactly when at most half its share is pending
        const due = new Set(a.due())
        for (const d of DEVICES) {
          const expected = owed.has(d) && of(d).length * 2 <= share(d)
          expect(due.has(d), `${d} asked (owed ${owed.has(d)}, ${of(d).length} pending, share ${share(d)})`).toBe(expected)
          if (expected) owed.delete(d)
        }
      }
      for (const o of ops) {
        if (o.t === 'admit') {
          const by = owner(o.key)
          const mine = of(o.device).length
          const full = sum() >= total
          const f = fair(o.device)
          const busy = new Set(o.busy)
          // the peers over their fair share that have a feed not busy, and of those the most pending
          const candidates = DEVICES.filter(d => of(d).length > f && of(d).some(k => !busy.has(k)))
          const most = Math.max(0, ...candidates.map(d => of(d).length))
          const got = a.admit(o.device, o.key, k => busy.has(k))
          if (by !== undefined) {
            expect(got).toEqual({ admitted: true }) // already pending: counted once
            check()
            continue
          }
          const taken = mine < perPeer && (!full || (mine < f && candidates.length > 0))
          expect(got.admitted).toBe(taken)
          // a peer below its share is always taken while nothing is busy
          if (busy.size === 0 && mine < Math.min(perPeer, f)) expect(got.admitted, `${o.device} below its share of ${Math.min(perPeer, f)}`).toBe(true)
          if (!got.admitted) { owed.add(o.device); check(); continue }
          if (full) {
            const ev = got.evicted
            if (ev === undefined) throw new Error('a full total took a feed without evicting one')
            expect(of(ev.device).length, 'evicted from the peer furthest over its share').toBe(most)
            const newest = [...of(ev.device)].reverse().find(k => !busy.has(k))
            expect(ev.key, 'its newest feed not being checked').toBe(newest)
            of(ev.device).splice(of(ev.device).indexOf(ev.key), 1)
            expect(of(ev.device).length, 'never pushed below its fair share').toBeGreaterThanOrEqual(f)
            owed.add(ev.device)
          } else {
            expect(got.evicted).toBeUndefined()
          }
          of(o.device).push(o.key)
        } else if (o.t === 'verified') {
          const by = owner(o.key)
          if (by !== undefined) of(by).splice(of(by).indexOf(o.key), 1)
          const asked = a.verified(o.key)
          for (const d of asked) {
            expect(owed.has(d), `${d} asked again without a drop`).toBe(true)
            owed.delete(d)
          }
        } else {
          a.forget(o.device)
          of(o.device).length = 0
          owed.delete(o.device)
        }
        check()
      }
      // once all that is pending has arrived, every peer owed is asked again
      for (const k of KEYS) {
        const by = owner(k)
        if (by !== undefined) of(by).splice(of(by).indexOf(k), 1)
        for (const d of a.verified(k)) owed.delete(d)
      }
      for (const d of a.due()) owed.delete(d)
      expect([...owed]).toEqual([])
    }), { numRuns: 1000 })
  })

  it('lets a device with nothing pending in while devices at their bound fill the total', () => {
    const a = new FeedAdmission(20, 80)
    for (const d of ['p1', 'p2', 'p3', 'p4']) for (let i = 0; i < 30; i++) a.admit(d, `${d}-${i}`)
    expect(a.pendingOf()).toBe(80)
    expect(a.admit('p1', 'p1-more')).toEqual({ admitted: false })
    // 80 among five: 16 each; the honest device's first feed takes the newest of a planted one's
    expect(a.fairShare('honest')).toBe(16)
    expect(a.admit('honest', 'h0')).toEqual({ admitted: true, evicted: { key: 'p1-19', device: 'p1' } })
    for (let i = 1; i < 16; i++) expect(a.admit('honest', `h${i}`).admitted).toBe(true)
    expect(a.admit('honest', 'h16')).toEqual({ admitted: false })
    expect(a.pendingOf()).toBe(80)
    expect(a.pendingOf('honest')).toBe(16)
    for (const d of ['p1', 'p2', 'p3', 'p4']) expect(a.pendingOf(d)).toBe(16)
    // the planted devices are owed, but they hold their share: not asked again
    expect(a.due()).toEqual([])
    // the honest device is asked again once half its share has arrived
    for (let i = 0; i < 7; i++) expect(a.verified(`h${i}`)).toEqual([])
    expect(a.verified('h7')).toEqual(['honest'])
  })

  it('evicts from the peer furthest over its share, not the first over it', () => {
    const a = new FeedAdmission(12, 24)
    for (let i = 0; i < 8; i++) a.admit('near', `n${i}`)
    for (let i = 0; i < 12; i++) a.admit('far', `f${i}`)
    for (let i = 0; i < 4; i++) a.admit('under', `u${i}`)
    // 24 among four: 6 each; "near" is over by 2, "far" by 6
    expect(a.admit('new', 'x')).toEqual({ admitted: true, evicted: { key: 'f11', device: 'far' } })
    // and never one whose blocks are being checked: the newest of the others
    expect(a.admit('new', 'y', key => key === 'f10')).toEqual({ admitted: true, evicted: { key: 'f9', device: 'far' } })
  })

  it('has bounds above what downloads at once, and a total above one peer\'s', () => {
    expect(MAX_PENDING_PER_PEER).toBeGreaterThanOrEqual(16 * PEER_FEEDS_AT_ONCE)
    expect(MAX_PENDING_TOTAL).toBeGreaterThan(MAX_PENDING_PER_PEER)
    expect(() => new FeedAdmission(10, 5)).toThrow(/bad admission bounds/)
  })
})
