// The data set of bench/scale.ts: a heavy user's year on 5 devices of one cluster, its feeds
// written with the real codec into each device's Corestore, the indexes of the devices the
// bench opens rebuilt from them by their HistoryStore (see buildDataset). Cached (datasetDir):
// later runs skip it.
import { existsSync } from 'node:fs'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import Corestore from 'corestore'
import type Hypercore from 'hypercore'
import { makeEntry } from '../../src/main/history/store/entry-codec'
import { makeFeedHeader } from '../../src/main/history/store/feed-header'
import { HistoryStore } from '../../src/main/history/history-store'
import type { ManifestRecord } from '../../src/main/history/store/manifest-record'
import { encodeEntry, type EntryDraft } from '../../src/shared/entry/entry'
import { held } from './sync-devices'
import { benchLog, random, round, textMaker } from './util'

/** Bump whenever what is generated changes: the cache is keyed by it. */
export const GENERATOR_VERSION = 2

export interface Scale { conversations: number; entries: number }
export const FULL: Scale = { conversations: 10_000, entries: 1_000_000 }
export const SMALL: Scale = { conversations: 1_000, entries: 100_000 }
/** the size every baseline of bench/scale is measured at */
export const BASELINE: Scale = { conversations: 100, entries: 10_000 }

export const DEVICES = ['laptop', 'desktop', 'server', 'phone', 'tablet'] as const
/** where conversations start: mostly the laptop */
const ORIGIN_WEIGHTS = [0.4, 0.25, 0.15, 0.12, 0.08]
/** the two devices that end up holding everything (the subjects of bench/scale) */
export const HOLDERS = [0, 1] as const

/** A conversation's entries, root included, as runs written one after another by devices. */
export interface Segment { device: number; entries: number }
export interface PlannedConversation { segments: Segment[]; cwd: boolean }

/** What the generator left, beside the devices' directories. */
export interface DatasetMeta {
  generator: number
  conversations: number
  entries: number
  feeds: number
  sizes: { median: number; p90: number; p99: number; max: number }
  continued: { twoDevices: number; threeSegments: number }
  /** per device, the feeds it holds and their blocks (entries and a header each) */
  held: Record<string, { blocks: number; feeds: number }>
  /** the device a new device's capped initial sync is from: of those not holders, the one holding least */
  syncSource: number
  generationMs: number
  phasesMs: Record<string, number>
  /** the generating process's peak RSS */
  peakRssMb: number
  bytesOnDisk: number
}

const note = (m: string): void => { process.stderr.write(`bench scale: ${m}\n`) }

/** The cache directory of one scale: ARBOR_BENCH_SCALE_DIR (default under the temp dir), keyed by the generator's version. */
export function datasetDir (scale: Scale): string {
  const root = process.env.ARBOR_BENCH_SCALE_DIR ?? path.join(os.tmpdir(), 'arbor-bench-scale')
  return path.join(root, `g${GENERATOR_VERSION}-${scale.conversations}c-${scale.entries}e`)
}

export function deviceDir (dataset: string, device: number): string {
  return path.join(dataset, 'devices', `${device}-${DEVICES[device] as string}`)
}

/** The meta of a complete data set (written last), or null. */
export async function readMeta (dataset: string): Promise<DatasetMeta | null> {
  const file = path.join(dataset, 'meta.json')
  if (!existsSync(file)) return null
  return JSON.parse(await fs.readFile(file, 'utf8')) as DatasetMeta
}

// ---------------------------------------------------------------- the plan (pure)

/**
 * Conversation sizes drawn from a log-normal (median ~30 % of the mean: most conversations
 * small, a few of thousands of entries), scaled to sum to exactly `scale.entries`; 30 % of
 * those of 8 entries or more continued on a second device, 10 % more on a second and a third.
 */
