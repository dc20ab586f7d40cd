// Properties of the bounds on mutable state from peers (DESIGN.md, "Trust": peer clocks are
// bounded): for any honest meta entries, adding dishonest ones (a clock naming another device
// than the entry's author, a wall far ahead of the reader's clock, a counter out of range)
// never changes which honest entry wins, the choice depends only on the entries and the
// reader's clock, and a later honest write always wins. Agent epochs out of range never take
// ownership. fast-check prints the seed and path of a failure.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import { honouredEpoch, MAX_EPOCH, nextEpoch, ownerOf } from '../../../src/main/runtime/placement/placement'
import { ConversationDag } from '../../../src/shared/conversation/conversation-dag'
import type { Entry } from '../../../src/shared/entry/entry'
import { MAX_CLOCK_SKEW_MS, MAX_HLC_COUNTER, type Hlc } from '../../../src/shared/entry/hlc'

const HONEST = ['a'.repeat(64), 'b'.repeat(64)]
const MALLORY = 'c'.repeat(64)
const DEVICES = [...HONEST, MALLORY]
const KEYS = ['title', 'autoRevival', 'sandbox']
const NOW = 1_800_000_000_000
const root = makeEntry({ kind: 'conversation', parents: [], body: { title: 'r', nonce: 'n' } }, { conversation: null, device: HONEST[0] as string, ts: 0 })

let serial = 0
function meta (author: string, key: string, hlc: Hlc): Entry {
  return makeEntry({ kind: 'meta', parents: [root.id], body: { key, value: `v${serial++}`, hlc } }, { conversation: root.id, device: author, ts: 1 })
}

/** A clock an honest device could have written: its own device, within the skew of NOW (walls often equal, to test ties). */
const honestArb = fc.record({
  author: fc.constantFrom(...DEVICES),
  key: fc.constantFrom(...KEYS),
  wall: fc.integer({ min: NOW - 5, max: NOW + 5 }).chain(w => fc.constantFrom(w, NOW - 3_600_000, NOW + MAX_CLOCK_SKEW_MS)),
  counter: fc.nat({ max: 3 })
}).map(h => meta(h.author, h.key, { wall: h.wall, counter: h.counter, device: h.author }))

/** What Mallory writes to win: a clock naming another device, far in the future, or with a counter out of range. */
const dishonestArb = fc.record({
  key: fc.constantFrom(...KEYS),
  how: fc.constantFrom('forged device', 'future', 'counter'),
  wall: fc.integer({ min: NOW - 5, max: NOW + 5 }),
  ahead: fc.integer({ min: MAX_CLOCK_SKEW_MS + 1, max: Number.MAX_SAFE_INTEGER - NOW }),
  counter: fc.integer({ min: MAX_HLC_COUNTER + 1, max: Number.MAX_SAFE_INTEGER }),
  named: fc.constantFrom(...HONEST, 'f'.repeat(64))
}).map(d => meta(MALLORY, d.key, d.how === 'forged device'
  ? { wall: d.wall, counter: 0, device: d.named }
  : d.how === 'future' ? { wall: NOW + d.ahead, counter: Number.MAX_SAFE_INTEGER, device: MALLORY } : { wall: d.wall, counter: d.counter, device: MALLORY }))

const clock = (now: number) => ({ now: () => now })
const shuffled = <T>(xs: T[], order: number[]): T[] => {
  const a = [...xs]
  order.forEach((k, i) => { const j = k % a.length; const t = a[i % a.length] as T; a[i % a.length] = a[j] as T; a[j] = t })
  return a
}
const state = (dag: ConversationDag): unknown => KEYS.map(k => [dag.meta(k), ...DEVICES.map(d => dag.metaOf(k, d))])

