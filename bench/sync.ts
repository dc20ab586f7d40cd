// Benchmarks of sync (DESIGN.md, "Sync and trust"): two devices on an in-memory link with
// a real Noise handshake, SyncNode without a swarm; each beside raw Corestore replication of
// the same cores over the same kind of link. Then discovery: devices as processes with a real
// Hyperswarm on a HyperDHT testnet, beside a bare Hyperswarm pair. Prints one JSON line per
// measurement; see bench/README.md. ARBOR_BENCH_SYNC=discovery (or transfer) runs one part.
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import Corestore from 'corestore'
import type Hypercore from 'hypercore'
import crypto from 'hypercore-crypto'
import { HistoryStore, type EntriesEvent } from '../src/main/history/history-store'
import { SyncNode } from '../src/main/sync/sync-node'
import type { EntryDraft } from '../src/shared/entry/entry'
import type { Logger } from '../src/shared/logger'
import type { MemoryLink } from '../test/helpers/in-process-network'
import { TestCluster, type TestDevices } from '../test/helpers/test-cluster'
import { DeviceProcesses, awayMs, netOnOnce, restartOnce as restartProcessOnce, type DeviceProcess } from '../test/helpers/sync-node-processes'
import { emit, median, percentile, round, start, textMaker, type Took } from './lib/util'
import { closeDevice, connect, connectRaw, contiguous, openCounter, until, type Connection, type Device } from './lib/sync-devices'

const PER_CONVERSATION = 20 // entries after each root
const TARGET = 0.8
const STALL_MS = 60_000 // no progress for this long fails the bench with what is missing
const text = textMaker(7)
const log: Logger = {
  info: () => undefined,
  warn: m => process.stderr.write(`bench sync warning: ${m}\n`),
  error: m => process.stderr.write(`bench sync error: ${m}\n`)
}
const note = (m: string): void => { process.stderr.write(`bench sync: ${m}\n`) }

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'arbor-bench-sync-'))
let dirs = 0
const freshDir = (name: string): string => path.join(tmp, `${name}-${dirs++}`)
const secret = crypto.randomBytes(32)
const devices: TestDevices = new Map() // every device of the bench is in one cluster
const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

async function timed<T> (fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now()
  const value = await fn()
  return { ms: performance.now() - t0, value }
}


/**
 * The fields of a subject-versus-baseline line whose values are throughputs of `n` entries:
 * medians of each, the paired ratio (median of run-by-run ratios, steadier when the load
 * on the machine changes) and the ratio of CPU time (baseline CPU / subject CPU).
 */
function versus (n: number, subject: Took[], base: Took[]): Record<string, number> {
  const value = n / (median(subject.map(t => t.ms)) / 1000)
  const baseline = n / (median(base.map(t => t.ms)) / 1000)
  const cpu = median(subject.map(t => t.cpuMs))
  const baseCpu = median(base.map(t => t.cpuMs))
  return {
    value: Math.round(value),
    baseline: Math.round(baseline),
    ratio: round(value / baseline, 3),
    pairedRatio: round(median(subject.map((t, i) => (base[i] as Took).ms / t.ms)), 3),
    ms: round(median(subject.map(t => t.ms))),
    baselineMs: round(median(base.map(t => t.ms))),
    cpuMs: round(cpu),
    baselineCpuMs: round(baseCpu),
    cpuRatio: round(baseCpu / cpu, 3)
  }
}


// ---------------------------------------------------------------- devices


async function device (dir = freshDir('device')): Promise<Device> {
  const history = new HistoryStore({ dir, log, idleCloseMs: 500 })
  await history.ready()
  const cluster = new TestCluster(secret, devices, 'bench')
  cluster.add(history.device)
  const node = new SyncNode({ history, cluster, swarm: false, log })
  await node.ready()
  return { history, node }
}


/** n drafts chained after `parent` (`$k` names the k-th draft of the same call). */
function drafts (parent: string, n: number): EntryDraft[] {
  return Array.from({ length: n }, (_, i): EntryDraft => ({
    kind: i % 2 === 0 ? 'user' : 'assistant',
    body: { text: text() },
    parents: [i === 0 ? parent : `$${i - 1}`]
  }))
}

