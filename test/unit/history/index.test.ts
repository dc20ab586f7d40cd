// The history index on disk (history-index.ts, index-codec.ts): a snapshot and a journal of the
// records each save changed. Torn tails, damaged frames, compaction, the format-1 JSON file of the
// previous version, a newer format, and what a save costs in a real store.
import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs/promises'
import path from 'node:path'
import { HistoryIndexFile, emptyIndex, indexDir, readListing, readSummaries, sortSummaries, type ConversationSummary, type IndexState } from '../../../src/main/history/index/history-index'
import { HistoryStore } from '../../../src/main/history/history-store'
import { FORMAT_VERSION, MAGIC, decodeListing, encodeJournalStart, encodeSnapshot } from '../../../src/main/history/index/index-codec'
import { memoryLogger } from '../../../src/shared/logger'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs()
const open: HistoryStore[] = []
afterEach(async () => {
  await Promise.allSettled(open.splice(0).map(s => s.close()))
  await dirs.cleanup()
})

const hex = (n: number, c = 'a'): string => n.toString(16).padStart(64, c)
const DEVICE = hex(1, 'd')

function summary (i: number, extra: Partial<ConversationSummary> = {}): ConversationSummary {
  return { id: hex(i), title: `conversation ${i}`, createdAt: 1_764_000_000_000 + i, updatedAt: 1_764_000_000_000 + 2 * i, heads: [hex(i, 'b'), hex(i, 'c')], size: i + 1, waiting: 0, ...extra }
}

function stateWith (n: number): IndexState {
  const s = emptyIndex(DEVICE)
  s.manifestIndexed = 3
  for (let i = 0; i < n; i++) {
    s.conversations[hex(i)] = summary(i)
    s.feeds[hex(i, 'f')] = { key: hex(i, 'f'), conversation: hex(i), device: DEVICE, own: i % 2 === 0, indexed: i + 1 }
  }
  return s
}

/** Saves `state` with every record marked changed (what a store does as it fills the index). */
async function saveAll (index: HistoryIndexFile, state: IndexState): Promise<void> {
  for (const k of Object.keys(state.conversations)) index.changed('conversation', k)
  for (const k of Object.keys(state.feeds)) index.changed('feed', k)
  await index.save(state)
}

const plain = (s: unknown): unknown => JSON.parse(JSON.stringify(s))

