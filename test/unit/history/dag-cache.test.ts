// The history store's DAG cache (dag-cache.ts) at work: many conversations opened under a small
// budget stay within it, a DAG in use survives, answers after eviction and reload are the same,
// and a peer's entries for a conversation no longer in memory are there when it is opened again.
// Collection is forced (gc) so that an evicted DAG nobody holds is really gone and read again.
import { describe, expect, it } from 'vitest'
import fs from 'node:fs/promises'
import path from 'node:path'
import v8 from 'node:v8'
import vm from 'node:vm'
import { HistoryStore, type EntriesEvent } from '../../../src/main/history/history-store'
import { ConversationDag } from '../../../src/shared/conversation/conversation-dag'
import type { Entry, EntryDraft } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'

const { dirs, defer } = perTest()

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc') as () => void
/** Collects everything unreachable, evicted DAGs nobody holds included (after the current job). */
async function collect (): Promise<void> {
  await new Promise(resolve => setImmediate(resolve))
  gc()
  await new Promise(resolve => setImmediate(resolve))
}

async function store (dagCacheBytes?: number): Promise<HistoryStore & { logs: ReturnType<typeof memoryLogger> }> {
  const logs = memoryLogger()
  const s = Object.assign(new HistoryStore({ dir: await dirs.make(), log: logs, ...(dagCacheBytes !== undefined ? { dagCacheBytes } : {}) }), { logs })
  defer(() => s.close())
  await s.ready()
  return s
}

const text = (i: number, n: number): string => `message ${n} of conversation ${i}: ` + 'lorem ipsum dolor sit amet '.repeat(10)

/** A few entries with a branch and a title, as the store acknowledged them. */
async function fill (s: HistoryStore, i: number): Promise<Entry[]> {
  const root = await s.createConversation({ title: `c${i}` })
  const drafts: EntryDraft[] = [
    { kind: 'user', body: { text: text(i, 0) }, parents: [root.id] },
    { kind: 'assistant', body: { text: text(i, 1) }, parents: ['$0'] },
    { kind: 'user', body: { text: text(i, 2) }, parents: [root.id] }, // an edit: a second branch
    { kind: 'meta', body: { key: 'title', value: `renamed ${i}`, hlc: { wall: 1, counter: 0, device: s.device } }, parents: ['$1'] }
  ]
  return [root, ...await s.append(root.id, drafts)]
}

const BUDGET = 96 * 1024