/** Fills a device with conversations of a root and PER_CONVERSATION entries; returns each conversation's head. */
async function fill (h: HistoryStore, conversations: number): Promise<Map<string, string>> {
  const heads = new Map<string, string>()
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < conversations) {
      next++
      const root = await h.createConversation({ title: text().slice(0, 40) })
      const written = await h.append(root.id, drafts(root.id, PER_CONVERSATION))
      heads.set(root.id, (written[written.length - 1] as { id: string }).id)
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  return heads
}

/**
 * Entries a device holds, kept up to date from its 'entries' events (a summary's size is
 * what was indexed, waiting entries included); reach(n) resolves once it holds n.
 */
function entryCounter (h: HistoryStore): { reach: (n: number) => Promise<void>; stop: () => void } {
  const sizes = new Map<string, number>()
  for (const s of h.list()) sizes.set(s.id, s.size)
  let total = [...sizes.values()].reduce((a, b) => a + b, 0)
  let want = Infinity
  let done: () => void = () => undefined
  const on = (ev: EntriesEvent): void => {
    const size = h.summary(ev.conversation)?.size ?? 0
    total += size - (sizes.get(ev.conversation) ?? 0)
    sizes.set(ev.conversation, size)
    if (total >= want) done()
  }
  h.on('entries', on)
  return {
    reach: n => new Promise((resolve, reject) => {
      want = n
      // A stall must fail loudly with what is missing, not hang the bench.
      let seen = total
      const watchdog = setInterval(() => {
        if (total !== seen) { seen = total; return }
        clearInterval(watchdog)
        const peer = h.feeds().filter(f => !f.own)
        const empty = peer.filter(f => f.indexed === 0).length
        reject(new Error(`sync stalled: ${total} of ${n} entries after ${STALL_MS / 1000} s without progress (${peer.length} peer feeds known, ${empty} of them with nothing read)`))
      }, STALL_MS)
      done = () => { clearInterval(watchdog); resolve() }
      if (total >= n) done()
    }),
    stop: () => { h.off('entries', on) }
  }
}






/** Resolves when the link has carried nothing for quietMs; returns when it last carried anything. */
async function quiet (link: MemoryLink, quietMs = 100): Promise<number> {
  while (performance.now() - link.lastChunkAt < quietMs) await sleep(10)
  return link.lastChunkAt
}

/** A device's own feeds with the lengths it can serve. */
function ownFeeds (h: HistoryStore): Array<{ key: string; conversation: string; length: number }> {
  return h.feeds().filter(f => f.own).map(f => ({ key: f.key, conversation: f.conversation, length: h.availableLength(f.key) }))
}

// ---------------------------------------------------------------- 1. initial sync, 2. catch-up

