// Benchmarks of a heavy user's year (issue 12, "Scale"): 10,000 conversations, 1,000,000
// entries, 5 devices (ARBOR_BENCH_SCALE=small: 1,000 and 100,000), each line beside its
// baseline measured in the same run. The data set is generated once and cached
// (bench/lib/scale-dataset.ts); the heavy parts run in child processes (bench/lib/scale-child.ts).
// Prints one JSON line per measurement; see bench/README.md.
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { HistoryStore } from '../src/main/history/history-store'
import { HistoryIndexFile, indexDir, readSummaries, type IndexState } from '../src/main/history/index/history-index'
import { writeStateFile } from '../src/main/disk/state-file'
import { BASELINE, DEVICES, FULL, HOLDERS, SMALL, datasetDir, deviceDir, readMeta, type DatasetMeta, type Scale } from './lib/scale-dataset'
import { Cluster, closeDevice, connect, openCounter, until, type Connection, type Device } from './lib/sync-devices'
import { benchLog, emit, ensureBuilt, interleave, median, lsCli, round, runNode } from './lib/util'

const note = (m: string): void => { process.stderr.write(`bench scale: ${m}\n`) }
const SCALE: Scale = process.env.ARBOR_BENCH_SCALE === 'small' ? SMALL : FULL
/** which parts run (default all): ls, ready, rss, save, reconnect, sync, append */
const ONLY = process.env.ARBOR_BENCH_SCALE_ONLY?.split(',')
const runs = (part: string): boolean => ONLY === undefined || ONLY.includes(part)
/** the initial sync's source: `full` (a holder: the whole history) or the writer holding least (the default above 100,000 entries) */
const SYNC_FULL = process.env.ARBOR_BENCH_SCALE_SYNC === 'full' || SCALE.entries <= 100_000
const load = (): number[] => os.loadavg().map(x => round(x))

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'arbor-bench-scale-run-'))
let dirs = 0
const workDir = async (name: string): Promise<string> => {
  const d = path.join(tmp, `${name}-${dirs++}`)
  await fs.mkdir(d, { recursive: true })
  return d
}

/** Runs a mode of bench/lib/scale-child.ts; its last stdout line is its result. */
async function child<T> (mode: string, args: string[], node: string[] = []): Promise<{ result: T; ms: number }> {
  const r = await runNode([...node, '--import', 'tsx', path.join('bench', 'lib', 'scale-child.ts'), mode, ...args], { stderr: 'inherit' })
  if (r.code !== 0) throw new Error(`scale-child ${mode} failed (exit ${r.code})`)
  return { result: JSON.parse(r.stdout.trim().split('\n').pop() as string) as T, ms: r.ms }
}

// ---------------------------------------------------------------- the data sets

/** The cached data set of a scale, generated (in a child with room for its heap) if missing. */
async function dataset (scale: Scale): Promise<{ dir: string; meta: DatasetMeta }> {
  const dir = datasetDir(scale)
  let meta = await readMeta(dir)
  if (meta === null) {
    note(`generating ${scale.conversations} conversations, ${scale.entries} entries on ${DEVICES.length} devices in ${dir}`)
    const r = await child<DatasetMeta>('generate', [dir, String(scale.conversations), String(scale.entries)], ['--max-old-space-size=8192'])
    meta = r.result
    note(`generated in ${round(r.ms / 1000, 1)} s (${JSON.stringify(meta.phasesMs)}), ${round(meta.bytesOnDisk / 2 ** 30, 2)} GiB`)
  } else {
    note(`data set cached in ${dir} (generation took ${round(meta.generationMs / 1000, 1)} s)`)
  }
  // A run that died with a store open leaves its index saying "not clean": `ls` would then
  // open the whole store. Opening and closing it once reconciles it; it also converts an
  // index of the previous format (index.json), which `ls` would read as it is.
  for (const d of [...HOLDERS, meta.syncSource]) {
    const index = indexDir(deviceDir(dir, d))
    const legacy = await fs.access(path.join(index, 'index.json')).then(() => true, () => false)
    if (!legacy && (await readSummaries(index))?.clean === true) {
      // a snapshot written before the listing `ls` reads: written once with it (what a store does as it opens)
      const file = new HistoryIndexFile(index)
      const { state, outdated } = await file.load(null)
      if (outdated === true && state !== null) { note(`${index}: writing the snapshot with its listing`); await file.save(state) }
      continue
    }
    note(`${deviceDir(dir, d)} ${legacy ? 'has an index of the previous format; converting it' : 'was not closed cleanly; reconciling it'} first`)
    const s = new HistoryStore({ dir: deviceDir(dir, d), watchPeers: false, log: benchLog })
    await s.ready()
    await s.close()
  }
  return { dir, meta }
}

