// Full-text search at scale (issue 15, "search"): the index of the laptop's history in bench/scale's
// cached data set (ARBOR_BENCH_SCALE=small: 1,000 conversations, 100,000 entries; else 10,000 and
// 1,000,000; skipped when it is not generated), built from nothing, read back after a restart,
// queried. The store is opened on a copy of the device's directory (the data set stays as it is);
// the search log goes beside it. Run with --expose-gc for the RSS lines (they are null without):
// `node --expose-gc --import tsx bench/search.ts`. Lines: search.build (from nothing: every
// conversation read from its entry cache; RSS includes the DAG cache it fills), search.query,
// search.restart (a fresh store, then the index from its segments: the RSS the index adds; the
// index's own estimate, memoryBytes, stays within its live budget + segment footers + ~100 B a
// conversation whatever the history's size). ARBOR_BENCH_QUERY_RUNS: samples a query (default 21);
// ARBOR_BENCH_SEARCH_FROM_LOG=1 adds search.restart.fromLog (no manifest: the log read whole).
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { HistoryStore } from '../src/main/history/history-store'
import { SearchIndex } from '../src/main/search/search-index'
import { FULL, SMALL, datasetDir, deviceDir, readMeta } from './lib/scale-dataset'
import { benchLog, emit, median, percentile, round } from './lib/util'

const note = (m: string): void => { process.stderr.write(`bench search: ${m}\n`) }
const scale = process.env.ARBOR_BENCH_SCALE === 'small' ? SMALL : FULL
const source = deviceDir(datasetDir(scale), 0)
const RUNS = Math.max(3, Number(process.env.ARBOR_BENCH_QUERY_RUNS ?? 21))
const QUERIES = ['error', 'expected actual', 'instal', 'missing version fix', 'should could would change update', 'zzzz']
const gc = (globalThis as { gc?: () => void }).gc
const rssMb = (): number | null => { if (gc === undefined) return null; gc(); return round(process.memoryUsage().rss / 2 ** 20, 1) }
/** live JS heap and typed arrays after a full GC (MB): what a part holds, even where RSS keeps pages an earlier part freed */
const liveMb = (): number | null => { if (gc === undefined) return null; gc(); const m = process.memoryUsage(); return round((m.heapUsed + m.arrayBuffers) / 2 ** 20, 1) }

const meta = await readMeta(datasetDir(scale))
if (meta === null) {
  emit({ name: 'search.build', value: 0, unit: 'ms', skipped: `no data set at ${datasetDir(scale)}: run \`npm run bench -- scale\` first` })
  process.exit(0)
}
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'arbor-bench-search-'))
try {
  const dir = path.join(tmp, 'device')
  note(`copying ${source}`)
  await fs.cp(source, dir, { recursive: true })
  await fs.rm(path.join(dir, 'corestore', 'CORESTORE')) // as bench/scale's append: Corestore refuses a copy with the original's device file
  const searchDir = path.join(tmp, 'search')
  /** Each query's median and p90 over RUNS after a warm-up, limit 20. */
const queries = async (index: SearchIndex, docs: number, name = 'search.query'): Promise<void> => {
  const times: Record<string, { medianMs: number; p90Ms: number; hits: number }> = {}
  for (const q of QUERIES) {
    const ms: number[] = []
    let hits = 0
    for (let i = 0; i <= RUNS; i++) {
      const q0 = performance.now()
      hits = (await index.query(q, { limit: 20 })).hits.length
      ms.push(performance.now() - q0)
    }
    times[q] = { medianMs: round(median(ms.slice(1))), p90Ms: round(percentile(ms.slice(1), 90)), hits }
  }
  emit({ name, value: Math.max(...Object.values(times).map(t => t.medianMs)), unit: 'ms', note: `the slowest query's median of ${RUNS} after a warm-up, limit 20`, queries: times, docs, loadAverage: os.loadavg().map(x => round(x)) })
}
// in a function of its own: nothing of the first store and index is held once it returns
  const build = async (): Promise<void> => {
    const history = new HistoryStore({ dir, watchPeers: false, log: benchLog })
    await history.ready()
    const entries = history.list().reduce((n, s) => n + s.size, 0)
    const before = rssMb()
    const first = new SearchIndex({ source: history, dir: searchDir, log: benchLog })
    const t0 = performance.now()
    await first.open()
    const buildMs = performance.now() - t0
    const built = rssMb()
    const size = first.size
    emit({ name: 'search.build', value: round(buildMs), unit: 'ms', conversations: history.list().length, entries, docs: size.docs, fileBytes: size.fileBytes, memoryEstimateBytes: size.memoryBytes, segments: size.segments, segmentsWritten: first.stats.segmentsWritten, merges: first.stats.merges, rssBeforeMb: before, rssAfterMb: built, rssAddedMb: before === null || built === null ? null : round(built - before, 1), loadAverage: os.loadavg().map(x => round(x)) })

    await queries(first, size.docs)

    await first.close()
    await history.close()
  }
  await build()
  // a restart: a fresh store (no conversation opened), then the index from its snapshot
  const again = new HistoryStore({ dir, watchPeers: false, log: benchLog })
  await again.ready()
  const ready = rssMb()
  const liveReady = liveMb()
  const index = new SearchIndex({ source: again, dir: searchDir, log: benchLog })
  const t1 = performance.now()
  await index.open()
  const restartMs = performance.now() - t1
  const reopened = rssMb()
  const liveOpen = liveMb()
  let segmentBytes = 0
  for (const n of await fs.readdir(index.segmentDir)) segmentBytes += (await fs.stat(path.join(index.segmentDir, n))).size
  emit({ name: 'search.restart', value: round(restartMs), unit: 'ms', fromManifest: index.stats.fromManifest, reindexed: index.stats.reindexed, records: index.stats.records, segments: index.size.segments, segmentBytes, memoryEstimateBytes: index.size.memoryBytes, rssReadyMb: ready, rssMb: reopened, rssAddedMb: ready === null || reopened === null ? null : round(reopened - ready, 1), liveAddedMb: liveReady === null || liveOpen === null ? null : round(liveOpen - liveReady, 1) })
  // after a restart: the segments' pages are those the page cache kept
  await queries(index, index.size.docs, 'search.query.restarted')
  await index.close()
  if (process.env.ARBOR_BENCH_SEARCH_FROM_LOG === '1') {
    // without its manifest (an upgrade from a version that kept a snapshot, a damaged segment, a compaction's rebuild): the log read whole into segments
    await fs.rm(index.manifestFile)
    const whole = new SearchIndex({ source: again, dir: searchDir, log: benchLog })
    const t2 = performance.now()
    await whole.open()
    emit({ name: 'search.restart.fromLog', value: round(performance.now() - t2), unit: 'ms', records: whole.stats.records, reindexed: whole.stats.reindexed, segmentsWritten: whole.stats.segmentsWritten, merges: whole.stats.merges, memoryEstimateBytes: whole.size.memoryBytes, loadAverage: os.loadavg().map(x => round(x)) })
    await whole.close()
  }
  await again.close()
} finally {
  await fs.rm(tmp, { recursive: true, force: true })
}
