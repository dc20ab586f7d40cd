// Where the time of HistoryStore.append goes (bench/scale's append line), measured three ways
// without changing src/: the store's own steps timed in place (its methods wrapped on the
// instance, and Hypercore's append, ConversationDag.add and EntryCache.append on their
// prototypes, for one instrumented run); the pieces of makeEntry timed alone on the same
// drafts; and a CPU profile of a run (node:inspector) summarised by self time.
import { createHash } from 'node:crypto'
import { Session } from 'node:inspector/promises'
import { PerformanceObserver } from 'node:perf_hooks'
import type Hypercore from 'hypercore'
import { ConversationDag } from '../../src/shared/conversation/conversation-dag'
import { canonicalJson } from '../../src/shared/entry/canonical-json'
import { checkEntryShape, encodeEntry, hashInput, type EntryDraft } from '../../src/shared/entry/entry'
import { makeEntry } from '../../src/main/history/store/entry-codec'
import type { HistoryStore } from '../../src/main/history/history-store'
import { summarise, type CpuProfile, type ProfileSummary } from './cpu-profile'
import { round } from './util'

type AnyFn = (...args: unknown[]) => unknown

/** Time spent in each wrapped function (ms, summed over calls; async ones until they settle). */
class Meter {
  readonly ms = new Map<string, number>()
  readonly calls = new Map<string, number>()
  private readonly undo: Array<() => void> = []

  private add (name: string, ms: number): void {
    this.ms.set(name, (this.ms.get(name) ?? 0) + ms)
    this.calls.set(name, (this.calls.get(name) ?? 0) + 1)
  }

  /** Wraps obj[method] (an own property is set over it; restore() puts the original back). */
  wrap (name: string, obj: object, method: string, opts: { syncPart?: string } = {}): void {
    const target = obj as Record<string, AnyFn>
    const had = Object.hasOwn(target, method)
    const original = target[method] as AnyFn
    if (typeof original !== 'function') throw new Error(`no method ${method} to measure`)
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const meter = this
    target[method] = function (this: unknown, ...args: unknown[]) {
      const t0 = performance.now()
      const out = original.apply(this, args)
      const t1 = performance.now()
      if (opts.syncPart !== undefined) meter.add(opts.syncPart, t1 - t0)
      if (out instanceof Promise) {
        return out.finally(() => meter.add(name, performance.now() - t0))
      }
      meter.add(name, t1 - t0)
      return out
    }
    this.undo.push(() => { if (had) target[method] = original; else delete target[method] })
  }

  restore (): void { for (const u of this.undo.splice(0).reverse()) u() }
}

export interface InPlace {
  /** ms per piece over the run, summed over its calls */
  ms: Record<string, number>
  calls: Record<string, number>
  gcMs: number
  totalMs: number
}

/**
 * Runs `run` with the store's steps measured in place. Async pieces count until they settle,
 * so they overlap (the entry cache's write runs behind the next batch); `append` is the
 * caller's view, sequential calls: the run's whole time.
 */
export async function measureInPlace (store: HistoryStore, run: () => Promise<void>): Promise<InPlace> {
  const m = new Meter()
  const s = store as unknown as Record<string, object>
  m.wrap('append (whole call, as the caller waits)', store, 'append')
  m.wrap('ownFeed (the conversation\'s own feed)', s.ownFeeds as object, 'ownFeed')
  m.wrap('writeBlocks (markDirty + Hypercore append of the blocks makeEntryBlock made)', s.ownFeeds as object, 'writeBlocks')
  m.wrap('indexEntries (DAG, summary, listeners, cache queued)', s.conversations as object, 'indexEntries')
  m.wrap('summarise (the conversation\'s summary)', s.conversations as object, 'summarise')
  m.wrap('emit (listeners: entries, feed)', store, 'emit')
  m.wrap('index file save (stringify + write + fsync + rename)', s.indexFile as object, 'save', { syncPart: 'index file save: synchronous part (stringify)' })
  m.wrap('manifest record (feed lengths)', s.manifestLog as object, 'writeManifestLengths')
  m.wrap('entry cache append: written (async, behind)', s.cache as object, 'append', { syncPart: 'entry cache append: synchronous part (lines from the blocks)' })
  m.wrap('ConversationDag.add', ConversationDag.prototype, 'add')
  // Hypercore's class, through an open session (the manifest's appends count too)
  const core = [...(s.cores as Map<string, Hypercore.Core>).values()][0]
  if (core !== undefined) m.wrap('Hypercore append', Object.getPrototypeOf(core) as object, 'append', { syncPart: 'Hypercore append: synchronous part' })
  let gc = 0
  const obs = new PerformanceObserver(list => { for (const e of list.getEntries()) gc += e.duration })
  obs.observe({ entryTypes: ['gc'] })
  const t0 = performance.now()
  try {
    await run()
  } finally {
    m.restore()
  }
  const totalMs = performance.now() - t0
  await new Promise(resolve => setImmediate(resolve))
  obs.disconnect()
  return {
    ms: Object.fromEntries([...m.ms].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, round(v, 1)])),
    calls: Object.fromEntries(m.calls),
    gcMs: round(gc, 1),
    totalMs: round(totalMs, 1)
  }
}