const holder = (dir: string, i: number): string => deviceDir(dir, HOLDERS[i] as number)

/** The fields every line carries: the sizes measured and the machine's load. */
function sizes (meta: DatasetMeta, base: DatasetMeta): Record<string, unknown> {
  return { conversations: meta.conversations, entries: meta.entries, baselineConversations: base.conversations, baselineEntries: base.entries, loadAverage: load() }
}

// ---------------------------------------------------------------- 1. arbor ls, cold


/** The bytes of a data directory's index files (snapshot and journal). */
async function indexBytes (dir: string): Promise<number> {
  let n = 0
  for (const f of ['index.snap', 'index.log', 'index.json']) n += (await fs.stat(path.join(indexDir(dir), f)).catch(() => ({ size: 0 }))).size
  return n
}

async function lsCold (big: string, small: string, meta: DatasetMeta, base: DatasetMeta): Promise<void> {
  ensureBuilt('bench scale')
  const [bigRuns = [], smallRuns = [], nodeRuns = []] = await interleave(5, [
    () => lsCli(big, meta.conversations),
    () => lsCli(small, base.conversations),
    async () => (await runNode(['-e', ''])).ms
  ])
  const value = median(bigRuns)
  const baseline = median(smallRuns)
  emit({
    name: 'scale.ls.cold',
    value: round(value),
    unit: 'ms',
    baseline: round(baseline),
    baselineName: '`node bin/arbor.js ls` on 100 conversations',
    ratio: round(value / baseline),
    nodeStartup: round(median(nodeRuns)),
    indexBytes: await indexBytes(big),
    baselineIndexBytes: await indexBytes(small),
    ...sizes(meta, base),
    target: 300,
    ok: value < 300
  })
}

// ---------------------------------------------------------------- 2. node start to ready

interface Ready { ms: number; historyMs: number; importMs: number; closeMs: number; conversations: number; rssMb: number }

async function startReady (big: string, small: string, meta: DatasetMeta, base: DatasetMeta): Promise<void> {
  const work = await workDir('ready')
  const one = async (dir: string): Promise<Ready & { processMs: number }> => {
    const r = await child<Ready>('ready', [dir, work])
    return { ...r.result, processMs: r.ms }
  }
  const [bigRuns = [], smallRuns = []] = await interleave(3, [() => one(big), () => one(small)])
  const m = (rs: typeof bigRuns, f: (r: Ready & { processMs: number }) => number): number => round(median(rs.map(f)))
  const value = m(bigRuns, r => r.ms)
  const baseline = m(smallRuns, r => r.ms)
  emit({
    name: 'scale.start.ready',
    value,
    unit: 'ms',
    baseline,
    baselineName: 'same, 100 conversations',
    ratio: round(value / baseline),
    historyMs: m(bigRuns, r => r.historyMs),
    baselineHistoryMs: m(smallRuns, r => r.historyMs),
    closeMs: m(bigRuns, r => r.closeMs),
    baselineCloseMs: m(smallRuns, r => r.closeMs),
    rssMb: m(bigRuns, r => r.rssMb),
    baselineRssMb: m(smallRuns, r => r.rssMb),
    processMs: m(bigRuns, r => r.processMs),
    baselineProcessMs: m(smallRuns, r => r.processMs),
    importMs: m(bigRuns, r => r.importMs),
    ...sizes(meta, base)
  })
}

