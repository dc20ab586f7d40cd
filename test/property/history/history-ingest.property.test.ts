// A peer's feeds are read, checked and indexed in batches whose bounds depend on how the
// blocks arrive (each batch is what the storage holds contiguously, at most readChunk
// blocks). Whatever the split, the result must be what the delivered entries determine: the
// DAG, the summary, the watermarks, the invalid blocks reported once each, every entry
// announced as joined exactly once, and the entry cache read back after a restart.
// ARBOR_LONG=1 runs 100 cases instead of 12. fast-check prints the seed and path of a
// failure: replay with fc.assert(..., { seed, path }).
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import Corestore from 'corestore'
import type Hypercore from 'hypercore'
import crypto from 'hypercore-crypto'
import { HistoryStore, type EntriesEvent, type InvalidEvent } from '../../../src/main/history/history-store'
import { makeFeedHeader, type DeviceKeyPair } from '../../../src/main/history/store/feed-header'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import { ConversationDag } from '../../../src/shared/conversation/conversation-dag'
import { encodeEntry, type Entry } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'

const { dirs } = perTest()
const RUNS = process.env.ARBOR_LONG === '1' ? 100 : 12

interface Step { p1: number; p2: number | undefined; feed: number; ts: number; withheld: boolean }
interface Scenario {
  steps: Step[]
  /** sort keys: the order of each feed's blocks */
  order: number[]
  /** where junk blocks go (a position in a feed), and which feed */
  junk: Array<{ at: number; feed: number; kind: 'json' | 'author' }>
  /** the sizes of the appends that bring the blocks (cycled) */
  appends: number[]
  readChunk: number
}

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  steps: fc.array(fc.record({
    p1: fc.nat(),
    p2: fc.option(fc.nat(), { nil: undefined }),
    feed: fc.nat({ max: 1 }),
    ts: fc.nat({ max: 9 }),
    withheld: fc.nat({ max: 11 }).map(n => n === 0)
  }), { maxLength: 40 }),
  order: fc.array(fc.nat(), { maxLength: 45 }),
  junk: fc.array(fc.record({ at: fc.nat({ max: 40 }), feed: fc.nat({ max: 1 }), kind: fc.constantFrom('json' as const, 'author' as const) }), { maxLength: 3 }),
  appends: fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 6 }),
  readChunk: fc.integer({ min: 1, max: 9 })
})

interface Built {
  root: Entry
  feeds: Array<{ device: DeviceKeyPair; blocks: Buffer[]; junkSeqs: number[] }>
  delivered: Entry[]
}

function build (sc: Scenario, devices: DeviceKeyPair[], feedKeys: string[]): Built {
  const device = (i: number): string => (devices[i] as DeviceKeyPair).publicKey.toString('hex')
  const root = makeEntry({ kind: 'conversation', body: { title: 'ingest', nonce: 'n' }, parents: [] }, { conversation: null, device: device(0), ts: 1 })
  const all: Entry[] = [root]
  const byFeed: Entry[][] = [[root], []]
  const delivered: Entry[] = [root]
  sc.steps.forEach((s, i) => {
    const p1 = (all[s.p1 % all.length] as Entry).id
    const p2 = s.p2 === undefined ? undefined : (all[s.p2 % all.length] as Entry).id
    const parents = p2 === undefined || p2 === p1 ? [p1] : [p1, p2]
    const e = makeEntry({ kind: 'user', body: { text: `e${i}` }, parents }, { conversation: root.id, device: device(s.feed), ts: 2 + s.ts })
    all.push(e)
    if (s.withheld) return // never delivered: its descendants wait for ever
    byFeed[s.feed]?.push(e)
    delivered.push(e)
  })
  let k = 0
  const feeds = byFeed.map((entries, f) => {
    const order = entries.map((e, i) => ({ e, key: sc.order[k++ % Math.max(1, sc.order.length)] ?? i }))
    order.sort((a, b) => a.key - b.key)
    const blocks = order.map(o => Buffer.from(encodeEntry(o.e)))
    for (const j of sc.junk.filter(j => j.feed === f)) {
      const at = Math.min(j.at, blocks.length)
      const other = makeEntry({ kind: 'user', body: { text: 'forged' }, parents: [root.id] }, { conversation: root.id, device: device(1 - f), ts: 3 })
      blocks.splice(at, 0, j.kind === 'json' ? Buffer.from('{not json') : Buffer.from(encodeEntry(other)))
    }
    const header = Buffer.from(JSON.stringify(makeFeedHeader({ type: 'arbor/conversation', feed: feedKeys[f] as string, conversation: root.id }, devices[f] as DeviceKeyPair)))
    const withHeader = [header, ...blocks]
    const junkSeqs = withHeader.map((b, i) => ({ b, i })).filter(({ b, i }) => i > 0 && !entries.some(e => b.equals(Buffer.from(encodeEntry(e))))).map(({ i }) => i)
    return { device: devices[f] as DeviceKeyPair, blocks: withHeader, junkSeqs }
  })
  return { root, feeds, delivered }
}