describe('history index files', () => {
  it('round-trips every field: optional ones, non-hex ids, an unknown device, titles in any script', async () => {
    const dir = await dirs.make()
    const s = stateWith(3)
    s.conversations[hex(0)] = summary(0, { cwd: '/home/p/é', autoRevival: true })
    s.conversations[hex(1)] = summary(1, { autoRevival: false, title: '会話 🌳', updatedAt: 2 ** 52, heads: [] })
    s.conversations['not-hex'] = summary(9, { id: 'not-hex' })
    s.feeds[hex(7, 'f')] = { key: hex(7, 'f'), conversation: hex(1), device: '', own: false, indexed: 0 }
    s.clean = false
    await saveAll(new HistoryIndexFile(dir), s)
    expect(plain((await new HistoryIndexFile(dir).load(DEVICE)).state)).toEqual(plain(s))
    const listed = await readSummaries(dir)
    expect(listed?.clean).toBe(false)
    // a snapshot lists them most recent first, as `arbor ls` prints them (its sort is then one pass)
    expect(plain(listed?.conversations)).toEqual(plain(sortSummaries(Object.values(s.conversations))))
  })

  it('appends only what changed, and compacts once the journal outgrows its share of the snapshot', async () => {
    const dir = await dirs.make()
    const s = stateWith(100)
    const index = new HistoryIndexFile(dir, { minBytes: 0, fraction: 0.5 })
    await saveAll(index, s)
    const snap = (await fs.stat(index.files.snapshot)).size
    const journal0 = (await fs.stat(index.files.journal)).size
    s.conversations[hex(5)] = summary(5, { title: 'renamed' })
    index.changed('conversation', hex(5))
    await index.save(s)
    const grown = (await fs.stat(index.files.journal)).size - journal0
    expect(grown).toBeGreaterThan(0)
    expect(grown).toBeLessThan(200) // one record, not the index
    expect((await fs.stat(index.files.snapshot)).size).toBe(snap)
    // nothing changed: nothing written
    await index.save(s)
    expect((await fs.stat(index.files.journal)).size - journal0).toBe(grown)
    // many saves: the journal is folded into a new snapshot before it passes half the snapshot
    const before = index.stats.snapshots
    for (let i = 0; i < 400; i++) {
      s.feeds[hex(i % 100, 'f')] = { ...s.feeds[hex(i % 100, 'f')]!, indexed: 1000 + i }
      index.changed('feed', hex(i % 100, 'f'))
      await index.save(s)
      expect((await fs.stat(index.files.journal)).size).toBeLessThanOrEqual(snap * 0.5 + 100)
    }
    expect(index.stats.snapshots).toBeGreaterThan(before)
    expect(plain((await new HistoryIndexFile(dir).load(DEVICE)).state)).toEqual(plain(s))
  })

  it('a torn last frame: the saves before it stand, the index says it may lag, and the next save leaves a whole index', async () => {
    const dir = await dirs.make()
    const s = stateWith(10)
    const index = new HistoryIndexFile(dir)
    await saveAll(index, s)
    const saved = plain(s)
    s.conversations[hex(3)] = summary(3, { title: 'cut' })
    index.changed('conversation', hex(3))
    const length = (await fs.stat(index.files.journal)).size
    await index.save(s)
    const full = await fs.readFile(index.files.journal)
    for (const cut of [length + 1, length + 8, full.length - 1]) {
      await fs.writeFile(index.files.journal, full.subarray(0, cut))
      const again = new HistoryIndexFile(dir)
      const { state } = await again.load(DEVICE)
      expect(plain({ ...state, clean: true })).toEqual(saved)
      expect(state?.clean).toBe(false)
      // the next save (a snapshot: the torn journal is not appended to) is read whole
      await again.save(state as IndexState)
      expect((await new HistoryIndexFile(dir).load(DEVICE)).state?.clean).toBe(false)
      await fs.writeFile(index.files.journal, full)
    }
  })

  it('a damaged frame in the middle: what is after it is not trusted either, and the index says it may lag', async () => {
    const dir = await dirs.make()
    const s = stateWith(10)
    const index = new HistoryIndexFile(dir)
    await saveAll(index, s)
    const states: unknown[] = []
    const lengths: number[] = []
    for (let i = 0; i < 3; i++) {
      lengths.push((await fs.stat(index.files.journal)).size)
      states.push(plain(s))
      s.conversations[hex(i)] = summary(i, { title: `v${i}` })
      index.changed('conversation', hex(i))
      await index.save(s)
    }
    const full = await fs.readFile(index.files.journal)
    const bad = Buffer.from(full)
    const at = (lengths[1] as number) + 12 // inside the second save's frame
    bad[at] = (bad[at] as number) ^ 0xff
    await fs.writeFile(index.files.journal, bad)
    const { state } = await new HistoryIndexFile(dir).load(DEVICE)
    expect(plain({ ...state, clean: true })).toEqual(states[1])
    expect(state?.clean).toBe(false)
    // a damaged snapshot: rebuild
    const snap = await fs.readFile(index.files.snapshot)
    snap[snap.length - 3] = (snap[snap.length - 3] as number) ^ 0x01
    await fs.writeFile(index.files.snapshot, snap)
    expect(await new HistoryIndexFile(dir).load(DEVICE)).toEqual({ state: null, problem: 'index snapshot is damaged' })
  })

  it('a compaction stopped between its snapshot and its new journal: the old journal is ignored', async () => {
    const dir = await dirs.make()
    const s = stateWith(10)
    const index = new HistoryIndexFile(dir, { minBytes: 0, fraction: 0.01 })
    await saveAll(index, s)
    const oldJournal = await fs.readFile(index.files.journal)
    s.conversations[hex(2)] = summary(2, { title: 'after compaction' })
    index.changed('conversation', hex(2))
    await index.save(s) // over 1 % of the snapshot: a new snapshot
    expect(index.stats.snapshots).toBe(2)
    await fs.writeFile(index.files.journal, oldJournal)
    expect(plain((await new HistoryIndexFile(dir).load(DEVICE)).state)).toEqual(plain(s))
    await fs.rm(index.files.journal)
    expect(plain((await new HistoryIndexFile(dir).load(DEVICE)).state)).toEqual(plain(s))
  })

  it('a failed save loses nothing: its records go with the next one', async () => {
    const dir = await dirs.make()
    const s = stateWith(5)
    const index = new HistoryIndexFile(dir)
    await saveAll(index, s)
    s.conversations[hex(1)] = summary(1, { title: 'kept for later' })
    index.changed('conversation', hex(1))
    await fs.chmod(index.files.journal, 0o400)
    await fs.rm(index.files.journal) // the append cannot open it: the save fails
    await expect(index.save(s)).rejects.toThrow()
    await index.save(s)
    expect((await new HistoryIndexFile(dir).load(DEVICE)).state?.conversations[hex(1)]?.title).toBe('kept for later')
  })
})

