// The data set of bench/scale.ts: a heavy user's year on 5 devices of one cluster, written on
// disk through each device's real HistoryStore; a device holding another's feed has a copy
// with the same blocks and signatures (mirror). Cached (see datasetDir): later runs skip it.
import { existsSync } from 'node:fs'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import type Hypercore from 'hypercore'
import { HistoryStore } from '../../src/main/history/history-store'
import type { EntryDraft } from '../../src/shared/entry'
import { held, holdsAll } from './sync-devices'
import { benchLog, random, round, textMaker } from './util'

/** Bump whenever what is generated changes: the cache is keyed by it. */
export const GENERATOR_VERSION = 1

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
}

const RECENT = 64
/** entries per append call while generating (a real agent writes 1–2 a step; this is bulk) */
const CALL = 250

/** The drafts of one turn pattern: user, assistant (30 %: tool calls, each an intent and a result, then the answer); 3 % of user messages edit an earlier one (a branch). */
function makeDrafts (w: Written, n: number, rnd: () => number, text: { user: () => string; assistant: () => string; output: () => string }): EntryDraft[] {
  const drafts: EntryDraft[] = []
  for (let i = 0; i < n; i++) {
    let parent = i === 0 ? w.last : `$${i - 1}`
    const callId = `call-${w.calls}`
    switch (w.next) {
      case 'user':
        if (w.recent.length > 4 && rnd() < 0.03) parent = w.recent[Math.floor(rnd() * (w.recent.length - 2))] as string
        drafts.push({ kind: 'user', body: { text: text.user() }, parents: [parent] })
        w.next = rnd() < 0.3 ? 'call' : 'assistant'
        break
      case 'assistant':
        drafts.push({ kind: 'assistant', body: { text: text.assistant(), model: 'bench-model', usage: { input: 1200, output: 300 } }, parents: [parent] })
        w.next = 'user'
        break
      case 'call':
        drafts.push({ kind: 'assistant', body: { text: '', toolCalls: [{ id: callId, name: 'bash', args: { command: `npm test -- ${w.calls}` } }] }, parents: [parent] })
        w.next = 'intent'
        break
      case 'intent':
        drafts.push({ kind: 'tool.intent', body: { callId, tool: 'bash', args: { command: `npm test -- ${w.calls}` }, effect: 'workspace', idemKey: `${w.id.slice(0, 16)}:${callId}` }, parents: [parent] })
        w.next = 'result'
        break
      case 'result':
        drafts.push({ kind: 'tool.result', body: { callId, status: 'ok', output: text.output() }, parents: [parent] })
        w.calls++
        w.next = rnd() < 0.3 ? 'call' : 'assistant'
        break
    }
  }
  return drafts
}

async function writeEntries (store: HistoryStore, w: Written, n: number, rnd: () => number, text: Parameters<typeof makeDrafts>[3]): Promise<void> {
  for (let left = n; left > 0; left -= CALL) {
    const written = await store.append(w.id, makeDrafts(w, Math.min(CALL, left), rnd, text))
    for (const e of written) w.recent.push(e.id)
    if (w.recent.length > RECENT) w.recent.splice(0, w.recent.length - RECENT)
    w.last = (written[written.length - 1] as { id: string }).id
  }
}

// ---------------------------------------------------------------- building

/** Runs fn over items with n at a time. */
async function pool<T> (items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) await fn(items[next++] as T)
  }))
}

/** Resolves once a store holds `want` entries of a conversation, none waiting; fails loudly on a stall. */
function sizeWaiter (store: HistoryStore): (conversation: string, want: number) => Promise<void> {
  const waits = new Map<string, Array<{ want: number; resolve: () => void }>>()
  const done = (c: string): boolean => {
    const s = store.summary(c)
    return s !== undefined && s.waiting === 0
  }
  store.on('entries', ev => {
    const list = waits.get(ev.conversation)
    if (list === undefined || !done(ev.conversation)) return
    const size = store.summary(ev.conversation)?.size ?? 0
    const left = list.filter(w => { if (size >= w.want) { w.resolve(); return false } return true })
    if (left.length === 0) waits.delete(ev.conversation)
    else waits.set(ev.conversation, left)
  })
  return (conversation, want) => {
    if (done(conversation) && (store.summary(conversation)?.size ?? 0) >= want) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`replication stalled: ${conversation.slice(0, 12)} has ${store.summary(conversation)?.size ?? 0} of ${want} entries after 120 s`)), 120_000)
      const list = waits.get(conversation) ?? []
      list.push({ want, resolve: () => { clearTimeout(timer); resolve() } })
      waits.set(conversation, list)
    })
  }
}

