// The full-text index answers exactly what a scan of the joined entries answers: for random
// DAGs of several conversations whose entries arrive in random order (children before their
// parents), random queries (words, the last a prefix), paged with random limits; and again
// after a restart (from its segments), after entries joined while the index was closed, after a
// kill between the steps of a segment write, a merge or a compaction of the log, after its log
// lost a random tail, after its manifest was damaged and after a segment was. Budgets are made
// tiny in half the runs, so that segments, merges and compactions happen inside the property.
import fsp from 'node:fs/promises'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { Entry, EntryDraft } from '../../../src/shared/entry/entry'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import { DagHistory } from '../../helpers/dag-history'
import { SearchIndex, SimulatedCrash, type CrashPoint, type SearchIndexOptions } from '../../../src/main/search/search-index'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs('arbor-search-prop-')
afterAll(async () => { await dirs.cleanup() })

const DEVICE = 'd'.repeat(64)
const WORDS = ['alpha', 'alps', 'beta', 'Bête', 'gamma', 'gam', 'delta', 'ünïcode', 'x1', 'foo-bar', '東京']
const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined }

interface Step { conv: number; parent: number; kind: 'user' | 'assistant' | 'tool.result' | 'agent.started' | 'compaction'; words: number[]; ts: number }
const stepArb: fc.Arbitrary<Step> = fc.record({
  conv: fc.nat({ max: 2 }),
  parent: fc.nat(),
  kind: fc.constantFrom('user', 'assistant', 'tool.result', 'agent.started', 'compaction'),
  words: fc.array(fc.nat({ max: WORDS.length - 1 }), { maxLength: 6 }),
  ts: fc.nat({ max: 30 })
})
const queryArb = fc.record({ words: fc.array(fc.nat({ max: WORDS.length - 1 }), { minLength: 1, maxLength: 3 }), cut: fc.nat({ max: 4 }), limit: fc.integer({ min: 1, max: 7 }) })
  .map(({ words, cut, limit }) => {
    const ws = words.map(i => WORDS[i] as string)
    const last = ws.pop() as string
    return { text: [...ws, last.slice(0, Math.max(1, last.length - cut))].join(' '), limit }
  })

function draft (s: Step, parent: string): EntryDraft {
  const text = s.words.map(i => WORDS[i]).join(' ')
  switch (s.kind) {
    case 'user': return { kind: 'user', body: { text }, parents: [parent] }
    case 'assistant': return { kind: 'assistant', body: { text }, parents: [parent] }
    case 'tool.result': return { kind: 'tool.result', body: { callId: 'c', status: 'ok', output: text }, parents: [parent] }
    case 'compaction': return { kind: 'compaction', body: { summary: text, folded: { from: parent, to: parent }, model: 'm', tokens: 1 }, parents: [parent] }
    // a kind without searchable text: counted, never found
    case 'agent.started': return { kind: 'agent.started', body: { epoch: 1, reason: 'user' }, parents: [parent] }
  }
}

/** Three conversations' entries in creation order (roots first), each with a parent made before it. */
function build (steps: Step[], titles: number[]): Entry[] {
  const roots = [0, 1, 2].map(i => makeEntry({ kind: 'conversation', parents: [], body: { title: `${WORDS[titles[i] ?? 0]} chat`, nonce: `n${i}` } }, { conversation: null, device: DEVICE, ts: i }))
  const per: Entry[][] = roots.map(r => [r])
  for (const s of steps) {
    const list = per[s.conv] as Entry[]
    const parent = list[s.parent % list.length] as Entry
    list.push(makeEntry(draft(s, parent.id), { conversation: (list[0] as Entry).id, device: DEVICE, ts: s.ts }))
  }
  return per.flat()
}

async function all (index: SearchIndex, text: string, limit: number): Promise<Array<{ id: string; ts: number }>> {
  const out: Array<{ id: string; ts: number }> = []
  let cursor: string | undefined
  for (let page = 0; page < 200; page++) {
    const r = await index.query(text, { limit, ...(cursor !== undefined ? { cursor } : {}) })
    out.push(...r.hits.map(h => ({ id: h.entry, ts: h.ts })))
    if (r.cursor === undefined) return out
    cursor = r.cursor
  }
  throw new Error('paging did not end')
}

/** Same entries, newest first (entries of one time in any order), none twice. */
function expectSame (got: Array<{ id: string; ts: number }>, want: Array<{ id: string; ts: number }>): void {
  for (let i = 1; i < got.length; i++) expect((got[i - 1] as { ts: number }).ts).toBeGreaterThanOrEqual((got[i] as { ts: number }).ts)
  expect(new Set(got.map(h => h.id)).size).toBe(got.length)
  expect(got.map(h => h.id).sort()).toEqual(want.map(h => h.id).sort())
}

const POINTS: CrashPoint[] = ['segment.half', 'segment.unlisted', 'merge.half', 'merge.unlisted', 'compact.half', 'compact.unrenamed', 'compact.renamed']
type Budgets = Pick<SearchIndexOptions, 'liveDocs' | 'mergeFactor' | 'blockBytes' | 'compactMinBytes' | 'compactDeadShare'>
// small budgets three times in four: only they write segments, merge and compact in a run this size
const budgetsArb: fc.Arbitrary<Budgets> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({}) },
  { weight: 3, arbitrary: fc.record({ liveDocs: fc.integer({ min: 1, max: 4 }), mergeFactor: fc.integer({ min: 2, max: 3 }), blockBytes: fc.integer({ min: 1, max: 64 }), compactMinBytes: fc.constant(0), compactDeadShare: fc.constantFrom(0, 0.2, 0.5) }) }
)
/** where the kill is: the nth time the index reaches that point, or ('any') the nth point it reaches */
const crashArb = fc.record({ point: fc.constantFrom<CrashPoint | 'any'>(...POINTS, 'any', 'any', 'any'), nth: fc.integer({ min: 1, max: 4 }) })