describe('meta under dishonest clocks', () => {
  it('dishonest entries never change which honest entry wins; the choice depends only on the entries and the clock', () => {
    fc.assert(fc.property(fc.array(honestArb, { maxLength: 12 }), fc.array(dishonestArb, { minLength: 1, maxLength: 8 }), fc.array(fc.nat(), { maxLength: 20 }), (honest, dishonest, order) => {
      const base = new ConversationDag(root.id, [root, ...honest], clock(NOW))
      const attacked = new ConversationDag(root.id, shuffled([root, ...honest, ...dishonest], order), clock(NOW))
      expect(state(attacked)).toEqual(state(base))
      // the same entries and clock in another order: the same choice
      expect(state(new ConversationDag(root.id, [...dishonest, ...honest].reverse().concat([root]), clock(NOW)))).toEqual(state(attacked))
      // union keeps the reader's clock
      expect(state(ConversationDag.union(attacked, base))).toEqual(state(base))
    }), { numRuns: 300 })
  })

  it('a later honest write always wins, and is not dragged ahead by a far-future clock', () => {
    fc.assert(fc.property(fc.array(honestArb, { maxLength: 12 }), fc.array(dishonestArb, { maxLength: 8 }), fc.constantFrom(...HONEST), fc.constantFrom(...KEYS), fc.nat({ max: 10_000 }), (honest, dishonest, writer, key, later) => {
      const dag = new ConversationDag(root.id, [root, ...honest, ...dishonest], clock(NOW + later))
      const hlc = dag.nextMetaHlc(key, writer)
      expect(hlc.device).toBe(writer)
      expect(hlc.wall).toBeLessThanOrEqual(NOW + later + MAX_CLOCK_SKEW_MS)
      const mine = meta(writer, key, hlc)
      dag.add(mine)
      expect(dag.meta(key)?.value).toBe((mine.body as { value: unknown }).value)
      expect(dag.metaOf(key, writer)?.value).toBe((mine.body as { value: unknown }).value)
    }), { numRuns: 300 })
  })

  it('a far-future clock counts once real time reaches it, not before', () => {
    const honest = meta(HONEST[0] as string, 'title', { wall: NOW, counter: 0, device: HONEST[0] as string })
    const ahead = meta(MALLORY, 'title', { wall: NOW + 10 * MAX_CLOCK_SKEW_MS, counter: 0, device: MALLORY })
    const at = (now: number): unknown => new ConversationDag(root.id, [root, honest, ahead], clock(now)).meta('title')?.value
    expect(at(NOW)).toBe((honest.body as { value: unknown }).value)
    expect(at(NOW + 9 * MAX_CLOCK_SKEW_MS - 1)).toBe((honest.body as { value: unknown }).value)
    expect(at(NOW + 9 * MAX_CLOCK_SKEW_MS)).toBe((ahead.body as { value: unknown }).value)
  })
})

describe('agent epochs from peers', () => {
  const started = (device: string, epoch: number): Entry => makeEntry({ kind: 'agent.started', parents: [root.id], body: { epoch, reason: 'user' } }, { conversation: root.id, device, ts: serial++ })
  it('an epoch out of range never takes ownership, and the next epoch always counts', () => {
    const honestArbE = fc.record({ device: fc.constantFrom(...DEVICES), epoch: fc.nat({ max: 20 }) }).map(s => started(s.device, s.epoch))
    const absurdArb = fc.integer({ min: MAX_EPOCH + 1, max: Number.MAX_SAFE_INTEGER }).map(epoch => started(MALLORY, epoch))
    fc.assert(fc.property(fc.array(honestArbE, { maxLength: 10 }), fc.array(absurdArb, { minLength: 1, maxLength: 4 }), fc.array(fc.nat(), { maxLength: 10 }), (honest, absurd, order) => {
      const owner = ownerOf(shuffled([...honest, ...absurd], order))
      expect(owner).toEqual(ownerOf(honest))
      expect(honouredEpoch(nextEpoch(owner))).toBe(true)
    }), { numRuns: 300 })
  })
})