/** HistoryStore's name for a device's feed of a conversation (the key check in mirror() catches a change). */
const FEED_PREFIX = 'arbor/conversation/'

/**
 * Gives `to` a copy of the feed `from` writes for a conversation, and has `to` index it as a
 * feed learned from a peer (addFeed): the copy is made by appending the same blocks under the
 * writer's key pair, so its blocks, tree and signature are those a replicated copy has (its
 * key is checked); its storage also holds that key pair. Replication costs ~0.5 ms of CPU a
 * block here: 1.4 million blocks for the two holders would make generation half an hour.
 */
async function mirror (from: HistoryStore, to: HistoryStore, conversation: string, key: string): Promise<void> {
  const src = from.corestore.get({ key: Buffer.from(key, 'hex') })
  await src.ready()
  const length = src.length
  // (the repository's typing of Corestore.get leaves out keyPair)
  const get = to.corestore.get.bind(to.corestore) as unknown as (o: { keyPair: { publicKey: Buffer; secretKey: Buffer } }) => Hypercore.Core
  const dst = get({ keyPair: await from.corestore.createKeyPair(FEED_PREFIX + conversation) })
  await dst.ready()
  try {
    if ((dst.key as Buffer).toString('hex') !== key) throw new Error(`feed ${key.slice(0, 12)} is not named ${FEED_PREFIX}<conversation> in its device's Corestore`)
    for (let i = dst.length; i < length; i += 1000) {
      const blocks = await Promise.all(Array.from({ length: Math.min(1000, length - i) }, (_, j) => src.get(i + j)))
      await dst.append(blocks as Buffer[])
    }
  } finally {
    await Promise.all([src.close(), dst.close()])
  }
  // A feed copied earlier (for a continuation) may have grown since: then it is read on.
  if (to.feedRecord(key) === undefined) await to.addFeed(conversation, key)
  else await to.updateFeed(conversation, key, length)
}

/**
 * Builds the data set in `dataset` (removing any incomplete one first): each device writes
 * its conversations' segments in turn through its HistoryStore; a device continuing a
 * conversation first learns the earlier devices' feeds (mirror); then the two holders learn
 * every feed. meta.json is written last: its presence says the set is complete.
 */