describe('a data directory of another version', () => {
  async function made (): Promise<{ dir: string; list: ConversationSummary[]; feeds: number }> {
    const dir = await dirs.make()
    const s = new HistoryStore({ dir, log: memoryLogger() })
    await s.ready()
    for (let i = 0; i < 3; i++) {
      const root = await s.createConversation({ title: `t${i}`, cwd: '/tmp' })
      await s.append(root.id, [{ kind: 'user', body: { text: 'hi' }, parents: [root.id] }])
    }
    const list = s.list()
    const feeds = s.feeds().length
    await s.close()
    return { dir, list, feeds }
  }

  it('reads index/index.json of format 1 without a rebuild, converts it, and removes it', async () => {
    const { dir, list, feeds } = await made()
    // exactly what the previous version wrote: JSON.stringify of its state, with v: 1
    const index = new HistoryIndexFile(indexDir(dir))
    const state = (await index.load(null)).state as IndexState
    await fs.writeFile(index.files.legacy, JSON.stringify({ v: 1, ...state }))
    await fs.rm(index.files.snapshot)
    await fs.rm(index.files.journal)
    // a listing reads it as it is
    expect((await readSummaries(indexDir(dir)))?.conversations.length).toBe(3)
    const log = memoryLogger()
    const s = new HistoryStore({ dir, log })
    open.push(s)
    await s.ready()
    expect(log.lines.filter(l => /rebuilding|reconciling/.test(l.message))).toEqual([])
    expect(s.list()).toEqual(list)
    expect(s.feeds()).toHaveLength(feeds)
    await s.close()
    await expect(fs.access(index.files.legacy)).rejects.toThrow()
    const reread = (await new HistoryIndexFile(indexDir(dir)).load(null)).state
    expect(reread?.clean).toBe(true)
    expect(Object.keys(reread?.conversations ?? {})).toHaveLength(3)
  })

  it('a snapshot of the version before the listing: ls reads its summaries, and the store writes it once with the listing as it opens', async () => {
    const { dir, list } = await made()
    const index = new HistoryIndexFile(indexDir(dir))
    const state = (await index.load(null)).state as IndexState
    await fs.writeFile(index.files.snapshot, encodeSnapshot(state, 7, false))
    await fs.writeFile(index.files.journal, encodeJournalStart(state.device, 7))
    const before = decodeListing({ legacy: null, snapshot: await fs.readFile(index.files.snapshot), journal: null })
    expect(before?.rows.length).toBe(3)
    expect((await new HistoryIndexFile(indexDir(dir)).load(null)).outdated).toBe(true)
    const log = memoryLogger()
    const s = new HistoryStore({ dir, log })
    open.push(s)
    await s.ready()
    expect(log.lines.filter(l => /rebuilding|reconciling/.test(l.message))).toEqual([])
    // written at open, before any write of the session: a store only read from converts too
    const converted = await new HistoryIndexFile(indexDir(dir)).load(null)
    expect(converted.outdated).toBeUndefined()
    expect(s.list()).toEqual(list)
    await s.close()
    const listed = await readListing(indexDir(dir))
    expect(listed?.clean).toBe(true)
    expect(Array.from({ length: listed?.rows.length ?? 0 }, (_, i) => listed?.rows.id(i))).toEqual(list.map(c => c.id))
  })

  it('an index.json beside the binary files was written by an older version that ran since: it wins', async () => {
    const { dir } = await made()
    const index = new HistoryIndexFile(indexDir(dir))
    const state = (await index.load(null)).state as IndexState
    const first = Object.keys(state.conversations)[0] as string
    const older = { v: 1, ...state, conversations: { ...state.conversations, [first]: { ...state.conversations[first], title: 'renamed by the older version' } } }
    await fs.writeFile(index.files.legacy, JSON.stringify(older))
    expect((await readSummaries(indexDir(dir)))?.conversations.find(c => c.id === first)?.title).toBe('renamed by the older version')
  })

  it('an index of a newer format is rebuilt from the feeds with a warning, never refused', async () => {
    const { dir, list } = await made()
    const index = new HistoryIndexFile(indexDir(dir))
    const snap = await fs.readFile(index.files.snapshot)
    snap[MAGIC.length] = FORMAT_VERSION + 1
    await fs.writeFile(index.files.snapshot, snap)
    expect(await readSummaries(indexDir(dir))).toBe(null) // `arbor ls` then opens the store
    const log = memoryLogger()
    const s = new HistoryStore({ dir, log })
    open.push(s)
    await s.ready()
    expect(log.lines.some(l => l.level === 'warn' && /rebuilding the index: index format 3 is newer/.test(l.message))).toBe(true)
    expect(s.list()).toEqual(list)
  })
})

