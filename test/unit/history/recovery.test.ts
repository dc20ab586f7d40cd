// Recovery needs the manifest: after a crash the index is reconciled (or rebuilt) from the
// feeds the manifest lists, so a feed learned from a peer must be listed there before anything
// of it is shown (test/e2e/sync/sync-crash-processes.test.ts kills a real node to check the same).
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { HistoryStore, type EntriesEvent } from '../../../src/main/history/history-store'
import { indexDir, indexFiles } from '../../../src/main/history/index/history-index'
import { decodeIndex } from '../../../src/main/history/index/index-codec'
import { parseManifestRecord } from '../../../src/main/history/store/manifest-record'
import { memoryLogger } from '../../../src/shared/logger'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'

const { dirs, defer } = perTest()

/** Whether the index on disk says clean, read synchronously (at the moment a listener runs). */
function cleanOnDisk (dir: string): boolean | undefined {
  const files = indexFiles(indexDir(dir))
  const read = (f: string): Buffer | null => { try { return readFileSync(f) } catch { return null } }
  return decodeIndex({ legacy: read(files.legacy), snapshot: read(files.snapshot), journal: read(files.journal) }, null).state?.clean
}

async function store (dir?: string): Promise<HistoryStore> {
  // Length updates and index saves never come by themselves during a test: only what showing needs.
  const s = new HistoryStore({ dir: dir ?? await dirs.make(), log: memoryLogger(), manifestDelayMs: 600_000, indexDelayMs: 600_000 })
  defer(() => s.close())
  await s.ready()
  return s
}

function connect (a: HistoryStore, b: HistoryStore): () => void {
  const s1 = a.replicate(true)
  const s2 = b.replicate(false)
  s1.pipe(s2).pipe(s1)
  const swallow = (): void => {} // streams error with "destroyed" when we cut them on purpose
  s1.on('error', swallow)
  s2.on('error', swallow)
  const cut = (): void => { s1.destroy(); s2.destroy() }
  defer(cut)
  return cut
}

/** The feed keys a store's manifest lists in blocks [1, end). */
async function manifestFeeds (s: HistoryStore, end?: number): Promise<Set<string>> {
  const manifest = s.corestore.get({ name: 'arbor/manifest' })
  await manifest.ready()
  const keys = new Set<string>()
  for (let i = 1; i < (end ?? manifest.length); i++) {
    const rec = parseManifestRecord(await manifest.get(i) as Buffer)
    for (const f of rec?.feeds ?? []) keys.add(f.key)
  }
  await manifest.close()
  return keys
}

describe('a feed learned from a peer and the manifest', () => {
  it('is listed in the manifest before its entries are shown, the whole list of a peer in one append', async () => {
    const a = await store()
    const b = await store()
    const convs = await Promise.all(Array.from({ length: 260 }, async (_, i) => (await a.createConversation({ title: `c${i}` })).id))
    const feedOf = new Map(convs.map(c => [c, a.feeds(c)[0]?.key as string]))
    connect(a, b)
    const manifest = b.corestore.get({ name: 'arbor/manifest' })
    await manifest.ready()
    defer(() => manifest.close())
    const before = manifest.length
    // what the manifest held (on disk: a length counts flushed blocks) when a feed's first entries were shown
    const heldWhenShown = new Map<string, number>()
    b.subscribe((ev: EntriesEvent) => { if (!heldWhenShown.has(ev.feed)) heldWhenShown.set(ev.feed, manifest.length) })
    // as a peer's `feeds` message is processed: every announcement in one turn
    for (const c of convs) void b.updateFeed(c, feedOf.get(c) as string, 2) // header and root
    await until(() => b.list().length === convs.length, 'b to list every conversation', 30_000)
    expect(heldWhenShown.size).toBe(convs.length)
    for (const [feed, end] of heldWhenShown) expect((await manifestFeeds(b, end)).has(feed), `feed ${feed.slice(0, 8)} shown before the manifest listed it`).toBe(true)
    // 260 feeds learned in one turn: one append of two records (256 feeds each at most), not 260
    expect(manifest.length - before).toBe(2)
  })
})

describe('entries of a peer shown after a clean start', () => {
  it('are shown only once the index on disk says it may lag the feeds (so recovery re-reads them)', async () => {
    const a = await store()
    const root = await a.createConversation({ title: 'grows' })
    const feed = a.feeds(root.id)[0]?.key as string
    const dir = await dirs.make()
    let b = await store(dir)
    const cut = connect(a, b)
    await b.updateFeed(root.id, feed, 2)
    await until(() => b.summary(root.id)?.size === 1, 'b to hold the root')
    cut()
    await b.close()
    b = await store(dir) // the index says clean: nothing written since
    expect(cleanOnDisk(dir)).toBe(true)
    connect(a, b)
    await a.append(root.id, [{ kind: 'user', body: { text: 'more' }, parents: [root.id] }])
    // what the index on disk said when the new entry was shown
    let cleanWhenShown: boolean | undefined
    b.subscribe(() => { cleanWhenShown ??= cleanOnDisk(dir) })
    await b.updateFeed(root.id, feed, 3)
    await until(() => b.summary(root.id)?.size === 2, 'b to show the new entry')
    expect(cleanWhenShown).toBe(false)
  })
})

describe('a manifest record nesting 100,000 levels', () => {
  it('is read without a recursive walk: fields it does not name are left alone, a feed list that is not one makes no record', () => {
    const nested = '['.repeat(100_000) + ']'.repeat(100_000)
    const feed = { key: 'a'.repeat(64), conversation: 'b'.repeat(64), device: '', length: 3 }
    expect(parseManifestRecord(Buffer.from(`{"feeds":[${JSON.stringify(feed)}],"x":${nested}}`))).toEqual({ feeds: [feed] })
    expect(parseManifestRecord(Buffer.from(`{"feeds":${nested}}`))).toBeNull()
  })
})
