// Benchmarks of the history store (DESIGN.md, "History"), each beside a baseline measured
// in the same run. Prints one JSON line per measurement; see bench/README.md.
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import Corestore from 'corestore'
import { HistoryStore } from '../src/main/history/history-store'
import { encodeEntry, type Entry } from '../src/shared/entry/entry'
import { benchLog, chain, emit, ensureBuilt, interleave, median, lsCli, round, runNode, textMaker } from './lib/util'

const TS = 1_700_000_000_000 // fixed clock: entry ids can be computed ahead (see chain)
const RUNS = 5
const text = textMaker(42)

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'arbor-bench-'))
let dirs = 0
const freshDir = (name: string): string => path.join(tmp, `${name}-${dirs++}`)
const openStore = (dir: string): HistoryStore => new HistoryStore({ dir, watchPeers: false, log: benchLog, now: () => TS })

async function timed<T> (fn: () => Promise<T>): Promise<{ ms: number; cpuMs: number; value: T }> {
  const t0 = performance.now()
  const c0 = process.cpuUsage()
  const value = await fn()
  const c = process.cpuUsage(c0)
  return { ms: performance.now() - t0, cpuMs: (c.user + c.system) / 1000, value }
}

// ---------------------------------------------------------------- a. append throughput

async function appendThroughput (): Promise<void> {
  const TOTAL = 10_000
  const CALL = 100
  const RUNS_A = 5
  let lastEntries: Entry[] = []

  // entries/s by wall clock, and by CPU time of the whole process (steadier on a busy machine)
  interface Rate { wall: number; cpu: number }
  const storeRun = async (): Promise<Rate> => {
    const store = openStore(freshDir('append'))
    await store.ready()
    const root = await store.createConversation({ title: 'append bench' })
    const ctx = { conversation: root.id, device: store.device, ts: TS }
    const calls: Array<ReturnType<typeof chain>['drafts']> = []
    let parent = root.id
    for (let i = 0; i < TOTAL / CALL; i++) {
      const c = chain(ctx, parent, CALL, text)
      calls.push(c.drafts)
      parent = c.last
    }
    const written: Entry[] = []
    const { ms, cpuMs } = await timed(async () => {
      for (const drafts of calls) written.push(...await store.append(root.id, drafts))
    })
    await store.close()
    lastEntries = written
    return { wall: TOTAL / (ms / 1000), cpu: TOTAL / (cpuMs / 1000) }
  }

  const rawRun = async (): Promise<Rate> => {
    const buffers = lastEntries.map(e => Buffer.from(encodeEntry(e)))
    const store = new Corestore(path.join(freshDir('raw-append'), 'corestore'))
    await store.ready()
    const core = store.get({ name: 'bench' })
    await core.ready()
    const { ms, cpuMs } = await timed(async () => {
      for (let i = 0; i < buffers.length; i += CALL) await core.append(buffers.slice(i, i + CALL))
    })
    await store.close()
    return { wall: buffers.length / (ms / 1000), cpu: buffers.length / (cpuMs / 1000) }
  }

  const [storeRuns = [], rawRuns = []] = await interleave(RUNS_A, [storeRun, rawRun])
  const store = median(storeRuns.map(r => r.wall))
  const raw = median(rawRuns.map(r => r.wall))
  const bytes = lastEntries.reduce((n, e) => n + Buffer.byteLength(encodeEntry(e)), 0) / lastEntries.length
  emit({
    name: 'history.append.throughput',
    value: Math.round(store),
    unit: 'entries/s',
    baseline: Math.round(raw),
    baselineName: 'raw Hypercore append, same bytes, batches of 100',
    ratio: round(store / raw, 3),
    // the same by CPU time: entries per CPU-second of the store over the raw core's
    cpuRatio: round(median(storeRuns.map(r => r.cpu)) / median(rawRuns.map(r => r.cpu)), 3),
    pairedRatio: round(median(storeRuns.map((r, i) => r.wall / ((rawRuns[i] as Rate).wall))), 3),
    target: 0.5,
    ok: store / raw >= 0.5,
    entries: TOTAL,
    perCall: CALL,
    runs: RUNS_A,
    avgEntryBytes: Math.round(bytes),
    loadAverage: os.loadavg().map(x => round(x))
  })
}

// ---------------------------------------------------------------- b. arbor ls cold start

async function buildConversations (dir: string, conversations: number, perConversation: number): Promise<void> {
  const store = openStore(dir)
  await store.ready()
  const device = store.device
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < conversations) {
      const n = next++
      const root = await store.createConversation({ title: `conversation ${n}: ${text().slice(0, 40)}` })
      const { drafts } = chain({ conversation: root.id, device, ts: TS }, root.id, perConversation - 1, text)
      await store.append(root.id, drafts)
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  await store.close()
}

async function lsChild (dir: string): Promise<{ ms: number; count: number }> {
  const r = await runNode(['--import', 'tsx', path.join('bench', 'lib', 'ls-child.ts'), dir])
  if (r.code !== 0) throw new Error(`ls-child failed (${r.code}): ${r.stderr}`)
  return JSON.parse(r.stdout.trim().split('\n').pop() as string) as { ms: number; count: number }
}