export function plan (scale: Scale, seed = 12): PlannedConversation[] {
  const rnd = random(seed)
  const mean = scale.entries / scale.conversations
  const mu = Math.log(mean * 0.3)
  const sigma = Math.sqrt(2 * Math.log(1 / 0.3))
  const max = Math.max(2, Math.min(20_000, Math.floor(scale.entries / 20)))
  const normal = (): number => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd())
  const raw = Array.from({ length: scale.conversations }, () => Math.exp(mu + sigma * normal()))
  let sizes = raw.map(x => Math.min(max, Math.max(2, Math.round(x))))
  // Scale to the total, then hand out what rounding and the bounds left over, largest first.
  for (let round = 0; round < 20; round++) {
    const sum = sizes.reduce((a, b) => a + b, 0)
    if (sum === scale.entries) break
    const f = scale.entries / sum
    sizes = sizes.map(s => Math.min(max, Math.max(2, Math.round(s * f))))
  }
  const order = sizes.map((_, i) => i).sort((a, b) => (sizes[b] as number) - (sizes[a] as number))
  let diff = scale.entries - sizes.reduce((a, b) => a + b, 0)
  for (let k = 0; diff !== 0 && k < 100 * scale.conversations; k++) {
    const i = order[k % order.length] as number
    const s = sizes[i] as number
    if (diff > 0 && s < max) { sizes[i] = s + 1; diff-- } else if (diff < 0 && s > 2) { sizes[i] = s - 1; diff++ }
  }
  if (diff !== 0) throw new Error(`cannot plan ${scale.entries} entries in ${scale.conversations} conversations`)

  const pick = (): number => {
    let u = rnd()
    for (const [i, w] of ORIGIN_WEIGHTS.entries()) { if (u < w) return i; u -= w }
    return 0
  }
  const other = (than: number): number => (than + 1 + Math.floor(rnd() * (DEVICES.length - 1))) % DEVICES.length
  return sizes.map(size => {
    const origin = pick()
    const u = rnd()
    const cwd = rnd() < 0.6
    if (size < 8 || u >= 0.4) return { segments: [{ device: origin, entries: size }], cwd }
    if (u < 0.3) {
      const first = Math.max(2, Math.round(size * (0.3 + 0.5 * rnd())))
      return { segments: [{ device: origin, entries: first }, { device: other(origin), entries: size - first }], cwd }
    }
    const a = Math.max(2, Math.round(size * (0.2 + 0.3 * rnd())))
    const b = Math.max(2, Math.round((size - a) * (0.3 + 0.4 * rnd())))
    const second = other(origin)
    return { segments: [{ device: origin, entries: a }, { device: second, entries: b }, { device: other(second), entries: size - a - b }], cwd }
  })
}

// ---------------------------------------------------------------- entries

/** What the generator knows of a conversation while writing it. */
interface Written {
  id: string
  last: string
  /** the latest ids, for edits that branch off an earlier message */
  recent: string[]
  /** where the conversation is in its turn: user, assistant, tool call, intent, result */
  next: 'user' | 'assistant' | 'call' | 'intent' | 'result'
  calls: number
  ts: number
}

type Texts = { user: () => string; assistant: () => string; output: () => string }
const RECENT = 64

/** The next draft of the turn pattern: user, assistant (30 %: tool calls, each an intent and a result, then the answer); 3 % of user messages edit an earlier one (a branch). */
function nextDraft (w: Written, rnd: () => number, text: Texts): EntryDraft {
  let parent = w.last
  const callId = `call-${w.calls}`
  switch (w.next) {
    case 'user':
      if (w.recent.length > 4 && rnd() < 0.03) parent = w.recent[Math.floor(rnd() * (w.recent.length - 2))] as string
      w.next = rnd() < 0.3 ? 'call' : 'assistant'
      return { kind: 'user', body: { text: text.user() }, parents: [parent] }
    case 'assistant':
      w.next = 'user'
      return { kind: 'assistant', body: { text: text.assistant(), model: 'bench-model', usage: { input: 1200, output: 300 } }, parents: [parent] }
    case 'call':
      w.next = 'intent'
      return { kind: 'assistant', body: { text: '', toolCalls: [{ id: callId, name: 'bash', args: { command: `npm test -- ${w.calls}` } }] }, parents: [parent] }
    case 'intent':
      w.next = 'result'
      return { kind: 'tool.intent', body: { callId, tool: 'bash', args: { command: `npm test -- ${w.calls}` }, effect: 'workspace', idemKey: `${w.id.slice(0, 16)}:${callId}` }, parents: [parent] }
    case 'result':
      w.calls++
      w.next = rnd() < 0.3 ? 'call' : 'assistant'
      return { kind: 'tool.result', body: { callId, status: 'ok', output: text.output() }, parents: [parent] }
  }
}