// ---------------------------------------------------------------- 3. RSS after opening everything

/**
 * What RSS may exceed ready + the DAG cache budget by after opening everything: the pages kept
 * from the peak (evicted DAGs pile up in V8's old generation before it collects), which V8
 * gives back later, once idle. Not the index: that is in the RSS once ready.
 */
const RSS_CONSTANT_MB = 32

async function rssOpenAll (big: string, meta: DatasetMeta, base: DatasetMeta): Promise<void> {
  const { result: r } = await child<Record<string, unknown> & { rssMb: number; baselineRssMb: number; secondPassRssMb: number; budgetBytes: number | null }>('open-all', [big, await workDir('rss')], ['--expose-gc'])
  const targetMb = r.budgetBytes === null ? null : round(r.baselineRssMb + r.budgetBytes / 2 ** 20 + RSS_CONSTANT_MB, 1)
  const { rssMb, baselineRssMb, ...rest } = r
  emit({
    name: 'scale.rss.open-all',
    value: rssMb,
    unit: 'MB',
    baseline: baselineRssMb,
    baselineName: 'RSS of the same node once ready, nothing opened (after a full GC, as the value)',
    ratio: round(rssMb / baselineRssMb),
    ...rest,
    ...sizes(meta, base),
    target: targetMb,
    targetName: `the RSS once ready + the budget of the cache of opened conversations + ${RSS_CONSTANT_MB} MB (what the process keeps of its peak while opening: allocator pages, not the index)`,
    // and no more after opening everything again: what the process keeps does not grow with the opens
    ok: targetMb !== null && rssMb <= targetMb && r.secondPassRssMb <= targetMb,
    ...(targetMb === null ? { note: 'the store reports no budget of its opened conversations (no LRU): every opened conversation stays in memory' } : {})
  })
}

// ---------------------------------------------------------------- 3b. an index save

/** CPU ms of fn (this process's threads: the file writes' syscalls included, the waits not). */
async function cpuMs (fn: () => Promise<void>): Promise<{ cpu: number; wall: number }> {
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  await fn()
  const c = process.cpuUsage(c0)
  return { cpu: (c.user + c.system) / 1000, wall: performance.now() - t0 }
}

async function indexSave (big: string, meta: DatasetMeta, base: DatasetMeta): Promise<void> {
  const { state } = await new HistoryIndexFile(indexDir(big)).load(null)
  if (state === null) throw new Error(`${big} has no readable index`)
  const work = await workDir('save')
  const index = new HistoryIndexFile(work)
  const snapshot = await cpuMs(() => index.save(state)) // a fresh index file: a whole snapshot, as a compaction writes
  const snapshotBytes = (await fs.stat(index.files.snapshot)).size
  // what one append changes: its conversation's summary and its feed's watermark
  const convs = Object.keys(state.conversations)
  const feeds = Object.values(state.feeds)
  const saves: Array<{ cpu: number; wall: number }> = []
  let journal = (await fs.stat(index.files.journal)).size
  const frames: number[] = []
  for (let i = 0; i < 21; i++) {
    const f = feeds[i % feeds.length] as IndexState['feeds'][string]
    f.indexed++
    index.changed('feed', f.key)
    index.changed('conversation', convs[i % convs.length] as string)
    const r = await cpuMs(() => index.save(state))
    const now = (await fs.stat(index.files.journal)).size
    frames.push(now - journal)
    journal = now
    if (i > 0) saves.push(r)
  }
  // the baseline, the previous format: the whole state as JSON, written whole (index.json)
  const json: Array<{ cpu: number; wall: number }> = []
  for (let i = 0; i < 5; i++) json.push(await cpuMs(() => writeStateFile(path.join(work, 'index.json'), JSON.stringify({ v: 1, ...state }))))
  const value = median(saves.map(r => r.cpu))
  const baseline = median(json.map(r => r.cpu))
  emit({
    name: 'scale.index.save',
    value: round(value),
    unit: 'ms',
    baseline: round(baseline),
    baselineName: 'the previous format: JSON.stringify of the whole index and writeStateFile of it (CPU ms)',
    ratio: round(value / baseline, 4),
    wallMs: round(median(saves.map(r => r.wall))),
    baselineWallMs: round(median(json.map(r => r.wall))),
    frameBytes: median(frames),
    snapshotCpuMs: round(snapshot.cpu),
    snapshotWallMs: round(snapshot.wall),
    snapshotBytes,
    jsonBytes: (await fs.stat(path.join(work, 'index.json'))).size,
    ...sizes(meta, base),
    note: 'value: CPU ms of one save after one append (a summary and a watermark changed), median of 20; snapshot*: one whole snapshot (a compaction)'
  })
}

