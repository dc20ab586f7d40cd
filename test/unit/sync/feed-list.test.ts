// FeedList's digest is a function of the list alone (feed-list.ts): whatever order of changes
// (and feeds taken out) made it, whatever was restored from a save or built whole and changed
// since. fast-check prints the seed and path of a failure: replay with fc.assert(..., { seed, path }).
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { FeedList, feedsDigest } from '../../../src/main/sync/peers/feed-list'

const key = fc.constantFrom(...Array.from({ length: 6 }, (_, i) => String(i).repeat(64)))
const conv = fc.constantFrom('a'.repeat(64), 'b'.repeat(64))
const change = fc.record({ key, conversation: conv, length: fc.nat({ max: 5 }) })
/** a change, or a feed taken out of the list */
const edit = fc.oneof({ weight: 4, arbitrary: change }, { weight: 1, arbitrary: fc.record({ key, gone: fc.constant(true as const) }) })
type Edit = { key: string; conversation: string; length: number } | { key: string; gone: true }
const apply = (l: FeedList, e: Edit): void => { if ('gone' in e) l.delete(e.key); else l.set(e.key, e) }

/** The list a fresh FeedList would hold, built in one go from `entries`. */
function fresh (entries: Iterable<[string, { conversation: string; length: number }]>): FeedList {
  const l = new FeedList()
  for (const [k, f] of entries) l.set(k, f)
  return l
}

describe('FeedList', () => {
  it('has the digest of its final list, whatever the order of changes, and a restored list changed since has it too', () => {
    fc.assert(fc.property(fc.array(edit, { maxLength: 30 }), fc.array(edit, { maxLength: 10 }), fc.boolean(), (first, then, clear) => {
      const l = new FeedList()
      for (const e of first) apply(l, e)
      if (clear) l.clear()
      const restored = FeedList.restore(new Map(l.feeds), l.digest)
      // built whole: its digest is computed when first read, after these edits
      const built = FeedList.of(new Map(l.feeds))
      for (const e of then) { apply(l, e); apply(restored, e); apply(built, e) }
      const reference = fresh([...l.feeds].reverse())
      expect(l.digest).toBe(reference.digest)
      expect(restored.digest).toBe(reference.digest)
      expect(built.digest).toBe(reference.digest)
      expect(l.sorted()).toBe(feedsDigest(l.list()))
    }))
  })

  it('tells lists apart that differ in one length or one conversation', () => {
    fc.assert(fc.property(fc.array(change, { minLength: 1, maxLength: 20 }), fc.nat(), (changes, pick) => {
      const l = fresh(changes.map(c => [c.key, c]))
      const [k, f] = [...l.feeds][pick % l.size] as [string, { conversation: string; length: number }]
      expect(fresh([...l.feeds, [k, { ...f, length: f.length + 1 }]]).digest).not.toBe(l.digest)
      expect(fresh([...l.feeds, [k, { ...f, conversation: f.conversation === 'a'.repeat(64) ? 'b'.repeat(64) : 'a'.repeat(64) }]]).digest).not.toBe(l.digest)
    }))
  })
})
