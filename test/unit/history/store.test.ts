import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs/promises'
import path from 'node:path'
import { HistoryStore, type EntriesEvent } from '../../../src/main/history/history-store'
import { HistoryIndexFile, indexDir, type IndexState } from '../../../src/main/history/index/history-index'
import { InvalidEntryError, type Entry } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs()
const open: HistoryStore[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map(s => s.close()))
  await dirs.cleanup()
})

async function store (dir?: string): Promise<HistoryStore> {
  const s = new HistoryStore({ dir: dir ?? await dirs.make(), log: memoryLogger() })
  open.push(s)
  await s.ready()
  return s
}

const user = (text: string, parent: string) => ({ kind: 'user' as const, body: { text }, parents: [parent] })

describe('HistoryStore', () => {
  it('creates a conversation, appends, and reopens with the same DAG and summary', async () => {
    const dir = await dirs.make()
    const a = await store(dir)
    const root = await a.createConversation({ title: 'Trip', cwd: '/tmp' })
    expect(root.kind).toBe('conversation')
    expect(root.conversation).toBe(root.id)
    const [u] = await a.append(root.id, [user('where to?', root.id)])
    const [r] = await a.append(root.id, [{ kind: 'assistant', body: { text: 'the sea', usage: { input: 3, output: 2 } }, parents: [(u as Entry).id] }])
    const [b] = await a.append(root.id, [user('or the hills?', root.id)])
    const before = (await a.open(root.id)).snapshot()
    expect(before.heads.sort()).toEqual([(r as Entry).id, (b as Entry).id].sort())
    await a.close()

    const a2 = await store(dir)
    const dag = await a2.open(root.id.slice(0, 7))
    expect(dag.snapshot()).toEqual(before)
    const [s] = a2.list()
    expect(s).toMatchObject({ id: root.id, title: 'Trip', size: 4, waiting: 0, cwd: '/tmp' })
    expect(s?.heads.sort()).toEqual(before.heads)
    expect(dag.pathTo((r as Entry).id).map(e => e.kind)).toEqual(['conversation', 'user', 'assistant'])
  })

  it('batches concurrent appends into few Hypercore appends and acknowledges each call', async () => {
    const s = await store()
    const root = await s.createConversation({ title: 'batch' })
    const feed = s.feeds(root.id)[0]
    const core = s.corestore.get({ key: Buffer.from(feed?.key as string, 'hex') })
    await core.ready()
    let appends = 0
    core.on('append', () => { appends++ })
    let parent = root.id
    const calls: Array<Promise<Entry[]>> = []
    for (let i = 0; i < 200; i++) {
      const p = s.append(root.id, [user(`m${i}`, parent)])
      calls.push(p)
      if (i % 50 === 49) parent = ((await p)[0] as Entry).id
    }
    const done = await Promise.all(calls)
    expect(done.flat()).toHaveLength(200)
    expect(core.length).toBe(2 + 200)
    expect(appends).toBeLessThan(20)
    await core.close()
  })

  it('refuses invalid drafts with a clear error and writes nothing', async () => {
    const s = await store()
    const root = await s.createConversation({ title: 'x' })
    await expect(s.append(root.id, [user('orphan', 'f'.repeat(64))])).rejects.toThrow(/parent ffffffffffff is not an entry/)
    await expect(s.append(root.id, [{ kind: 'user', body: { text: 3 as unknown as string }, parents: [root.id] }])).rejects.toThrow(InvalidEntryError)
    await expect(s.append(root.id, [{ kind: 'user', body: { text: 3 as unknown as string }, parents: [root.id] }])).rejects.toThrow(/body\.text/)
    await expect(s.append(root.id, [{ kind: 'conversation', body: { title: 'r', nonce: 'n' }, parents: [] }])).rejects.toThrow(/createConversation/)
    await expect(s.append('0'.repeat(64), [user('x', root.id)])).rejects.toThrow(/no conversation/)
    expect((await s.open(root.id)).size).toBe(1)
  })

  it('accepts parents appended earlier in the same call and branches from any entry', async () => {
    const s = await store()
    const root = await s.createConversation({ title: 'x' })
    const first = (await s.append(root.id, [user('a', root.id)]))[0] as Entry
    const again = await s.append(root.id, [user('b', first.id)])
    const sibling = await s.append(root.id, [user('b2', first.id)])
    const dag = await s.open(root.id)
    expect(dag.children(first.id).map(e => e.id).sort()).toEqual([(again[0] as Entry).id, (sibling[0] as Entry).id].sort())
    expect(dag.heads()).toHaveLength(2)
    const chain = await s.append(root.id, [user('c1', first.id), user('c2', '$0'), user('c3', '$1')])
    expect(chain.map(e => e.parents[0])).toEqual([first.id, (chain[0] as Entry).id, (chain[1] as Entry).id])
    await expect(s.append(root.id, [user('x', '$0')])).rejects.toThrow(/does not name an earlier draft/)
  })

  it('takes as a parent an entry whose write is under way; when a write fails, what was queued on top of it fails with it', async () => {
    const s = await store()
    const root = await s.createConversation({ title: 'pipelined' })
    const key = s.feeds(root.id)[0]?.key as string
    // The one fault injected: this feed's next Hypercore append waits for a gate, then fails.
    const core = (s as unknown as { cores: Map<string, { append: (blocks: Buffer[]) => Promise<unknown> }> }).cores.get(key)
    if (core === undefined) throw new Error('the feed is not open')
    const real = core.append.bind(core)
    let fail!: () => void
    const gate = new Promise<void>(resolve => { fail = resolve })
    core.append = async () => { core.append = real; await gate; throw new Error('injected write failure') }

    const a = await s.enqueue(root.id, [user('a', root.id)])
    await new Promise(resolve => setImmediate(resolve)) // a's batch has left the queue: its write is under way
    const aId = (a.entries[0] as Entry).id
    const b = await s.enqueue(root.id, [user('b, on a', aId)])
    const bc = await s.enqueue(root.id, [user('on b', (b.entries[0] as Entry).id)])
    const c = await s.enqueue(root.id, [user('c, on the root', root.id)])
    fail()
    await expect(a.stored).rejects.toThrow('injected write failure')
    await expect(b.stored).rejects.toThrow('injected write failure')
    await expect(bc.stored).rejects.toThrow('injected write failure')
    expect(await c.stored).toEqual(c.entries)

    // nothing reached the feed with a parent it lacks
    const dag = await s.open(root.id)
    expect(dag.waiting()).toEqual([])
    expect([...dag.entries()].map(e => e.id).sort()).toEqual([root.id, (c.entries[0] as Entry).id].sort())
    const feed = s.corestore.get({ key: Buffer.from(key, 'hex') })
    await feed.ready()
    expect(feed.length).toBe(3) // header, root, c
    await feed.close()
  })

  it('names conversations by unique prefix and says when a prefix is ambiguous or unknown', async () => {
    const s = await store()
    const ids: string[] = []
    for (let i = 0; i < 40; i++) ids.push((await s.createConversation({ title: `c${i}` })).id)
    const id = ids[0] as string
    expect(s.resolve(id.slice(0, 12))).toBe(id)
    expect(s.resolve(id.toUpperCase())).toBe(id)
    // With 40 ids some one-hex-digit prefix is shared by two or more.
    const shared = [...'0123456789abcdef'].find(c => ids.filter(x => x.startsWith(c)).length > 1) as string
    expect(() => s.resolve(shared)).toThrow(/conversations .*matches/)
    expect(() => s.resolve('xyz')).toThrow(/ids are hex/)
    const unused = [...'0123456789abcdef'].map(c => c + c + c + c).find(p => !ids.some(x => x.startsWith(p)))
    if (unused !== undefined) expect(() => s.resolve(unused)).toThrow(/no conversation matches/)
  })

  it('keeps the selected entry per conversation across restarts', async () => {
    const dir = await dirs.make()
    const s = await store(dir)
    const root = await s.createConversation({ title: 'x' })
    const [a] = await s.append(root.id, [user('a', root.id)])
    await s.append(root.id, [user('b', root.id)])
    s.select(root.id, (a as Entry).id)
    expect(() => s.select(root.id, 'e'.repeat(64))).toThrow(/not in conversation/)
    await s.close()
    const s2 = await store(dir)
    expect(s2.selected(root.id)).toBe((a as Entry).id)
    const dag = await s2.open(root.id)
    expect(dag.branch(s2.selected(root.id)).map(e => e.id)).toEqual([root.id, (a as Entry).id])
  })

  it('emits entries events for local appends', async () => {
    const s = await store()
    const events: EntriesEvent[] = []
    const off = s.subscribe(ev => events.push(ev))
    const root = await s.createConversation({ title: 'x' })
    await s.append(root.id, [user('a', root.id)])
    off()
    await s.append(root.id, [user('b', root.id)])
    expect(events.map(e => e.joined.map(j => j.kind))).toEqual([['conversation'], ['user']])
    expect(events.every(e => e.local)).toBe(true)
  })

  it('rebuilds a deleted or corrupt index from the feeds', async () => {
    const dir = await dirs.make()
    const s = await store(dir)
    const root = await s.createConversation({ title: 'keep me' })
    for (let i = 0; i < 5; i++) await s.append(root.id, [user(`m${i}`, root.id)])
    const snap = (await s.open(root.id)).snapshot()
    await s.close()

    await fs.writeFile(path.join(dir, 'index', 'index.json'), '{not json')
    await fs.rm(path.join(dir, 'index', 'entries'), { recursive: true })
    const log = memoryLogger()
    const s2 = new HistoryStore({ dir, log })
    open.push(s2)
    await s2.ready()
    expect(log.lines.some(l => /rebuilding the index/.test(l.message))).toBe(true)
    expect((await s2.open(root.id)).snapshot()).toEqual(snap)
    expect(s2.list()[0]).toMatchObject({ title: 'keep me', size: 6 })
  })

  it('lists from the index alone, and heals a conversation whose entry cache is lost', async () => {
    const dir = await dirs.make()
    const s = await store(dir)
    const root = await s.createConversation({ title: 'healing' })
    let parent = root.id
    for (let i = 0; i < 20; i++) parent = ((await s.append(root.id, [user(`m${i}`, parent)]))[0] as Entry).id
    const snap = (await s.open(root.id)).snapshot()
    await s.close()

    await fs.rm(path.join(dir, 'index', 'entries', root.id + '.jsonl'))
    const log = memoryLogger()
    const s2 = new HistoryStore({ dir, log })
    open.push(s2)
    await s2.ready()
    // Listing reads the summaries, not the entries: it is right without the cache.
    expect(s2.list()[0]).toMatchObject({ id: root.id, size: 21, heads: [parent] })
    expect((await s2.open(root.id)).snapshot()).toEqual(snap)
    expect(log.lines.some(l => l.level === 'warn' && /is missing entries \(0 of 21\)/.test(l.message))).toBe(true)
    await s2.close()
    // and the cache was rewritten
    const s3 = await store(dir)
    expect((await s3.open(root.id)).snapshot()).toEqual(snap)
  })

  it('recovers from crash images: a feed missing from the index, a torn cache line, a racing save', async () => {
    const dir = await dirs.make()
    const s = await store(dir)
    const root = await s.createConversation({ title: 'crash' })
    const [a] = await s.append(root.id, [user('a', root.id)])
    const [b] = await s.append(root.id, [user('b', (a as Entry).id)])
    await s.close()
    // a fresh HistoryIndexFile writes a whole snapshot: the crash image
    const index = (): HistoryIndexFile => new HistoryIndexFile(indexDir(dir))
    const cacheFile = path.join(dir, 'index', 'entries', root.id + '.jsonl')
    const saved = (await index().load(null)).state as IndexState

    // Killed right after createConversation: the dirty index has not heard of the feed yet.
    await index().save({ ...saved, clean: false, manifestIndexed: 1, feeds: {}, conversations: {} })
    const s2 = await store(dir)
    expect(s2.list()[0]).toMatchObject({ id: root.id, size: 3 })
    await s2.close()

    // A torn last cache line (no newline), the watermark before it, several quick index saves.
    const text = await fs.readFile(cacheFile, 'utf8')
    await fs.writeFile(cacheFile, text.slice(0, text.length - 60))
    const now = (await index().load(null)).state as IndexState
    for (const f of Object.values(now.feeds)) f.indexed -= 1
    await index().save({ ...now, clean: false })
    const s3 = new HistoryStore({ dir, log: memoryLogger(), indexDelayMs: 1 })
    open.push(s3)
    await s3.ready()
    const [c] = await s3.append(root.id, [user('c', (b as Entry).id)])
    await s3.close()
    const s4 = await store(dir)
    const dag = await s4.open(root.id)
    expect([dag.size, dag.waiting().length, dag.isJoined((c as Entry).id)]).toEqual([4, 0, true])
    expect(s4.list()[0]).toMatchObject({ size: 4, waiting: 0 })
  })

  it('tells the user when another process holds the data directory', async () => {
    const dir = await dirs.make()
    await store(dir)
    const { spawnSync } = await import('node:child_process')
    const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', `
      const { HistoryStore } = await import(${JSON.stringify(path.resolve('src/main/history/history-store.ts'))})
      const s = new HistoryStore({ dir: ${JSON.stringify(dir)} })
      try { await s.ready(); console.log('opened') } catch (e) { console.log('ERR ' + e.message) }
    `], { encoding: 'utf8', timeout: 20_000 })
    expect(r.stdout).toMatch(/ERR another Arbor process is using/)
  })
})
