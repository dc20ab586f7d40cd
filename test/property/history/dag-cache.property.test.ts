// Properties of DagCache (src/main/history/store/dag-cache.ts) against a reference model, over random
// sequences of sets, gets, growth, pins and releases: the resident set and its recency order
// are the model's, it fits the budget unless everything resident is pinned, eviction takes the
// least recently used unpinned value first, a pinned key is never evicted, and a value read
// again after its eviction (from its source, as the store reads a conversation's entry cache)
// is equal to the one evicted. fast-check prints the seed and path of a failure: replay with
// fc.assert(..., { seed, path }).
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { DagCache } from '../../../src/main/history/store/dag-cache'
import { ConversationDag } from '../../../src/shared/conversation/conversation-dag'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import type { Entry } from '../../../src/shared/entry/entry'

const RUNS = process.env.ARBOR_LONG === '1' ? 2000 : 200
const KEYS = ['a', 'b', 'c', 'd', 'e', 'f'] as const

type Op =
  | { op: 'set'; key: number; bytes: number }
  | { op: 'get'; key: number }
  | { op: 'resize'; key: number; bytes: number }
  | { op: 'pin'; key: number }
  | { op: 'release'; which: number }
  | { op: 'delete'; key: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('set' as const), key: fc.nat({ max: KEYS.length - 1 }), bytes: fc.nat({ max: 60 }) }),
  fc.record({ op: fc.constant('get' as const), key: fc.nat({ max: KEYS.length - 1 }) }),
  fc.record({ op: fc.constant('resize' as const), key: fc.nat({ max: KEYS.length - 1 }), bytes: fc.nat({ max: 60 }) }),
  fc.record({ op: fc.constant('pin' as const), key: fc.nat({ max: KEYS.length - 1 }) }),
  fc.record({ op: fc.constant('release' as const), which: fc.nat() }),
  fc.record({ op: fc.constant('delete' as const), key: fc.nat({ max: KEYS.length - 1 }) })
)

/** The reference: resident keys least recently used first, sizes, pin counts; eviction spelt out. */
class Model {
  order: Array<{ key: string; bytes: number }> = []
  pins = new Map<string, number>()
  constructor (readonly budget: number) {}
  total (): number { return this.order.reduce((n, i) => n + i.bytes, 0) }
  touch (key: string, bytes?: number): void {
    const i = this.order.findIndex(x => x.key === key)
    const item = this.order.splice(i, 1)[0] as { key: string; bytes: number }
    this.order.push({ key, bytes: bytes ?? item.bytes })
  }

  /** Evicts unpinned keys, least recently used first, until within the budget; returns them in order. */
  evict (): string[] {
    const out: string[] = []
    for (const item of [...this.order]) {
      if (this.total() <= this.budget) break
      if ((this.pins.get(item.key) ?? 0) > 0) continue
      this.order = this.order.filter(x => x !== item)
      out.push(item.key)
    }
    return out
  }
}

