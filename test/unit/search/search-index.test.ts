// The full-text index on real stores: own appends and entries replicated from a peer are found,
// in every branch; a restart reads its segments without indexing any conversation again; a
// log that is not one is rebuilt from the entries; its memory does not grow with the documents.
import fsp from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { HistoryStore } from '../../../src/main/history/history-store'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import { indexDir } from '../../../src/main/history/index/history-index'
import { SearchIndex } from '../../../src/main/search/search-index'
import type { Entry } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { DagHistory } from '../../helpers/dag-history'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'

const { dirs, defer } = perTest()

async function store (dir?: string): Promise<{ s: HistoryStore; search: SearchIndex; logs: ReturnType<typeof memoryLogger> }> {
  const logs = memoryLogger()
  const s = new HistoryStore({ dir: dir ?? await dirs.make(), log: logs })
  await s.ready()
  const search = new SearchIndex({ source: s, dir: indexDir(s.dir), log: logs })
  defer(() => s.close(), () => search.close())
  await search.open()
  return { s, search, logs }
}

function connect (a: HistoryStore, b: HistoryStore): void {
  const s1 = a.replicate(true)
  const s2 = b.replicate(false)
  s1.pipe(s2).pipe(s1)
  s1.on('error', () => undefined)
  s2.on('error', () => undefined)
  defer(() => { s1.destroy(); s2.destroy() })
}

const user = (text: string, parent: string) => ({ kind: 'user' as const, body: { text }, parents: [parent] })

describe('search index on a history store', () => {
  it('finds own entries in an old branch and entries a peer wrote, with title and snippet', async () => {
    const a = await store()
    const b = await store()
    const root = await a.s.createConversation({ title: 'Trip planning' })
    const [old] = await a.s.append(root.id, [user('we could take the zeppelin over the alps', root.id)])
    // a newer branch from the root: the old one is no longer shown, still searched
    await a.s.append(root.id, [user('or the train, simpler', root.id)])
    let hits = (await a.search.query('zeppe')).hits
    expect(hits.map(h => h.entry)).toEqual([(old as Entry).id])
    expect(hits[0]).toMatchObject({ conversation: root.id, title: 'Trip planning' })
    expect(hits[0]?.snippet).toContain('zeppelin')

    connect(a.s, b.s)
    await b.s.addFeed(root.id, a.s.feeds(root.id).find(f => f.own)?.key as string)
    await until(async () => (await b.search.query('zeppelin')).hits.length === 1, 'b to index what a wrote')
    const [reply] = await b.s.append(root.id, [user('a zeppelin is slow', (old as Entry).id)])
    await a.s.addFeed(root.id, b.s.feeds(root.id).find(f => f.own)?.key as string)
    await until(async () => (await a.search.query('zeppelin')).hits.length === 2, 'a to index what b wrote')
    hits = (await a.search.query('zeppelin')).hits
    expect(hits.map(h => h.entry)).toEqual([(reply as Entry).id, (old as Entry).id])
    expect((await a.search.query('trip plan')).hits.map(h => h.entry)).toEqual([root.id])
    expect((await a.search.query('zeppelin train')).hits).toEqual([])
  })

  it('restarts from its log without indexing a conversation again, and rebuilds a log that is not one', async () => {
    const dir = await dirs.make()
    let x = await store(dir)
    const root = await x.s.createConversation({ title: 'log' })
    for (let i = 0; i < 20; i++) await x.s.append(root.id, [user(`entry number${i} words`, root.id)])
    expect(x.search.stats.reindexed).toBe(0) // indexed as its entries joined
    await x.search.close()
    await x.s.close()
    x = await store(dir)
    expect(x.search.stats).toMatchObject({ reindexed: 0, fromManifest: true, records: 0 }) // nothing past the segments to read
    expect((await x.search.query('number1')).hits).toHaveLength(11) // number1, number10…19
    await x.search.close()
    await x.s.close()
    await fsp.writeFile(x.search.file, 'garbage')
    x = await store(dir)
    expect(x.search.stats.reindexed).toBe(1)
    expect(x.logs.lines.some(l => l.message.includes('rebuilding the search index'))).toBe(true)
    expect((await x.search.query('words', { limit: 200 })).hits).toHaveLength(20)
  })
})

describe('search index memory', () => {
  it('holds about the same memory at 1,500 and 6,000 documents: older postings are in segments, merged to a few', async () => {
    const history = new DagHistory()
    const index = new SearchIndex({ source: history, dir: await dirs.make(), log: memoryLogger(), liveDocs: 250, flushMs: 1 })
    defer(() => index.close())
    await index.open()
    const device = 'f'.repeat(64)
    const root = makeEntry({ kind: 'conversation', parents: [], body: { title: 'many', nonce: 'm' } }, { conversation: null, device, ts: 0 })
    history.deliver(root)
    let parent = root
    const grow = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i++) {
        parent = makeEntry({ kind: 'user', body: { text: `word${i % 97} other${i % 13} unique${parent.ts + 1} text` }, parents: [parent.id] }, { conversation: root.id, device, ts: parent.ts + 1 })
        history.deliver(parent)
        if (i % 100 === 99) await index.flush()
      }
      await index.flush()
      await index.query('word1') // every entry delivered is indexed once a query has run
    }
    await grow(1500)
    const small = index.size
    await grow(4500)
    const large = index.size
    expect(large.docs).toBe(6001)
    // the live part is at most its budget; the rest is segment footers
    expect(large.memoryBytes).toBeLessThan(small.memoryBytes * 1.5)
    expect(large.segments).toBeLessThanOrEqual(8)
    expect(large.segmentDocs).toBeGreaterThan(5000)
    expect((await index.query('unique6000')).hits.map(h => h.ts)).toEqual([6000])
    expect((await index.query('word5 other5', { limit: 200 })).hits.length).toBe(history.scan('word5 other5').length)
  })
})