/** Waits for what may be a test's kill: true when it was one. */
async function killed (p: Promise<void>): Promise<boolean> {
  try { await p; return false } catch (err) { if (err instanceof SimulatedCrash) return true; throw err }
}

describe('search index', () => {
  it('answers what a scan of the joined entries answers, live, after a restart, after entries joined while closed, after kills and after a torn log', async () => {
    const seen = { segments: 0, merges: 0, compactions: 0, kills: new Set<CrashPoint>() }
    await fc.assert(fc.asyncProperty(
      fc.array(stepArb, { maxLength: 30 }), fc.array(fc.nat({ max: WORDS.length - 1 }), { minLength: 3, maxLength: 3 }),
      fc.array(fc.nat(), { maxLength: 40 }), fc.nat({ max: 100 }), fc.nat(), fc.array(queryArb, { minLength: 1, maxLength: 4 }),
      budgetsArb, crashArb,
      async (steps, titles, order, split, cut, queries, budgets, crash) => {
        const entries = build(steps, titles)
        // a random arrival order: children often before their parents (they wait, then join)
        const arrival = [...entries]
        for (const [i, o] of order.entries()) {
          const a = i % arrival.length
          const b = o % arrival.length;
          [arrival[a], arrival[b]] = [arrival[b] as Entry, arrival[a] as Entry]
        }
        const dir = await dirs.make()
        const history = new DagHistory()
        const at = Math.floor(arrival.length * split / 100)
        const check = async (index: SearchIndex): Promise<void> => {
          for (const q of queries) expectSame(await all(index, q.text, q.limit), history.scan(q.text))
        }
        const opened: SearchIndex[] = []
        const make = (more: Partial<SearchIndexOptions> = {}): SearchIndex => {
          const i = new SearchIndex({ source: history, dir, log: silent, ...budgets, ...more })
          opened.push(i)
          return i
        }
        let index = make({ flushMs: 1 })
        await index.open()
        for (const e of arrival.slice(0, at)) history.deliver(e)
        await check(index)
        await index.close()
        // joined while no index ran: the restart finds the conversations behind and indexes them again
        const mid = at + Math.ceil((arrival.length - at) / 2)
        for (const e of arrival.slice(at, mid)) history.deliver(e)
        // a kill somewhere in what the restart writes (segments, merges, a compaction) or after it
        let left = crash.nth
        let hit: CrashPoint | null = null
        index = make({ crashAt: p => { if ((p === crash.point || crash.point === 'any') && --left === 0) hit = p; return hit !== null } })
        let dead = await killed(index.open())
        const tallyKill = (): void => { if (dead && hit !== null) seen.kills.add(hit) }
        if (!dead) {
          await check(index)
          for (const e of arrival.slice(mid)) history.deliver(e)
          dead = await killed(index.flush())
          if (!dead) await check(index)
        }
        tallyKill()
        await index.close()
        for (const e of arrival.slice(mid)) history.deliver(e)
        index = make()
        await index.open()
        await check(index)
        await index.close()
        // a crash cut the log anywhere: what is left is used, what is lost is indexed again
        const file = path.join(dir, 'search.log')
        const size = (await fsp.stat(file)).size
        await fsp.truncate(file, cut % (size + 1))
        index = make()
        await index.open()
        await check(index)
        await index.close()
        // a damaged manifest: the log is read whole instead
        const manifest = await fsp.readFile(index.manifestFile)
        const flip = cut % manifest.length
        manifest[flip] = (manifest[flip] as number) ^ 0xff
        await fsp.writeFile(index.manifestFile, manifest)
        index = make()
        await index.open()
        expect(index.stats.fromManifest).toBe(false)
        await check(index)
        await index.close()
        // a damaged segment: found by its checksum, the log is read whole instead
        // the segments the manifest lists (MAGIC, crc32, JSON)
        const segments = (JSON.parse((await fsp.readFile(index.manifestFile)).subarray(12).toString('utf8')) as { segments: string[] }).segments
        if (segments.length > 0) {
          const seg = path.join(index.segmentDir, segments[cut % segments.length] as string)
          const bytes = await fsp.readFile(seg)
          const at = (cut >> 3) % bytes.length
          bytes[at] = (bytes[at] as number) ^ (1 << (cut % 8))
          await fsp.writeFile(seg, bytes)
          index = make()
          await index.open()
          expect(index.stats.fromManifest).toBe(false)
          await check(index)
          await index.close()
        }
        for (const i of opened) { seen.segments += i.stats.segmentsWritten; seen.merges += i.stats.merges; seen.compactions += i.stats.compactions }
      }
    ), { numRuns: Number(process.env.ARBOR_RUNS ?? 60), verbose: 1 })
    // the runs did what they are for: segments written and merged, the log compacted, kills at most points
    console.log('search property:', { ...seen, kills: [...seen.kills].sort() })
    expect(seen.segments).toBeGreaterThan(0)
    expect(seen.merges).toBeGreaterThan(0)
    expect(seen.compactions).toBeGreaterThan(0)
    expect(seen.kills.size).toBeGreaterThanOrEqual(3)
  }, 120_000)
})