async function initialAndCatchup (): Promise<{ a: Device; b: Device; bLink: Connection }> {
  const CONVERSATIONS = 1000
  const TOTAL = CONVERSATIONS * (PER_CONVERSATION + 1)
  const RUNS = 5
  const a = await device()
  const built = await timed(() => fill(a.history, CONVERSATIONS))
  const heads = built.value
  note(`built ${CONVERSATIONS} × ${PER_CONVERSATION + 1} entries in ${round(built.ms / 1000, 1)} s`)
  const feeds = ownFeeds(a.history)
  const feedLength = new Map(feeds.map(f => [f.key, f.length]))

  let keptB: { b: Device; conn: Connection } | null = null
  let keptC: { store: Corestore; link: MemoryLink; cores: Map<string, Hypercore.Core> } | null = null
  const watermark: number[] = []

  const arborRun = async (): Promise<Took> => {
    const b = await device()
    const counter = entryCounter(b.history)
    const t0 = performance.now()
    const took = start()
    const conn = await connect(a, b)
    await counter.reach(TOTAL)
    const t = took()
    counter.stop()
    // the watermark: entries in B's entry cache too (what a restart would not read again)
    while (!b.history.feeds().every(f => f.indexed >= (feedLength.get(f.key) ?? 0))) await sleep(5)
    watermark.push(performance.now() - t0)
    if (b.history.list().length !== CONVERSATIONS || b.history.list().some(s => s.size !== PER_CONVERSATION + 1 || s.waiting !== 0)) throw new Error('B does not hold every conversation')
    if (keptB !== null) await closeDevice(keptB.b)
    keptB = { b, conn }
    return t
  }

  const rawRun = async (): Promise<Took> => {
    const store = new Corestore(path.join(freshDir('raw'), 'corestore'))
    await store.ready()
    const took = start()
    const link = await connectRaw(a.history.corestore, store)
    const cores = new Map<string, Hypercore.Core>()
    const waits = feeds.map(f => {
      const core = store.get({ key: Buffer.from(f.key, 'hex') })
      cores.set(f.key, core)
      core.download({ start: 0, end: -1 })
      return { core, length: f.length }
    })
    await contiguous(waits)
    const t = took()
    if (keptC !== null) { keptC.link.destroy(); await keptC.store.close() }
    keptC = { store, link, cores }
    return t
  }

  const arbor: Took[] = []
  const raw: Took[] = []
  for (let i = 0; i <= RUNS; i++) { // run 0 warms up
    const x = await arborRun()
    const y = await rawRun()
    note(`initial run ${i}: arbor ${round(x.ms)} ms (cpu ${round(x.cpuMs)}), raw ${round(y.ms)} ms (cpu ${round(y.cpuMs)})`)
    if (i > 0) { arbor.push(x); raw.push(y) }
  }
  const initial = versus(TOTAL, arbor, raw)
  emit({
    name: 'sync.initial.1000x20',
    value: initial.value as number,
    unit: 'entries/s',
    baseline: initial.baseline,
    baselineName: 'raw Corestore replication of the same 1,000 cores (keys known) into a fresh Corestore',
    ...initial,
    watermarkMs: round(median(watermark.slice(1))),
    entries: TOTAL,
    target: TARGET,
    ok: (initial.ratio as number) >= TARGET
  })

  // ---- 2. catch-up: 10,000 new entries across 50 conversations while B (and C) are away
  const CHANGED = 50
  const NEW = 10_000
  const B = (keptB as unknown as { b: Device; conn: Connection }).b
  let bConn = (keptB as unknown as { b: Device; conn: Connection }).conn
  const C = keptC as unknown as { store: Corestore; link: MemoryLink; cores: Map<string, Hypercore.Core> }
  const changed = [...heads.keys()].slice(0, CHANGED)
  const arborC: Took[] = []
  const rawC: Took[] = []
  for (let i = 0; i <= RUNS; i++) {
    await bConn.link.cut()
    C.link.destroy()
    await sleep(50)
    await Promise.all(changed.map(async conv => {
      const written = await a.history.append(conv, drafts(heads.get(conv) as string, NEW / CHANGED))
      heads.set(conv, (written[written.length - 1] as { id: string }).id)
    }))
    await sleep(50) // A's announcement timer fires with nobody connected
    const before = B.history.list().reduce((n, s) => n + s.size, 0)
    const counter = entryCounter(B.history)
    const tookB = start()
    bConn = await connect(a, B)
    await counter.reach(before + NEW)
    const x = tookB()
    counter.stop()
    const want = (PER_CONVERSATION + 1) + (i + 1) * (NEW / CHANGED)
    if (changed.some(conv => B.history.summary(conv)?.size !== want || B.history.summary(conv)?.waiting !== 0)) throw new Error('B did not catch up with every conversation')

    const lengths = new Map(ownFeeds(a.history).map(f => [f.key, f.length]))
    const targets = feeds.filter(f => changed.includes(f.conversation)).map(f => ({ core: C.cores.get(f.key) as Hypercore.Core, length: lengths.get(f.key) as number }))
    const tookC = start()
    C.link = await connectRaw(a.history.corestore, C.store)
    await contiguous(targets)
    const y = tookC()
    note(`catch-up run ${i}: arbor ${round(x.ms)} ms (cpu ${round(x.cpuMs)}), raw ${round(y.ms)} ms (cpu ${round(y.cpuMs)})`)
    if (i > 0) { arborC.push(x); rawC.push(y) }
  }
  C.link.destroy()
  await C.store.close()
  const catchup = versus(NEW, arborC, rawC)
  emit({
    name: 'sync.catchup.10000x50',
    value: catchup.value as number,
    unit: 'entries/s',
    baseline: catchup.baseline,
    baselineName: 'raw Corestore replication catch-up of the same cores (all 1,000 open, live download ranges)',
    ...catchup,
    entries: NEW,
    conversations: CHANGED,
    target: TARGET,
    ok: (catchup.ratio as number) >= TARGET
  })
  return { a, b: B, bLink: bConn }
}