export async function buildDataset (dataset: string, scale: Scale): Promise<DatasetMeta> {
  await fs.rm(dataset, { recursive: true, force: true })
  await fs.mkdir(path.join(dataset, 'devices'), { recursive: true })
  const t0 = performance.now()
  const phasesMs: Record<string, number> = {}
  const conversations = plan(scale)
  const rnd = random(99)
  const text = { user: textMaker(1, 60, 400), assistant: textMaker(2, 150, 900), output: textMaker(3, 80, 1200) }
  // Timestamps spread over a year, in the order conversations were started (display only).
  const YEAR = 365 * 24 * 3600 * 1000
  const start = Date.now() - YEAR
  let clock = start
  const open = async (i: number): Promise<HistoryStore> => {
    const s = new HistoryStore({ dir: deviceDir(dataset, i), log: benchLog, now: () => clock })
    await s.ready()
    return s
  }
  let stores = await Promise.all(DEVICES.map((_, i) => open(i)))
  const waiters = stores.map(sizeWaiter)
  const written: Array<Written | null> = conversations.map(() => null)
  /** feed key of each conversation per device that wrote a segment of it */
  const feedOf: Array<Map<number, string>> = conversations.map(() => new Map())

  const segments = Math.max(...conversations.map(c => c.segments.length))
  for (let seg = 0; seg < segments; seg++) {
    const t = performance.now()
    const jobs = conversations.map((c, i) => ({ c, i })).filter(j => j.c.segments.length > seg)
    await pool(jobs, 8, async ({ c, i }) => {
      const s = c.segments[seg] as Segment
      const store = stores[s.device] as HistoryStore
      clock = start + Math.floor(YEAR * i / conversations.length) + seg * 3_600_000
      let w = written[i] as Written | null
      if (w === null) {
        const root = await store.createConversation({ title: text.user().slice(0, 60), ...(c.cwd ? { cwd: `/home/user/projects/p${i % 40}` } : {}) })
        w = { id: root.id, last: root.id, recent: [root.id], next: 'user', calls: 0 }
        written[i] = w
        await writeEntries(store, w, s.entries - 1, rnd, text)
      } else {
        // Continued here: the earlier devices' feeds are learned first.
        const before = c.segments.slice(0, seg)
        for (const e of new Set(before.map(b => b.device))) {
          if (e !== s.device) await mirror(stores[e] as HistoryStore, store, w.id, feedOf[i]?.get(e) as string)
        }
        await (waiters[s.device] as (c: string, n: number) => Promise<void>)(w.id, before.reduce((n, b) => n + b.entries, 0))
        await writeEntries(store, w, s.entries, rnd, text)
      }
      const own = store.feeds(w.id).find(f => f.own)
      if (own === undefined) throw new Error('a written conversation has no own feed')
      feedOf[i]?.set(s.device, own.key)
    })
    phasesMs[`segment${seg}`] = Math.round(performance.now() - t)
    note(`generation: segment ${seg} of ${jobs.length} conversations written in ${round((performance.now() - t) / 1000, 1)} s`)
  }

  // Reopened, so no device holds every conversation in memory; then the holders learn every feed.
  const reopen = async (): Promise<void> => {
    await Promise.all(stores.map(s => s.close()))
    stores = await Promise.all(DEVICES.map((_, i) => open(i)))
  }
  await reopen()
  for (const h of HOLDERS) {
    const t = performance.now()
    const holder = stores[h] as HistoryStore
    const all = holdsAll(holder, scale.entries)
    const feeds = stores.flatMap((s, d) => d === h ? [] : s.feeds().filter(f => f.own).map(f => ({ from: s, f })))
    await pool(feeds, 8, ({ from, f }) => mirror(from, holder, f.conversation, f.key))
    await all
    phasesMs[`holder${h}`] = Math.round(performance.now() - t)
    note(`generation: the ${DEVICES[h] as string} learned every feed in ${round((performance.now() - t) / 1000, 1)} s`)
    await reopen()
  }
  const summary = HOLDERS.map(h => ({ ...held(stores[h] as HistoryStore), feeds: (stores[h] as HistoryStore).feeds().length }))
  await Promise.all(stores.map(s => s.close()))
  for (const s of summary) {
    if (s.conversations !== scale.conversations || s.entries !== scale.entries || s.waiting !== 0) {
      throw new Error(`a holder has ${s.conversations} conversations, ${s.entries} entries (${s.waiting} waiting): expected ${scale.conversations} and ${scale.entries}`)
    }
  }
  const sizes = conversations.map(c => c.segments.reduce((n, s) => n + s.entries, 0)).sort((a, b) => a - b)
  const at = (p: number): number => sizes[Math.min(sizes.length - 1, Math.floor(p * sizes.length))] as number
  const meta: DatasetMeta = {
    generator: GENERATOR_VERSION,
    conversations: scale.conversations,
    entries: scale.entries,
    feeds: (summary[0] as { feeds: number }).feeds,
    sizes: { median: at(0.5), p90: at(0.9), p99: at(0.99), max: sizes[sizes.length - 1] as number },
    continued: {
      twoDevices: conversations.filter(c => c.segments.length > 1).length,
      threeSegments: conversations.filter(c => c.segments.length > 2).length
    },
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