// ---------------------------------------------------------------- 4. reconnect, nothing changed

interface Pair { a: Device; b: Device; conn: Connection | null }

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

/** Resolves when the link has carried nothing for quietMs; returns when it last carried anything. */
async function quiet (conn: Connection, quietMs = 100): Promise<number> {
  while (performance.now() - conn.link.lastChunkAt < quietMs) await sleep(10)
  return conn.link.lastChunkAt
}

/** Connects a pair and times it: until both sides' sessions are open with each other's whole feed list, and until the link is quiet. */
async function timeConnect (p: Pair): Promise<{ ms: number; settledMs: number; opened: number; bytes: number }> {
  const opens = openCounter(p.b.history.corestore)
  const wantA = p.b.history.feeds().length
  const wantB = p.a.history.feeds().length
  const t0 = performance.now()
  const conn = await connect(p.a, p.b)
  p.conn = conn
  await until(() => conn.a.opened && conn.b.opened && conn.a.remoteFeeds.size >= wantA && conn.b.remoteFeeds.size >= wantB, 'the sessions to open', 300_000)
  const ms = performance.now() - t0
  const last = await quiet(conn)
  opens.stop()
  return { ms, settledMs: last - t0, opened: opens.count(), bytes: conn.link.bytes }
}

async function reconnect (big: string, small: string, meta: DatasetMeta, base: DatasetMeta): Promise<void> {
  const RUNS = 7
  const cluster = new Cluster()
  const pairs = new Map<string, Pair>()
  for (const [name, dir] of [['big', big], ['small', small]] as const) {
    const a = await cluster.device(holder(dir, 0))
    const b = await cluster.device(holder(dir, 1))
    const p: Pair = { a, b, conn: null }
    const first = await timeConnect(p) // no feed list cached yet: each side sends its whole list
    note(`reconnect: ${name} pair's first connection took ${round(first.ms)} ms, ${first.bytes} bytes`)
    pairs.set(name, p)
  }
  await sleep(1500) // let manifests and indexes settle
  const runsOf = new Map<string, Array<Awaited<ReturnType<typeof timeConnect>>>>([['big', []], ['small', []]])
  for (let i = 0; i <= RUNS; i++) {
    for (const [name, p] of pairs) {
      await p.conn?.link.cut()
      await sleep(50)
      const r = await timeConnect(p)
      if (i > 0) runsOf.get(name)?.push(r)
    }
  }
  // after B restarts (a fresh HistoryStore and SyncNode on its directory): nothing of A's is open on B
  const restarts = new Map<string, Array<Awaited<ReturnType<typeof timeConnect>>>>([['big', []], ['small', []]])
  for (let i = 0; i < 3; i++) {
    for (const [name, p] of pairs) {
      p.conn?.link.destroy()
      const dir = p.b.history.dir
      await closeDevice(p.b)
      await sleep(50)
      p.b = await cluster.device(dir)
      restarts.get(name)?.push(await timeConnect(p))
    }
  }
  for (const p of pairs.values()) {
    p.conn?.link.destroy()
    await closeDevice(p.b)
    await closeDevice(p.a)
  }
  const m = (name: string, f: (r: Awaited<ReturnType<typeof timeConnect>>) => number, from = runsOf): number => round(median((from.get(name) ?? []).map(f)))
  const most = (name: string, from = runsOf): number => Math.max(...(from.get(name) ?? []).map(r => r.opened))
  const value = m('big', r => r.ms)
  const baseline = m('small', r => r.ms)
  emit({
    name: 'scale.reconnect.unchanged',
    value,
    unit: 'ms',
    baseline,
    baselineName: 'same, two holders of 100 conversations',
    ratio: round(value / baseline),
    coresOpened: most('big'),
    baselineCoresOpened: most('small'),
    settledMs: m('big', r => r.settledMs),
    baselineSettledMs: m('small', r => r.settledMs),
    bytes: m('big', r => r.bytes),
    baselineBytes: m('small', r => r.bytes),
    restartedMs: m('big', r => r.ms, restarts),
    baselineRestartedMs: m('small', r => r.ms, restarts),
    restartedSettledMs: m('big', r => r.settledMs, restarts),
    restartedBytes: m('big', r => r.bytes, restarts),
    restartedCoresOpened: most('big', restarts),
    feeds: meta.feeds,
    ...sizes(meta, base),
    target: 1,
    ok: value / baseline <= 1.25 && most('big') === 0
  })
}

