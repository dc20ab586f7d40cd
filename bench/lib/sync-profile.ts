// Where the CPU of an initial sync goes (bench/scale's sync line): a fresh device syncs a
// holder's history once under V8's sampling profiler, holder and fresh device in this one
// process as in scale-sync.ts (so the holder's serving counts, as raw replication's does).
// `node --import tsx bench/lib/sync-profile.ts [--raw] HOLDER_DIR WORK_DIR [OUT.cpuprofile]`
// prints one JSON line: entries, ms, CPU µs per entry, and the profile by category.
import fs from 'node:fs/promises'
import path from 'node:path'
import { Session } from 'node:inspector/promises'
import Corestore from 'corestore'
import type Hypercore from 'hypercore'
import { Cluster, closeDevice, connect, connectRaw, contiguous, held, holdsAll } from './sync-devices'
import { summarise, type CpuProfile } from './cpu-profile'
import { round, start } from './util'

const ROOT = path.resolve(import.meta.dirname, '..', '..')
const STORAGE = /^node_modules\/(hypercore|hypercore-storage|corestore|rocksdb-native|quickbit-native|sodium-native|xache|flat-tree|hypercore-crypto|compact-encoding|b4a|streamx|protomux|ready-resource|mutexify|hypercore-id-encoding|index-encoder|@hyperswarm\/secret-stream|bare-.*|udx-native|noise-handshake|noise-curve-ed|sodium-universal|sodium-secretstream|safety-catch|fast-fifo|queue-tick|bits-to-bytes|hypercore-errors|z32|blake2b|hyperschema|big-sparse-array|unslab)$/

/** The category of a sample of a sync run: by the innermost src/ function on its stack, else its library. */
export function classifySync (arbor: string | null, file: string, leaf: string): string {
  const under = file.startsWith('(native) under ') ? file.slice('(native) under '.length) : file
  if (file === '(garbage collector)') return 'garbage collection'
  if (file === '(program)') return 'V8 and Node internals (program)'
  if (arbor !== null) {
    const cut = arbor.lastIndexOf(' ')
    const fn = arbor.slice(0, cut)
    const at = arbor.slice(cut + 1)
    if (at.endsWith('canonical-json.ts')) return 'canonical JSON (hash input)'
    if (fn === 'sha256Hex' || fn === 'entryId') return 'hashing (sha256)'
    if (under === 'node_modules/zod' || ['checkEnvelope', 'fitsEnvelope', 'notUnderstood', 'understand', 'describe', 'idHint', 'validateEntry', 'isHex32', 'isPlainObject'].includes(fn)) return 'validation (envelope, schemas)'
    if (fn === 'decodeBlock') return leaf === 'parse' ? 'decodeBlock: JSON.parse of blocks' : 'decodeBlock: the rest'
    if (at.endsWith('conversation-dag.ts')) return 'ConversationDag (add, heads, title)'
    if (at.endsWith('entry-cache.ts')) return 'entry cache'
    if (at.endsWith('history-index.ts') || at.endsWith('state-file.ts') || fn === 'saveIndex' || fn === 'scheduleIndexSave') return 'index file (stringify, write)'
    if (fn === 'summarise' || fn === 'list') return 'summaries'
    if (at.endsWith('manifest-record.ts') || ['writeManifestLengths', 'scheduleManifest', 'recordInManifest', 'recordLearned', 'writeLearned'].includes(fn)) return 'manifest'
    if (at.endsWith('dag-cache.ts') || ['grew', 'resident', 'load', 'peekDag'].includes(fn)) return 'DAG cache'
    if (fn === 'readFeed' || fn === 'range') return STORAGE.test(under) ? 'Hypercore get (JS thread)' : 'readFeed: the rest'
    if (fn === 'indexEntries') return 'indexEntries: the rest'
    if (at.includes('history-store.ts')) return `HistoryStore: ${fn}`
    if (at.includes(`sync${path.sep}`)) return STORAGE.test(under) ? 'sync layer → Hypercore/Protomux' : `sync layer: ${path.basename(at)}`
    if (at.startsWith(`test${path.sep}`) || at.startsWith(`bench${path.sep}`)) return 'bench and test helpers (MemoryLink, waiting)'
    return `other src/: ${at}`
  }
  if (STORAGE.test(under)) return 'Hypercore, Corestore, replication (JS thread)'
  if (under.startsWith('node:')) return 'Node (streams, promises, timers, fs)'
  return `other: ${file}`
}