/** n entries of a device continuing a conversation, as the blocks of its feed (makeEntry: ids, checks, the stored encoding). */
function entryBlocks (w: Written, n: number, device: string, rnd: () => number, text: Texts): Buffer[] {
  const out: Buffer[] = []
  for (let i = 0; i < n; i++) {
    w.ts += 20_000 + Math.floor(rnd() * 60_000)
    const e = makeEntry(nextDraft(w, rnd, text), { conversation: w.id, device, ts: w.ts })
    out.push(Buffer.from(encodeEntry(e)))
    w.last = e.id
    w.recent.push(e.id)
    if (w.recent.length > RECENT) w.recent.shift()
  }
  return out
}

// ---------------------------------------------------------------- building

/** Runs fn over items with n at a time. */
async function pool<T> (items: T[], n: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) { const i = next++; await fn(items[i] as T, i) }
  }))
}

/** HistoryStore's name for a device's feed of a conversation, in its Corestore. */
const FEED_PREFIX = 'arbor/conversation/'
/** feeds per manifest record, as HistoryStore writes a peer's list */
const MANIFEST_RECORD_FEEDS = 256

/** A feed being generated: its key, its writer and its signing key pair, its blocks so far. */
interface Feed { key: string; conversation: string; device: number; keyPair: { publicKey: Buffer; secretKey: Buffer }; blocks: Buffer[] }

/**
 * Builds the data set in `dataset` (removing any incomplete one first). Each device's
 * directory is made by its HistoryStore (key pair, manifest); then, conversation by
 * conversation, each segment's entries are made with the real codec (makeEntry, the signed
 * feed header) and appended to the writing device's feed in its Corestore, and the same
 * blocks, under the writer's key pair, to every device that holds the feed: a device that
 * continues a conversation holds the earlier devices' feeds as they were then, the two
 * holders every feed whole. Every copy has the blocks, tree and signature a replicated one
 * has (its storage also holds the writer's key pair). Each device's manifest lists what it
 * holds; then the holders' and the sync source's HistoryStore rebuild their index from the
 * feeds, as a device that lost its index does: every entry read back, checked and indexed.
 * Writing copies directly, not by replication or HistoryStore.append, is what keeps generation
 * short. meta.json is written last: its presence says the set is complete.
 */