// ---------------------------------------------------------------- 3. reconnect, nothing changed

interface Pair { size: number; a: Device; b: Device; conn: Connection }

/** Connects a pair and times it: until both sides' sessions are open with each other's feed lists, and until the link is quiet. */
async function timeConnect (p: Pair): Promise<{ ms: number; settledMs: number; opened: number }> {
  const opens = openCounter(p.b.history.corestore)
  const t0 = performance.now()
  p.conn = await connect(p.a, p.b)
  const { a, b } = p.conn
  // session open on both sides, each side's feeds announcement received and processed
  await until(() => a.opened && b.opened && a.remoteFeeds.size >= p.size && b.remoteFeeds.size >= p.size, 'the session to open')
  const ms = performance.now() - t0
  const last = await quiet(p.conn.link)
  opens.stop()
  return { ms, settledMs: last - t0, opened: opens.count() }
}

async function reconnectOnce (p: Pair): Promise<{ ms: number; settledMs: number; opened: number; bytes: number }> {
  await p.conn.link.cut()
  await sleep(50)
  const r = await timeConnect(p)
  return { ...r, bytes: p.conn.link.bytes }
}

/** The same after B restarts (a fresh HistoryStore on its directory): nothing of A's is open on B. */
async function restartOnce (p: Pair): Promise<{ ms: number; settledMs: number; opened: number }> {
  const dir = p.b.history.dir
  await closeDevice(p.b)
  await sleep(50)
  p.b = await device(dir)
  return timeConnect(p)
}

async function reconnect (big: Pair): Promise<void> {
  const RUNS = 7
  const a = await device()
  await fill(a.history, 100)
  const b = await device()
  const counter = entryCounter(b.history)
  const conn = await connect(a, b)
  await counter.reach(100 * (PER_CONVERSATION + 1))
  counter.stop()
  const small: Pair = { size: 100, a, b, conn }
  await sleep(1500) // let manifests and indexes settle

  const runs = new Map<Pair, Array<Awaited<ReturnType<typeof reconnectOnce>>>>([[small, []], [big, []]])
  for (let i = 0; i <= RUNS; i++) {
    for (const p of [small, big]) {
      const r = await reconnectOnce(p)
      if (i > 0) runs.get(p)?.push(r)
    }
  }
  const restarts = new Map<Pair, Array<Awaited<ReturnType<typeof restartOnce>>>>([[small, []], [big, []]])
  for (let i = 0; i < 3; i++) for (const p of [small, big]) restarts.get(p)?.push(await restartOnce(p))

  const m = (p: Pair, f: (r: Awaited<ReturnType<typeof reconnectOnce>>) => number): number => median((runs.get(p) ?? []).map(f))
  const mr = (p: Pair, f: (r: Awaited<ReturnType<typeof restartOnce>>) => number): number => median((restarts.get(p) ?? []).map(f))
  const value = m(big, r => r.ms)
  const baseline = m(small, r => r.ms)
  const opened1000 = Math.max(...(runs.get(big) ?? []).map(r => r.opened))
  const opened100 = Math.max(...(runs.get(small) ?? []).map(r => r.opened))
  emit({
    name: 'sync.reconnect.unchanged',
    value: round(value),
    unit: 'ms',
    baseline: round(baseline),
    baselineName: 'same, 100 conversations',
    ratio: round(value / baseline),
    coresOpened1000: opened1000,
    coresOpened100: opened100,
    settledMs1000: round(m(big, r => r.settledMs)),
    settledMs100: round(m(small, r => r.settledMs)),
    bytes1000: m(big, r => r.bytes),
    bytes100: m(small, r => r.bytes),
    restartedMs1000: round(mr(big, r => r.ms)),
    restartedMs100: round(mr(small, r => r.ms)),
    restartedSettledMs1000: round(mr(big, r => r.settledMs)),
    restartedCoresOpened1000: Math.max(...(restarts.get(big) ?? []).map(r => r.opened)),
    restartedCoresOpened100: Math.max(...(restarts.get(small) ?? []).map(r => r.opened)),
    target: 1,
    ok: value / baseline <= 1.25 && opened1000 === 0 && opened100 === 0
  })
  for (const p of [small, big]) p.conn.link.destroy()
  await closeDevice(small.b)
  await closeDevice(small.a)
}