describe('indexing a peer\'s feeds in batches', () => {
  it('yields, for any split of the blocks into appends and read batches, the DAG, summary, watermarks, reports and cache the delivered entries determine', async () => {
    await fc.assert(fc.asyncProperty(scenarioArb, async sc => {
      const source = new Corestore(await dirs.make())
      const cores: Hypercore.Core[] = [source.get({ name: 'f0' }), source.get({ name: 'f1' })]
      await Promise.all(cores.map(c => c.ready()))
      const devices = [crypto.keyPair(), crypto.keyPair()]
      const { root, feeds, delivered } = build(sc, devices, cores.map(c => (c.key as Buffer).toString('hex')))
      const dir = await dirs.make()
      const b = new HistoryStore({ dir, log: memoryLogger(), readChunk: sc.readChunk })
      await b.ready()
      const s1 = source.replicate(true)
      const s2 = b.replicate(false)
      s1.pipe(s2).pipe(s1)
      const swallow = (): void => {}
      ;(s1 as unknown as NodeJS.EventEmitter).on('error', swallow)
      ;(s2 as unknown as NodeJS.EventEmitter).on('error', swallow)
      const invalid: InvalidEvent[] = []
      const joined: string[] = []
      b.on('invalid', (ev: InvalidEvent) => invalid.push(ev))
      b.on('entries', (ev: EntriesEvent) => { for (const e of ev.joined) joined.push(e.id) })
      try {
        const keys = cores.map(c => (c.key as Buffer).toString('hex'))
        for (const k of keys) await b.addFeed(root.id, k)
        // The blocks arrive in appends of the scenario's sizes, the reader running between them.
        let a = 0
        for (const [f, feed] of feeds.entries()) {
          for (let i = 0; i < feed.blocks.length;) {
            const n = sc.appends[a++ % sc.appends.length] as number
            await (cores[f] as Hypercore.Core).append(feed.blocks.slice(i, i + n))
            i += n
            await new Promise(resolve => setImmediate(resolve))
          }
        }
        await until(() => keys.every((k, f) => b.feedRecord(k)?.indexed === feeds[f]?.blocks.length), 'every block indexed', 20_000)

        const ref = new ConversationDag(root.id, delivered)
        const dag = await b.open(root.id)
        expect(dag.snapshot()).toEqual(ref.snapshot())
        const s = b.summary(root.id)
        expect({ size: s?.size, waiting: s?.waiting, heads: [...(s?.heads ?? [])].sort(), updatedAt: s?.updatedAt, title: s?.title })
          .toEqual({ size: ref.size, waiting: ref.size - ref.joinedSize, heads: ref.headIds().sort(), updatedAt: ref.updatedAt, title: 'ingest' })
        // every junk block reported once, nothing else
        const reported = invalid.map(ev => `${ev.feed}:${ev.seq}`).sort()
        const expected = feeds.flatMap((feed, f) => feed.junkSeqs.map(seq => `${keys[f] as string}:${seq}`)).sort()
        expect(reported).toEqual(expected)
        // every joined entry announced once
        expect([...joined].sort()).toEqual([...ref.snapshot().joined])

        // the entry cache holds exactly the delivered entries: a restart reads the same DAG
        await b.close()
        const again = new HistoryStore({ dir, log: memoryLogger() })
        await again.ready()
        try {
          expect((await again.open(root.id)).snapshot()).toEqual(ref.snapshot())
          expect(keys.map(k => again.feedRecord(k)?.indexed)).toEqual(feeds.map(f => f.blocks.length))
        } finally {
          await again.close()
        }
      } finally {
        s1.destroy()
        s2.destroy()
        await b.close()
        await source.close()
      }
    }), { numRuns: RUNS })
  }, 180_000)
})