export async function buildDataset (dataset: string, scale: Scale): Promise<DatasetMeta> {
  await fs.rm(dataset, { recursive: true, force: true })
  await fs.mkdir(path.join(dataset, 'devices'), { recursive: true })
  const t0 = performance.now()
  const phasesMs: Record<string, number> = {}
  const conversations = plan(scale)
  const rnd = random(99)
  const text: Texts = { user: textMaker(1, 60, 400), assistant: textMaker(2, 150, 900), output: textMaker(3, 80, 1200) }

  // Each directory as its HistoryStore makes it (device key pair, manifest with its header), without an index.
  for (const d of DEVICES.keys()) {
    const s = new HistoryStore({ dir: deviceDir(dataset, d), watchPeers: false, log: benchLog })
    await s.ready()
    await s.close()
    await fs.rm(path.join(deviceDir(dataset, d), 'index'), { recursive: true, force: true })
  }
  const stores = DEVICES.map((_, d) => new Corestore(path.join(deviceDir(dataset, d), 'corestore')))
  await Promise.all(stores.map(s => s.ready()))
  const keyPairs = await Promise.all(stores.map(s => s.createKeyPair('arbor/device')))
  const devices = keyPairs.map(k => k.publicKey.toString('hex'))
  /** per device, the feeds it holds and how many blocks of each */
  const holds = DEVICES.map(() => new Map<string, { conversation: string; device: string; length: number }>())
  // (the repository's typing of Corestore.get leaves out keyPair)
  const byKeyPair = (cs: Corestore, keyPair: Feed['keyPair']): Hypercore.Core => (cs.get as unknown as (o: { keyPair: Feed['keyPair'] }) => Hypercore.Core).call(cs, { keyPair })

  /** Appends the blocks of `f` that device d does not hold yet, to its own feed or its copy. */
  const give = async (d: number, f: Feed): Promise<void> => {
    const had = holds[d]?.get(f.key)?.length ?? 0
    if (had >= f.blocks.length) return
    const cs = stores[d] as Corestore
    const core = d === f.device ? cs.get({ name: FEED_PREFIX + f.conversation }) : byKeyPair(cs, f.keyPair)
    await core.ready()
    try {
      if ((core.key as Buffer).toString('hex') !== f.key) throw new Error(`feed ${f.key.slice(0, 12)}: its copy has another key`)
      if (core.length !== had) throw new Error(`feed ${f.key.slice(0, 12)}: device ${d} has ${core.length} blocks, expected ${had}`)
      for (let i = had; i < f.blocks.length; i += 1000) await core.append(f.blocks.slice(i, i + 1000))
    } finally {
      await core.close()
    }
    holds[d]?.set(f.key, { conversation: f.conversation, device: devices[f.device] as string, length: f.blocks.length })
  }

  const YEAR = 365 * 24 * 3600 * 1000
  const start = Date.now() - YEAR
  const tw = performance.now()
  let done = 0
  await pool(conversations, 8, async (c, i) => {
    const feeds = new Map<number, Feed>()
    let w: Written | null = null
    for (const [p, seg] of c.segments.entries()) {
      const d = seg.device
      // Continued here: this device holds every earlier device's feed, as it was then.
      if (p > 0) for (const f of feeds.values()) if (f.device !== d) await give(d, f)
      let f = feeds.get(d)
      let n = seg.entries
      let root: Buffer | null = null
      if (w === null) {
        w = { id: '', last: '', recent: [], next: 'user', calls: 0, ts: start + Math.floor(YEAR * i / conversations.length) }
        const e = makeEntry({ kind: 'conversation', body: { title: text.user().slice(0, 60), nonce: `n${i}-${Math.floor(rnd() * 1e9)}`, ...(c.cwd ? { cwd: `/home/user/projects/p${i % 40}` } : {}) }, parents: [] }, { conversation: null, device: devices[d] as string, ts: w.ts })
        Object.assign(w, { id: e.id, last: e.id, recent: [e.id] })
        root = Buffer.from(encodeEntry(e))
        n--
      }
      if (f === undefined) {
        // block 0: the header HistoryStore writes, signed by the device, naming the feed's key
        const cs = stores[d] as Corestore
        const core = cs.get({ name: FEED_PREFIX + w.id })
        await core.ready()
        const key = (core.key as Buffer).toString('hex')
        await core.close()
        const header = makeFeedHeader({ type: 'arbor/conversation', feed: key, conversation: w.id }, keyPairs[d] as Feed['keyPair'])
        f = { key, conversation: w.id, device: d, keyPair: await cs.createKeyPair(FEED_PREFIX + w.id), blocks: [Buffer.from(JSON.stringify(header))] }
        feeds.set(d, f)
      }
      if (root !== null) f.blocks.push(root)
      f.blocks.push(...entryBlocks(w as Written, n, devices[d] as string, rnd, text))
      await give(d, f)
    }
    for (const h of HOLDERS) for (const f of feeds.values()) await give(h, f)
    if (++done % 1000 === 0) note(`generation: ${done} of ${conversations.length} conversations written`)
  })
  phasesMs.write = Math.round(performance.now() - tw)
  note(`generation: ${conversations.length} conversations written in ${round(phasesMs.write / 1000, 1)} s`)

  // Each manifest lists what its device holds (as HistoryStore records feeds learned from a peer).
  for (const [d, held] of holds.entries()) {
    const feeds = [...held].map(([key, h]) => ({ key, ...h }))
    const blocks: Buffer[] = []
    for (let i = 0; i < feeds.length; i += MANIFEST_RECORD_FEEDS) blocks.push(Buffer.from(JSON.stringify({ feeds: feeds.slice(i, i + MANIFEST_RECORD_FEEDS) } satisfies ManifestRecord)))
    const manifest = (stores[d] as Corestore).get({ name: 'arbor/manifest' })
    await manifest.ready()
    if (manifest.length !== 1) throw new Error(`device ${d}'s manifest has ${manifest.length} blocks, expected its header alone`)
    await manifest.append(blocks)
    await manifest.close()
  }
  await Promise.all(stores.map(s => s.close()))

  // The sync source: the device holding least of those that are not holders.
  const entriesHeld = holds.map(h => [...h.values()].reduce((n, f) => n + f.length, 0))
  const syncSource = [...DEVICES.keys()].filter(d => !(HOLDERS as readonly number[]).includes(d)).sort((a, b) => (entriesHeld[a] as number) - (entriesHeld[b] as number))[0] as number
  const indexed = new Map<number, ReturnType<typeof held> & { feeds: number }>()
  for (const d of [...HOLDERS, syncSource]) {
    const t = performance.now()
    const s = new HistoryStore({ dir: deviceDir(dataset, d), watchPeers: false, log: benchLog })
    await s.ready() // no index: rebuilt from the manifest and every feed
    indexed.set(d, { ...held(s), feeds: s.feeds().length })
    await s.close()
    phasesMs[`rebuild${d}`] = Math.round(performance.now() - t)
    note(`generation: the ${DEVICES[d] as string}'s index rebuilt from its feeds in ${round((performance.now() - t) / 1000, 1)} s`)
  }
  for (const [d, h] of indexed) {
    const whole = (HOLDERS as readonly number[]).includes(d)
    if (h.waiting !== 0 || (whole && (h.conversations !== scale.conversations || h.entries !== scale.entries))) {
      throw new Error(`the ${DEVICES[d] as string} has ${h.conversations} conversations, ${h.entries} entries (${h.waiting} waiting)${whole ? `: expected ${scale.conversations} and ${scale.entries}` : ''}`)
    }
  }
  const sizes = conversations.map(c => c.segments.reduce((n, s) => n + s.entries, 0)).sort((a, b) => a - b)
  const at = (p: number): number => sizes[Math.min(sizes.length - 1, Math.floor(p * sizes.length))] as number
  const meta: DatasetMeta = {
    generator: GENERATOR_VERSION,
    conversations: scale.conversations,
    entries: scale.entries,
    feeds: (indexed.get(HOLDERS[0]) as { feeds: number }).feeds,
    sizes: { median: at(0.5), p90: at(0.9), p99: at(0.99), max: sizes[sizes.length - 1] as number },
    continued: {
      twoDevices: conversations.filter(c => c.segments.length > 1).length,
      threeSegments: conversations.filter(c => c.segments.length > 2).length
    },
    held: Object.fromEntries(DEVICES.map((name, d) => [name, { blocks: entriesHeld[d] as number, feeds: holds[d]?.size ?? 0 }])),
    syncSource,
    generationMs: Math.round(performance.now() - t0),
    phasesMs,
    peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    bytesOnDisk: await du(dataset)
  }
  await fs.writeFile(path.join(dataset, 'meta.json'), JSON.stringify(meta, null, 2) + '\n')
  return meta
}

/** Bytes of the files under a directory. */
export async function du (dir: string): Promise<number> {
  let n = 0
  for (const e of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += (await fs.stat(path.join(e.parentPath, e.name))).size
  }
  return n
}