/** `raw`: the baseline instead, raw Corestore replication of the same cores into a fresh Corestore. */
export async function profileSync (holderDir: string, work: string, save?: string, raw = false): Promise<Record<string, unknown>> {
  const cluster = new Cluster()
  const holder = await cluster.device(holderDir)
  const { entries, conversations } = held(holder.history)
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 500 })
  let p: CpuProfile
  let t
  const reloads = { count: 0, entries: 0 }
  let batches = 0
  if (raw) {
    const store = new Corestore(path.join(work, 'fresh'))
    await store.ready()
    await session.post('Profiler.start')
    const took = start()
    const link = await connectRaw(holder.history.corestore, store)
    await contiguous(holder.history.feeds().map(f => {
      const core: Hypercore.Core = store.get({ key: Buffer.from(f.key, 'hex') })
      core.download({ start: 0, end: -1 })
      return { core, length: holder.history.availableLength(f.key) }
    }))
    t = took()
    p = (await session.post('Profiler.stop')).profile as unknown as CpuProfile
    link.destroy()
    await store.close()
  } else {
    const fresh = await cluster.device(path.join(work, 'fresh'))
    const all = holdsAll(fresh.history, entries)
    // conversations read back from the entry cache (evicted from the DAG cache, then needed again)
    const cache = (fresh.history as unknown as { cache: { read: (c: string) => Promise<{ entries: unknown[] }> } }).cache
    const read = cache.read.bind(cache)
    cache.read = async (c: string) => { const r = await read(c); reloads.count++; reloads.entries += r.entries.length; return r }
    // batches indexed (the work per batch: summary, cache write, watermark)
    const store = (fresh.history as unknown as { conversations: { indexEntries: (...args: unknown[]) => Promise<void> } }).conversations
    const index = store.indexEntries.bind(store)
    store.indexEntries = (...args: unknown[]) => { batches++; return index(...args) }
    await session.post('Profiler.start')
    const took = start()
    const conn = await connect(holder, fresh)
    await all
    t = took()
    p = (await session.post('Profiler.stop')).profile as unknown as CpuProfile
    conn.link.destroy()
    await closeDevice(fresh)
  }
  session.disconnect()
  if (save !== undefined) await fs.writeFile(save, JSON.stringify(p))
  await closeDevice(holder)
  const s = summarise(p, ROOT, classifySync, 30)
  const cats = Object.fromEntries(Object.entries(s.byCategory).map(([k, ms]) => [k, { ms, usPerEntry: round(ms * 1000 / entries, 1) }]))
  return {
    entries,
    conversations,
    ms: round(t.ms),
    cpuMs: round(t.cpuMs),
    cpuUsPerEntry: round(t.cpuMs * 1000 / entries, 1),
    gcMs: s.gcMs,
    reloads,
    batches,
    byCategory: cats,
    byArborFunction: s.byArborFunction,
    byFunction: s.byFunction
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const raw = process.argv.includes('--raw')
  const [holderDir, work, save] = process.argv.slice(2).filter(a => a !== '--raw')
  if (holderDir === undefined || work === undefined) throw new Error('usage: sync-profile.ts [--raw] HOLDER_DIR WORK_DIR [OUT.cpuprofile]')
  await fs.mkdir(work, { recursive: true })
  try {
    process.stdout.write(JSON.stringify(await profileSync(holderDir, work, save, raw)) + '\n')
  } finally {
    await fs.rm(path.join(work, 'fresh'), { recursive: true, force: true })
  }
}