describe('DagCache', () => {
  it('matches the LRU model: within budget unless all pinned, LRU first, pinned never evicted', () => {
    fc.assert(fc.property(fc.nat({ max: 150 }), fc.array(opArb, { maxLength: 60 }), (budget, ops) => {
      const evictedNow: string[] = []
      const cache = new DagCache<string>(budget, (key, value) => { expect(value).toBe(`v:${key}`); evictedNow.push(key) })
      const m = new Model(budget)
      const releases: Array<{ key: string; release: () => void }> = []
      for (const o of ops) {
        evictedNow.length = 0
        let expected: string[] = []
        switch (o.op) {
          case 'set': {
            const key = KEYS[o.key] as string
            cache.set(key, `v:${key}`, o.bytes)
            m.order = m.order.filter(x => x.key !== key)
            m.order.push({ key, bytes: o.bytes })
            expected = m.evict()
            break
          }
          case 'get': {
            const key = KEYS[o.key] as string
            const v = cache.get(key)
            const resident = m.order.some(x => x.key === key)
            expect(v).toBe(resident ? `v:${key}` : undefined)
            if (resident) m.touch(key)
            break
          }
          case 'resize': {
            const key = KEYS[o.key] as string
            cache.resize(key, o.bytes)
            if (m.order.some(x => x.key === key)) { m.touch(key, o.bytes); expected = m.evict() }
            break
          }
          case 'pin': {
            const key = KEYS[o.key] as string
            releases.push({ key, release: cache.pin(key) })
            m.pins.set(key, (m.pins.get(key) ?? 0) + 1)
            break
          }
          case 'release': {
            if (releases.length === 0) break
            const r = releases.splice(o.which % releases.length, 1)[0] as { key: string; release: () => void }
            r.release()
            r.release() // idempotent: a second call releases nothing more
            const n = (m.pins.get(r.key) ?? 1) - 1
            if (n === 0) m.pins.delete(r.key)
            else m.pins.set(r.key, n)
            expected = m.evict()
            break
          }
          case 'delete': {
            const key = KEYS[o.key] as string
            cache.delete(key)
            m.order = m.order.filter(x => x.key !== key)
            break
          }
        }
        // least recently used first, exactly the model's choice
        expect(evictedNow).toEqual(expected)
        for (const key of evictedNow) expect(m.pins.has(key)).toBe(false)
        // the resident set, in recency order (peek does not change it)
        const resident = KEYS.filter(k => cache.has(k))
        expect(new Set(resident)).toEqual(new Set(m.order.map(x => x.key)))
        for (const x of m.order) {
          expect(cache.peek(x.key)).toBe(`v:${x.key}`)
          expect(cache.sizeOf(x.key)).toBe(x.bytes)
        }
        const st = cache.stats
        expect(st).toMatchObject({ budgetBytes: budget, bytes: m.total(), count: m.order.length })
        // never over budget except for values in use
        if (st.bytes > budget) expect(m.order.every(x => m.pins.has(x.key))).toBe(true)
        for (const k of KEYS) expect(cache.isPinned(k)).toBe(m.pins.has(k))
      }
      // the recency order itself: evicting everything (budget pressure, nothing pinned) goes oldest first
      evictedNow.length = 0
      const expected: string[] = []
      for (const r of releases) {
        r.release() // a released value over the budget goes at once
        const n = (m.pins.get(r.key) ?? 1) - 1
        if (n === 0) m.pins.delete(r.key)
        else m.pins.set(r.key, n)
        expected.push(...m.evict())
      }
      expect(evictedNow).toEqual(expected)
      evictedNow.length = 0
      cache.set('zz', 'v:zz', budget + 1)
      expect(evictedNow).toEqual([...m.order.map(x => x.key), 'zz'])
    }), { numRuns: RUNS })
  })

  it('a DAG read again after its eviction is equal to the one evicted', () => {
    // A source of entries per conversation (the entry cache), DAGs built from it on a miss.
    const device = 'd'.repeat(64)
    const convs = Array.from({ length: 4 }, (_, i) => {
      const root = makeEntry({ kind: 'conversation', parents: [], body: { title: `c${i}`, nonce: String(i) } }, { conversation: null, device, ts: i })
      return { root, entries: [root] as Entry[] }
    })
    fc.assert(fc.property(fc.nat({ max: 20_000 }), fc.array(fc.record({ c: fc.nat({ max: 3 }), grow: fc.boolean(), p: fc.nat() }), { maxLength: 50 }), (budget, ops) => {
      for (const c of convs) c.entries = [c.root]
      const cache = new DagCache<ConversationDag>(budget)
      const sizeOf = (d: ConversationDag): number => 1000 + 500 * d.size
      const open = (i: number): ConversationDag => {
        const c = convs[i] as typeof convs[number]
        const hit = cache.get(c.root.id)
        if (hit !== undefined) return hit
        const d = new ConversationDag(c.root.id, c.entries)
        cache.set(c.root.id, d, sizeOf(d))
        return d
      }
      for (const o of ops) {
        const c = convs[o.c] as typeof convs[number]
        const dag = open(o.c)
        if (o.grow) {
          const parent = c.entries[o.p % c.entries.length] as Entry
          const e = makeEntry({ kind: 'user', parents: [parent.id], body: { text: `m${c.entries.length}` } }, { conversation: c.root.id, device, ts: c.entries.length })
          c.entries.push(e)
          dag.add(e)
          cache.resize(c.root.id, sizeOf(dag))
        }
        // whatever was evicted meanwhile, every conversation answers as its full history does
        for (let i = 0; i < convs.length; i++) {
          const ci = convs[i] as typeof convs[number]
          expect(open(i).snapshot()).toEqual(new ConversationDag(ci.root.id, ci.entries).snapshot())
        }
      }
    }), { numRuns: 50 })
  })
})