// ---------------------------------------------------------------- 5. initial sync of a new device

async function initialSync (dir: string, meta: DatasetMeta): Promise<void> {
  // The whole history takes tens of minutes even for raw replication: by default the new
  // device syncs from the writer that holds least.
  const source = SYNC_FULL ? holder(dir, 0) : deviceDir(dir, meta.syncSource)
  const { result: r } = await child<Record<string, unknown> & { value: number; ratio: number; entries: number; conversations: number }>('sync', [source, await workDir('sync'), '1'])
  emit({
    name: 'scale.sync.initial',
    ...r,
    unit: 'entries/s',
    baselineName: 'raw Corestore replication of the same cores (keys known) into a fresh Corestore, before and after',
    source: path.basename(source),
    capped: !SYNC_FULL,
    ...(SYNC_FULL ? {} : { note: `capped: a new device syncing from the ${path.basename(source)} (${r.entries} of ${meta.entries} entries, ${r.conversations} conversations); ARBOR_BENCH_SCALE_SYNC=full syncs the whole history from a holder` }),
    datasetConversations: meta.conversations,
    datasetEntries: meta.entries,
    loadAverage: load(),
    target: 0.8,
    ok: r.ratio >= 0.8
  })
}

// ---------------------------------------------------------------- 6. append into the large store

async function appendThroughput (big: string, meta: DatasetMeta, base: DatasetMeta): Promise<void> {
  const { result: r } = await child<Record<string, unknown> & { value: number; ratio: number }>('append', [holder(big, 0), await workDir('append'), '3'])
  emit({
    name: 'scale.append',
    ...r,
    unit: 'entries/s',
    baselineName: 'raw Hypercore append of the same bytes, batches of 100, into a new core of the same Corestore',
    baselineFreshName: 'the same into a fresh Corestore (history.append.throughput\'s baseline)',
    ...sizes(meta, base),
    target: 0.5,
    ok: r.ratio >= 0.5
  })
}

try {
  const { dir, meta } = await dataset(SCALE)
  const { dir: baseDir, meta: base } = await dataset(BASELINE)
  const big = holder(dir, 0)
  const small = holder(baseDir, 0)
  const parts: Array<[string, () => Promise<void>]> = [
    ['ls', () => lsCold(big, small, meta, base)],
    ['ready', () => startReady(big, small, meta, base)],
    ['rss', () => rssOpenAll(big, meta, base)],
    ['save', () => indexSave(big, meta, base)],
    ['reconnect', () => reconnect(dir, baseDir, meta, base)],
    ['sync', () => initialSync(dir, meta)],
    ['append', () => appendThroughput(dir, meta, base)]
  ]
  for (const [part, fn] of parts) {
    if (!runs(part)) continue
    const t = performance.now()
    await fn()
    note(`${part} took ${round((performance.now() - t) / 1000, 1)} s`)
  }
} finally {
  await fs.rm(tmp, { recursive: true, force: true })
}