describe('a store\'s index saves', () => {
  it('cost what changed: one append among 200 conversations adds a record or two to the journal, the snapshot stays', async () => {
    const dir = await dirs.make()
    let s = new HistoryStore({ dir, log: memoryLogger() })
    open.push(s)
    await s.ready()
    const ids: string[] = []
    for (let i = 0; i < 200; i++) ids.push((await s.createConversation({ title: `c${i}` })).id)
    await s.close()
    const files = new HistoryIndexFile(indexDir(dir)).files
    const snap = await fs.stat(files.snapshot)
    const journal = (await fs.stat(files.journal)).size
    s = new HistoryStore({ dir, log: memoryLogger() })
    open.push(s)
    await s.ready()
    await s.append(ids[7] as string, [{ kind: 'user', body: { text: 'one more' }, parents: [ids[7] as string] }])
    await s.close()
    const after = await fs.stat(files.snapshot)
    expect([after.size, after.mtimeMs]).toEqual([snap.size, snap.mtimeMs])
    const grown = (await fs.stat(files.journal)).size - journal
    // the dirty mark, the summary and the feed's watermark, and the clean mark: well under a KB
    expect(grown).toBeGreaterThan(0)
    expect(grown).toBeLessThan(1024)
    expect(snap.size + journal).toBeGreaterThan(20 * 1024) // the index itself is far larger
    // and what was saved is what the store shows
    const reread = (await new HistoryIndexFile(indexDir(dir)).load(null)).state as IndexState
    const s2 = new HistoryStore({ dir, log: memoryLogger() })
    open.push(s2)
    await s2.ready()
    expect(Object.values(reread.conversations).sort((a, b) => a.id < b.id ? -1 : 1)).toEqual([...s2.list()].sort((a, b) => a.id < b.id ? -1 : 1))
    expect(reread.conversations[ids[7] as string]?.size).toBe(2)
    expect(path.basename(files.journal)).toBe('index.log')
  })
})