/** Microseconds per entry of each piece of makeEntry, and of the other per-entry work of an append, timed alone on the same drafts. */
export function measurePieces (drafts: EntryDraft[], ctx: { conversation: string; device: string; ts: number }): Record<string, number> {
  const time = (fn: () => void): number => {
    fn() // warm
    const t0 = performance.now()
    fn()
    return round((performance.now() - t0) * 1000 / drafts.length, 2)
  }
  const partials = drafts.map(d => ({ v: 1 as const, conversation: ctx.conversation, parents: d.parents, author: { device: ctx.device }, ts: ctx.ts, kind: d.kind, body: d.body }))
  const inputs = partials.map(p => hashInput(p))
  const entries = drafts.map(d => makeEntry(d, ctx))
  const texts = entries.map(e => canonicalJson(e))
  return {
    'makeEntry (all of it)': time(() => { for (const d of drafts) makeEntry(d, ctx) }),
    'canonical JSON of the hash input (hashInput)': time(() => { for (const p of partials) hashInput(p) }),
    'sha256 of it': time(() => { for (const i of inputs) createHash('sha256').update(i, 'utf8').digest('hex') }),
    'canonical JSON of the entry (encodeEntry, once, for feed and cache)': time(() => { for (const e of entries) canonicalJson(e) }),
    'JSON.parse of it (makeEntry returns what is stored)': time(() => { for (const t of texts) JSON.parse(t) }),
    'schema check (checkEntryShape: envelope + body, zod)': time(() => { for (const e of entries) checkEntryShape(e, ctx.device) }),
    'Buffer.from of the encoding (the block)': time(() => { for (const e of entries) Buffer.from(encodeEntry(e)) }),
    'ConversationDag.add (a fresh DAG)': time(() => { const d = new ConversationDag(ctx.conversation); for (const e of entries) d.add(e) })
  }
}

/** A CPU profile of `run` (sampling every 200 µs), summarised; categories from the innermost src/ frame, else the library. */
export async function profile (run: () => Promise<void>, root: string): Promise<ProfileSummary> {
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 200 })
  await session.post('Profiler.start')
  let p: unknown
  try {
    await run()
  } finally {
    p = (await session.post('Profiler.stop')).profile
    session.disconnect()
  }
  return summarise(p as CpuProfile, root, classifyAppend)
}

const STORAGE = /^node_modules\/(hypercore|hypercore-storage|corestore|rocksdb-native|quickbit-native|sodium-native|xache|flat-tree|hypercore-crypto|compact-encoding|b4a|streamx|protomux|ready-resource|mutexify|hypercore-id-encoding|index-encoder|@hyperswarm\/secret-stream|bare-.*)$/

/** The category of a sample of an append run. */
export function classifyAppend (arbor: string | null, file: string, leaf: string): string {
  const under = file.startsWith('(native) under ') ? file.slice('(native) under '.length) : file
  if (file === '(garbage collector)') return 'garbage collection'
  if (file === '(program)') return 'V8 and Node internals (program)'
  if (arbor !== null) {
    const cut = arbor.lastIndexOf(' ') // a function's name may have a space ("get device")
    const fn = arbor.slice(0, cut)
    const at = arbor.slice(cut + 1)
    if (at.endsWith('canonical-json.ts')) return 'canonical JSON (hash input, encoding)'
    if (fn === 'sha256Hex' || fn === 'entryId') return 'hashing (sha256)'
    if (under === 'node_modules/zod' || ['checkEnvelope', 'checkEntryShape', 'notUnderstood', 'understand', 'describe', 'idHint'].includes(fn)) return 'validation (schemas)'
    if (fn === 'makeEntry') return leaf === 'parse' ? 'makeEntry: JSON.parse of the encoding' : 'makeEntry: the rest (object copies)'
    if (at.endsWith('conversation-dag.ts')) return 'ConversationDag (add, heads, title)'
    if (at.endsWith('entry-cache.ts')) return 'entry cache'
    if (at.endsWith('history-index.ts') || at.endsWith('state-file.ts') || fn === 'summarise' || fn === 'saveIndex' || fn === 'scheduleIndexSave') return 'index (summaries, index file)'
    if (fn === 'writeManifestLengths' || fn === 'scheduleManifest' || fn === 'recordInManifest') return 'manifest'
    if (fn === 'append') return 'append: parents check and queue'
    if (fn === 'writeBlocks') return STORAGE.test(under) ? 'Hypercore append (JS thread)' : 'writeBlocks: the rest'
    if (at.includes('history-store.ts')) return 'HistoryStore: other'
    return `other src/: ${at}`
  }
  if (STORAGE.test(under)) return 'Hypercore append (JS thread)'
  if (under.startsWith('node:') && file !== under) return 'Node builtins (buffers, fs writes: the entry cache and index files)'
  if (under.startsWith('node:')) return 'Node (promises, timers, fs)'
  return `other: ${file}`
}