describe('the DAG cache of the history store', () => {
  it('keeps opened conversations within the budget, answering the same after eviction and reload', async () => {
    const s = await store(BUDGET)
    const N = 250
    const written: Entry[][] = []
    for (let i = 0; i < N; i++) written.push(await fill(s, i))
    const id = (i: number): string => (written[i] as Entry[])[0]?.id as string
    const reference = written.map(es => new ConversationDag(es[0]?.id as string, es).snapshot())
    const summaries = new Map(s.list().map(x => [x.id, x]))

    // In use while everything else is opened: one held by an agent (pinned), one a caller keeps.
    const release = s.hold(id(1))
    await s.open(id(1))
    const kept = await s.open(id(2))
    // the pinned one's entry cache goes: were it read again, it would be re-read from its feeds and say so
    await fs.rm(path.join(s.dir, 'index', 'entries', `${id(1)}.jsonl`))

    // (writing them evicted all but the last few already)
    let maxBytes = 0
    for (let i = 0; i < N; i++) {
      const dag = await s.open(id(i))
      expect(dag.snapshot()).toEqual(reference[i])
      expect(dag.title()).toBe(`renamed ${i}`)
      const st = s.dagCacheStats()
      maxBytes = Math.max(maxBytes, st.bytes)
      expect(st.bytes).toBeLessThanOrEqual(BUDGET)
      if (i % 50 === 0) await collect()
    }
    const st = s.dagCacheStats()
    expect(st.budgetBytes).toBe(BUDGET)
    expect(st.count).toBeLessThan(N / 10)
    expect(st.evictions).toBeGreaterThan(N)
    expect(maxBytes).toBeGreaterThan(BUDGET / 2) // the budget is used, not just respected

    // The pinned DAG never left memory: its missing cache file was never noticed.
    expect(s.logs.lines.filter(l => l.message.includes('re-reading its feeds'))).toEqual([])
    // The kept one was evicted long ago but is not stale: it grows with the conversation, and is the one open() gives.
    const [more] = await s.append(id(2), [{ kind: 'user', body: { text: 'later' }, parents: [id(2)] }])
    expect(kept.has((more as Entry).id)).toBe(true)
    expect(await s.open(id(2))).toBe(kept)
    release()

    // Summaries never depended on what is in memory.
    for (const x of s.list()) if (x.id !== id(2)) expect(x).toEqual(summaries.get(x.id))

    // After a restart, the same answers (the entry caches were complete through all the evictions).
    await s.close()
    const again = new HistoryStore({ dir: s.dir, log: memoryLogger(), dagCacheBytes: BUDGET })
    defer(() => again.close())
    await again.ready()
    for (let i = 3; i < N; i += 37) expect((await again.open(id(i))).snapshot()).toEqual(reference[i])
  })

  it('indexes entries appended to a conversation no longer in memory, and shows them when it is opened again', async () => {
    const s = await store(BUDGET)
    const first = await fill(s, 0)
    const conv = first[0]?.id as string
    for (let i = 1; i < 40; i++) await fill(s, i) // first is evicted
    await collect()
    const heard: EntriesEvent[] = []
    s.on('entries', (ev: EntriesEvent) => { if (ev.conversation === conv) heard.push(ev) })
    const [a] = await s.append(conv, [{ kind: 'user', body: { text: 'after eviction' }, parents: [first[4]?.id as string] }])
    expect(heard.flatMap(ev => ev.joined.map(e => e.id))).toEqual([(a as Entry).id])
    for (let i = 40; i < 80; i++) await fill(s, i)
    await collect()
    const dag = await s.open(conv)
    expect(dag.snapshot()).toEqual(new ConversationDag(conv, [...first, a as Entry]).snapshot())
    expect(s.summary(conv)).toMatchObject({ size: 6, waiting: 0, title: 'renamed 0' })
  })

  it('sees a peer\'s entries that arrived for an evicted conversation when it is opened again', async () => {
    const a = await store()
    const b = await store(BUDGET)
    const written = await fill(a, 0)
    const conv = written[0]?.id as string
    const s1 = a.replicate(true)
    const s2 = b.replicate(false)
    s1.pipe(s2).pipe(s1)
    defer(() => { s1.destroy(); s2.destroy() })
    const feed = a.feeds(conv).find(f => f.own)?.key as string
    await b.updateFeed(conv, feed, a.availableLength(feed))
    await until(() => b.summary(conv)?.size === 5, 'b to hold a\'s conversation')
    expect((await b.open(conv)).size).toBe(5)

    // b works in other conversations until a's is evicted and collected
    for (let i = 1; i < 40; i++) await fill(b, i)
    await collect()
    const before = b.dagCacheStats().evictions

    // a writes more, some of it branching from an old entry; b indexes it without anyone having it open
    const heard: Entry[] = []
    b.on('entries', (ev: EntriesEvent) => { if (ev.conversation === conv) heard.push(...ev.joined) })
    const more = await a.append(conv, [
      { kind: 'user', body: { text: 'from a, later' }, parents: [written[2]?.id as string] },
      { kind: 'assistant', body: { text: 'answer' }, parents: ['$0'] },
      { kind: 'meta', body: { key: 'title', value: 'renamed on a', hlc: { wall: 2, counter: 0, device: a.device } }, parents: ['$1'] }
    ])
    await b.updateFeed(conv, feed, a.availableLength(feed))
    await until(() => b.summary(conv)?.size === 8, 'b to index a\'s new entries')
    expect(heard.map(e => e.id)).toEqual(more.map(e => e.id))
    expect(b.summary(conv)).toMatchObject({ title: 'renamed on a', waiting: 0 })

    for (let i = 40; i < 80; i++) await fill(b, i)
    await collect()
    expect(b.dagCacheStats().evictions).toBeGreaterThan(before)
    const dag = await b.open(conv)
    expect(dag.snapshot()).toEqual((await a.open(conv)).snapshot())
    expect(dag.title()).toBe('renamed on a')
    expect(b.dagCacheStats().bytes).toBeLessThanOrEqual(BUDGET)
  })

  it('keeps an acknowledged entry whose cache line failed when the DAG is evicted and read again', async () => {
    const s = await store(BUDGET)
    const written = await fill(s, 0)
    const conv = written[0]?.id as string
    // held meanwhile, so the append needs no read of the cache file that is about to go
    const holder: { dag?: ConversationDag } = { dag: await s.open(conv) }
    for (let i = 1; i < 40; i++) await fill(s, i) // its cache file's append handle is closed (32 kept open)
    // the cache line cannot be written (a directory where the file was, as a full disk would refuse it)
    const file = path.join(s.dir, 'index', 'entries', `${conv}.jsonl`)
    await fs.rm(file)
    await fs.mkdir(file)
    const [late] = await s.append(conv, [{ kind: 'user', body: { text: 'acknowledged' }, parents: [written[4]?.id as string] }])
    await until(() => s.logs.lines.some(l => l.level === 'error' && l.message.includes('could not write the entry cache')), 'the failed cache write to be reported')
    await fs.rm(file, { recursive: true })
    expect(holder.dag?.has((late as Entry).id)).toBe(true)
    delete holder.dag
    for (let i = 40; i < 80; i++) await fill(s, i)
    await collect()
    // read again from the feeds: the entry the feed acknowledged is there
    const again = await s.open(conv)
    expect(s.logs.lines.some(l => l.message.includes(`entry cache of ${conv.slice(0, 12)} is missing entries`))).toBe(true)
    expect(again.snapshot()).toEqual(new ConversationDag(conv, [...written, late as Entry]).snapshot())
  })
})