// ---------------------------------------------------------------- 4. discovery after net on and restarts

const DISCOVERY_TARGET_MS = 2000

/** A bare Hyperswarm on b starts again on the topic: ms until it has its connection to a, and whether a had one within 2 s more. */
async function bareRestartOnce (a: DeviceProcess, b: DeviceProcess, away: number): Promise<{ ms: number; oneSided: boolean }> {
  await b.close()
  await sleep(away)
  const t = await b.start([a.device])
  const ms = (await b.connectedTo(a.device, t)).t - t
  const oneSided = await a.connectedTo(b.device, t, ms + 2000).then(() => false, () => true)
  return { ms, oneSided }
}

/** median, p90 and max of a list of ms, rounded, under a prefix (`p90`, or `bothP90`…). */
function spread (ms: number[], prefix = ''): Record<string, number> {
  const k = (s: string): string => prefix === '' ? s : `${prefix}${s[0]?.toUpperCase() ?? ''}${s.slice(1)}`
  return { [k('median')]: round(median(ms)), [k('p90')]: round(percentile(ms, 90)), [k('max')]: round(Math.max(...ms)) }
}

async function discovery (): Promise<void> {
  const RUNS = Number(process.env.ARBOR_BENCH_DISCOVERY_RUNS ?? 20)
  const net = new DeviceProcesses()
  try {
    await net.ready()
    const [a, b] = [await net.device('a'), await net.device('b')]
    const [bareA, bareB] = [await net.device('bare-a', { bare: true }), await net.device('bare-b', { bare: true })]
    await net.pair(a, b)
    await bareA.start()
    await bareB.start([bareA.device])
    const netOn: number[] = []
    const bothOn: number[] = []
    const restart: number[] = []
    const crash: number[] = []
    const bare: number[] = []
    let oneSided = 0
    for (let i = 0; i < RUNS; i++) {
      netOn.push(await netOnOnce(a, b, awayMs(i)))
      bothOn.push(await netOnOnce(a, b, awayMs(i), true))
      restart.push(await restartProcessOnce(a, b, awayMs(i)))
      crash.push(await restartProcessOnce(a, b, awayMs(i), 'kill'))
      const r = await bareRestartOnce(bareA, bareB, awayMs(i))
      bare.push(r.ms)
      if (r.oneSided) oneSided++
      note(`discovery run ${i}: net on ${netOn[i]} ms, both ${bothOn[i]} ms, restart ${restart[i]} ms, after a kill ${crash[i]} ms; bare Hyperswarm ${r.ms} ms${r.oneSided ? ' (the other side had none 2 s later)' : ''}`)
    }
    const baseline = median(bare)
    const common = {
      unit: 'ms',
      baseline: round(baseline),
      baselineName: 'a bare Hyperswarm on the same kind of DHT restarted on the topic: until it has its connection (one side)',
      ...spread(bare, 'baseline'),
      baselineOneSided: oneSided,
      runs: RUNS,
      target: DISCOVERY_TARGET_MS
    }
    emit({ name: 'sync.discovery.net-on', value: round(median(netOn)), ratio: round(median(netOn) / baseline), ...spread(netOn), ...spread(bothOn, 'both'), ...common, ok: percentile(netOn, 90) <= DISCOVERY_TARGET_MS && percentile(bothOn, 90) <= DISCOVERY_TARGET_MS })
    emit({ name: 'sync.discovery.restart', value: round(median(restart)), ratio: round(median(restart) / baseline), ...spread(restart), ...spread(crash, 'killed'), ...common, ok: percentile(restart, 90) <= DISCOVERY_TARGET_MS && percentile(crash, 90) <= DISCOVERY_TARGET_MS })
  } finally {
    await net.close()
  }
}

const part = process.env.ARBOR_BENCH_SYNC
try {
  if (part === undefined || part === 'transfer') {
    const { a, b, bLink } = await initialAndCatchup()
    const big: Pair = { size: 1000, a, b, conn: bLink }
    await reconnect(big)
    await closeDevice(big.b)
    await closeDevice(big.a)
  }
  if (part === undefined || part === 'discovery') await discovery()
} finally {
  await fs.rm(tmp, { recursive: true, force: true })
}