async function listColdStart (): Promise<void> {
  const big = freshDir('ls-1000')
  const small = freshDir('ls-10')
  const build = await timed(() => buildConversations(big, 1000, 100))
  await buildConversations(small, 10, 100)
  process.stderr.write(`bench history: built 1,000 × 100 entries in ${round(build.ms / 1000, 1)} s\n`)

  const [bigRuns = [], smallRuns = []] = await interleave(RUNS, [() => lsChild(big), () => lsChild(small)])
  if (bigRuns.some(r => r.count !== 1000) || smallRuns.some(r => r.count !== 10)) throw new Error('list() returned the wrong number of conversations')
  const inProcess = median(bigRuns.map(r => r.ms))
  const baseline = median(smallRuns.map(r => r.ms))
  emit({
    name: 'history.ls.inprocess.1000x100',
    value: round(inProcess),
    unit: 'ms',
    baseline: round(baseline),
    baselineName: 'same, 10 conversations × 100 entries',
    ratio: round(inProcess / baseline),
    target: 200,
    ok: inProcess < 200
  })

  ensureBuilt('bench history')
  const [cliBigRuns = [], cliSmallRuns = [], nodeRuns = []] = await interleave(RUNS, [
    () => lsCli(big, 1000),
    () => lsCli(small, 10),
    async () => (await runNode(['-e', ''])).ms
  ])
  const cliBig = median(cliBigRuns)
  const cliSmall = median(cliSmallRuns)
  const nodeBare = median(nodeRuns)
  emit({
    name: 'history.ls.process.1000x100',
    value: round(cliBig),
    unit: 'ms',
    baseline: round(cliSmall),
    baselineName: '`node bin/arbor.js ls` on 10 conversations × 100 entries',
    ratio: round(cliBig / cliSmall),
    nodeStartup: round(nodeBare)
  })
}

// ---------------------------------------------------------------- c. open a conversation

async function openConversation (): Promise<void> {
  const N = 10_000
  const dir = freshDir('open')
  const store = openStore(dir)
  await store.ready()
  const root = await store.createConversation({ title: 'open bench' })
  const ctx = { conversation: root.id, device: store.device, ts: TS }
  const entries: Entry[] = [root]
  let parent = root.id
  for (let i = 1; i < N; i += 1000) {
    const c = chain(ctx, parent, Math.min(1000, N - i), text)
    entries.push(...await store.append(root.id, c.drafts))
    parent = c.last
  }
  const feed = store.feeds(root.id).find(f => f.own)
  if (feed === undefined) throw new Error('no own feed')
  await store.close()
  const jsonl = path.join(freshDir('jsonl'), 'session.jsonl')
  await fs.mkdir(path.dirname(jsonl), { recursive: true })
  await fs.writeFile(jsonl, entries.map(e => encodeEntry(e) + '\n').join(''))

  const readyRuns: number[] = []
  const storeRun = async (): Promise<number> => {
    const s = openStore(dir)
    const ready = await timed(() => s.ready())
    const open = await timed(() => s.open(root.id))
    if (open.value.size !== N) throw new Error(`opened ${open.value.size} entries, expected ${N}`)
    await s.close()
    readyRuns.push(ready.ms)
    return open.ms
  }
  const jsonlRun = async (): Promise<number> => {
    const { ms, value } = await timed(async () => {
      const text = await fs.readFile(jsonl, 'utf8')
      const out: unknown[] = []
      for (const line of text.split('\n')) if (line !== '') out.push(JSON.parse(line))
      return out
    })
    if (value.length !== N) throw new Error('jsonl baseline read the wrong count')
    return ms
  }
  const rawRun = async (): Promise<number> => {
    const cs = new Corestore(path.join(dir, 'corestore'))
    await cs.ready()
    const core = cs.get({ key: Buffer.from(feed.key, 'hex') })
    await core.ready()
    const { ms, value } = await timed(() => Promise.all(Array.from({ length: core.length - 1 }, (_, i) => core.get(i + 1))))
    if (value.length !== N || value.some(b => b === null)) throw new Error('raw Hypercore baseline read the wrong blocks')
    await cs.close()
    return ms
  }
  const [storeRuns = [], jsonlRuns = [], rawRuns = []] = await interleave(RUNS, [storeRun, jsonlRun, rawRun])
  const open = median(storeRuns)
  const jsonlMs = median(jsonlRuns)
  const rawMs = median(rawRuns)
  emit({
    name: 'history.open.10000',
    value: round(open),
    unit: 'ms',
    baseline: round(jsonlMs),
    baselineName: 'JSONL readFile + split + JSON.parse per line',
    ratio: round(open / jsonlMs),
    hypercore: round(rawMs),
    hypercoreName: 'Promise.all of core.get for the 10,000 blocks',
    ratioHypercore: round(open / rawMs),
    readyMs: round(median(readyRuns.slice(1))),
    target: 2,
    ok: open / jsonlMs <= 2
  })
}

try {
  // ARBOR_BENCH_HISTORY=append (or ls, open) runs one part only
  const only = process.env.ARBOR_BENCH_HISTORY
  if (only === undefined || only === 'append') await appendThroughput()
  if (only === undefined || only === 'ls') await listColdStart()
  if (only === undefined || only === 'open') await openConversation()
} finally {
  await fs.rm(tmp, { recursive: true, force: true })
}
