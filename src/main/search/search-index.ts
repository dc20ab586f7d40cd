import { randomBytes } from 'node:crypto'
import fsp from 'node:fs/promises'
import path from 'node:path'
import type { ConversationDag } from '../../shared/conversation/conversation-dag'
import type { Entry } from '../../shared/entry/entry'
import type { Logger } from '../../shared/logger'
import { storageError } from '../disk/storage-error'
import { writeStateFile } from '../disk/state-file'
import { SearchConversations, type ConversationsState } from './search-conversations'
import { TopHits, type DocHit } from './search-hits'
import { FRAME_HEAD, SEARCH_PREFIX, decodeFrames, encodeRecord, frameLength, logNonce, searchLogStart, startProblem, type SearchRecord } from './search-log'
import { scanLog } from './search-log-scan'
import { decodeManifest, encodeManifest } from './search-manifest'
import { mergeSegments, pickMerge } from './search-merge'
import { SearchPostings, type IsDead } from './search-postings'
import { BLOCK_BYTES, Segment, SegmentDamaged, SegmentWriter } from './search-segment'
import { parseQuery, searchableText, snippet, terms, type SearchQuery } from './search-text'
import type { SearchHitDto } from '../../shared/api/api'

/** What the index reads of the history (HistoryStore has it all). */
/** Entries that joined a conversation (the history's `entries` event carries at least this). */
export interface JoinedEntries { conversation: string; joined: Entry[] }

export interface SearchSource {
  /** every entry that joins a conversation, from this device or a peer, passes here */
  subscribe: (fn: (ev: JoinedEntries) => void) => () => void
  list: () => Array<{ id: string; title: string; size: number; waiting: number }>
  summary: (conversation: string) => { title: string } | undefined
  open: (conversation: string) => Promise<ConversationDag>
}

/** A hit as search.query answers it (the conversation's title as it is now): the API's type, written once. */
export type SearchHit = SearchHitDto

export interface SearchResult {
  hits: SearchHit[]
  /** pass back for the next page; absent on the last */
  cursor?: string
}

/** The points between the steps of a segment write, a merge and a compaction where a test may stop the index as a kill would. */
export type CrashPoint = 'segment.half' | 'segment.unlisted' | 'merge.half' | 'merge.unlisted' | 'compact.half' | 'compact.unrenamed' | 'compact.renamed'

export interface SearchIndexOptions {
  source: SearchSource
  /** the index directory of the data directory (indexDir) */
  dir: string
  log: Logger
  /** how long new records may wait before they are written (they are written together) */
  flushMs?: number
  /** the live postings are written as a segment past this many documents (default 131,072) … */
  liveDocs?: number
  /** … or past about these many bytes of memory (default 8 MiB) */
  liveBytes?: number
  /** segments of one size class merged at a time (default 4) */
  mergeFactor?: number
  /** no merge makes a segment of more documents (default 2M: what a query holds a byte each of) */
  maxSegmentDocs?: number
  /** the log is compacted once dead records are more than half of it and it is at least this long (default 1 MiB) */
  compactMinBytes?: number
  /** … and dead records are more than this share of it (default 0.5) */
  compactDeadShare?: number
  /** while writes fail, at most these many bytes of records wait in memory (default 16 MiB); past it they are given up and their conversations indexed again once writing works */
  maxPendingBytes?: number
  /** dictionary block size of segments (tests make it tiny) */
  blockBytes?: number
  /** tests: stop as a kill would at this point (return true to stop) */
  crashAt?: (point: CrashPoint) => boolean
}

export const MAX_SEARCH_LIMIT = 200
/** most words of a query that count (the rest are ignored) */
const MAX_QUERY_WORDS = 16
/** a query that finds the index changed under it (a merge, a compaction) starts again, at most this often */
const QUERY_ATTEMPTS = 5
/** a seen count no DAG has: the conversation is indexed again from its DAG (reconcile) */
const STALE = -(2 ** 40)

/** A test's kill: the index does nothing more, as a killed process would not. */
export class SimulatedCrash extends Error {}

/** The searchable state: the conversation table, the segments on disk, the live postings in memory. */
interface Parts {
  convs: SearchConversations
  segments: Segment[]
  live: SearchPostings
  /** the live postings being written as a segment (still searched until the segment is listed) */
  frozen: SearchPostings | null
}

function emptyParts (): Parts {
  return { convs: new SearchConversations(), segments: [], live: new SearchPostings(), frozen: null }
}

/**
 * The full-text index of every conversation and branch (derived state). Entries are indexed as
 * they join (the store's 'entries' event: own appends and peers' alike); their text goes into a
 * log of CRC-framed records (index/search.log). The newest documents' postings are in memory
 * (search-postings.ts, bounded by liveDocs/liveBytes); older ones are in immutable segment files
 * (search-segment.ts, merged by search-merge.ts) listed by a manifest (index/search/manifest)
 * with the log's length they cover. A log mostly of dead records is compacted. At start the
 * manifest's segments are opened and the log past them read, and a conversation whose count of
 * joined entries differs from its summary's is indexed again from its DAG: a lost or damaged log,
 * manifest or segment costs a rebuild, never a refusal.
 */
export class SearchIndex {
  readonly file: string
  /** segment files and their manifest */
  readonly segmentDir: string
  readonly manifestFile: string
  private readonly compactFile: string
  private nonce: Buffer = Buffer.alloc(16)
  private parts: Parts = emptyParts()
  /** changes whenever segments are replaced or the log compacted: a query under way starts again */
  private generation = 0
  private readonly queue: JoinedEntries[] = []
  private drainScheduled = false
  private loaded = false
  private closing = false
  private crashed = false
  private fh: fsp.FileHandle | null = null
  /** bytes of the log on disk, and the frames waiting to be written after them */
  private written = 0
  /** the log's length the manifest on disk covers (0: none) */
  private manifestAt = 0
  private pending: Buffer[] = []
  private pendingBytes = 0
  private readonly pendingConvs = new Set<string>()
  /** the last write failed (pending records are then capped) */
  private writeFailing = false
  /** records were given up: conversations wait to be indexed again */
  private gaveUp = false
  /** counts the times records were given up (a write under way then wrote records no longer wanted) */
  private givenUpEpoch = 0
  /** the log's length when a compaction last failed */
  private compactFailedAt = 0
  private flushTimer: NodeJS.Timeout | null = null
  private flushing: Promise<void> = Promise.resolve()
  private unsubscribe: (() => void) | null = null
  private opened: Promise<void> | null = null
  private reconciling: Promise<void> | null = null
  private readonly flushMs: number
  private readonly liveDocs: number
  private readonly liveBytes: number
  private readonly mergeFactor: number
  private readonly maxSegmentDocs: number
  private readonly compactMinBytes: number
  private readonly compactDeadShare: number
  /** segment files no longer needed once the next manifest is written (a manifest on disk may still list them) */
  private doomed: string[] = []
  private readonly maxPendingBytes: number
  private readonly blockBytes: number
  /** measured while opening (and counted after): for benchmarks, tests and the log */
  readonly stats = { loadMs: 0, records: 0, reindexed: 0, fromManifest: false, segmentsWritten: 0, merges: 0, compactions: 0, givenUp: 0 }

  constructor (private readonly opts: SearchIndexOptions) {
    this.file = path.join(opts.dir, 'search.log')
    this.segmentDir = path.join(opts.dir, 'search')
    this.manifestFile = path.join(this.segmentDir, 'manifest')
    this.compactFile = path.join(opts.dir, 'search.log.compacting')
    this.flushMs = opts.flushMs ?? 250
    this.liveDocs = Math.max(1, opts.liveDocs ?? 131_072)
    this.liveBytes = opts.liveBytes ?? 8 * 2 ** 20
    this.mergeFactor = Math.max(2, opts.mergeFactor ?? 4)
    this.maxSegmentDocs = opts.maxSegmentDocs ?? 2 ** 21
    this.compactMinBytes = opts.compactMinBytes ?? 2 ** 20
    this.compactDeadShare = opts.compactDeadShare ?? 0.5
    this.maxPendingBytes = opts.maxPendingBytes ?? 16 * 2 ** 20
    this.blockBytes = opts.blockBytes ?? BLOCK_BYTES
  }

  /** Starts following the history and loads (or rebuilds) the index; resolves once it answers completely. */
  open (): Promise<void> {
    this.opened ??= this.openIndex()
    return this.opened
  }

  private async openIndex (): Promise<void> {
    const t0 = performance.now()
    // subscribed before the log is read: what joins meanwhile waits in the queue
    this.unsubscribe = this.opts.source.subscribe(ev => { this.enqueue(ev) })
    await fsp.mkdir(this.segmentDir, { recursive: true }).catch((err: unknown) => { throw storageError(err, this.opts.dir) })
    await this.load()
    this.loaded = true
    this.drain()
    await this.reconcile()
    this.stats.loadMs = Math.round(performance.now() - t0)
  }

  private crashPoint (point: CrashPoint): void {
    if (this.crashed || this.opts.crashAt?.(point) === true) {
      this.crashed = true
      throw new SimulatedCrash(`stopped at ${point}`)
    }
  }

  private async load (): Promise<void> {
    const { log } = this.opts
    // what an older version or a killed compaction left: the log is the truth
    await fsp.rm(path.join(this.opts.dir, 'search.snap'), { force: true })
    await fsp.rm(this.compactFile, { force: true })
    let fh: fsp.FileHandle
    try {
      fh = await fsp.open(this.file, 'r+')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw storageError(err, this.opts.dir)
      await this.startLog()
      return
    }
    this.fh = fh
    const size = (await fh.stat()).size
    const head = Buffer.alloc(SEARCH_PREFIX)
    const { bytesRead: headBytes } = await fh.read(head, 0, SEARCH_PREFIX, 0)
    const problem = startProblem(head.subarray(0, headBytes))
    if (problem !== null) {
      log.warn(`rebuilding the search index: ${problem}`)
      await fh.close()
      this.fh = null
      await this.startLog()
      return
    }
    this.nonce = Buffer.from(logNonce(head))
    const from = await this.loadManifest(size)
    await this.sweep()
    const parts = this.parts
    const r = await this.readLog(parts, fh, from, size, true)
    if (this.closing && !r.damaged && r.end < size) {
      // closed while reading: the rest of the file is left as it is, nothing is written
      await fh.close()
      this.fh = null
      return
    }
    if (r.damaged || r.end < size) {
      // A torn or damaged tail: cut it; the conversations it held are indexed again (reconcile).
      log.warn(`the search index ends in a damaged record at ${r.end} of ${size} bytes; cutting it there`)
      await fh.truncate(r.end).catch((err: unknown) => { throw storageError(err, this.opts.dir) })
    }
    this.written = r.end
  }

  /**
   * Reads the log from `from` into `parts`, writing the live postings as a segment whenever they
   * are over budget (the records are on disk); `listing` (a start, not a compaction): a manifest
   * is written with each, and a close stops the reading.
   */
  private async readLog (parts: Parts, fh: fsp.FileHandle, from: number, size: number, listing: boolean): Promise<{ end: number; damaged: boolean }> {
    return await scanLog(fh, from, size, async (record, at, frame) => {
      this.apply(parts, record, at, frame.length)
      this.stats.records++
      if (this.overBudget(parts.live)) await this.writeLive(parts, at + frame.length, listing)
    }, () => this.crashed || (listing && this.closing))
  }

  /** The manifest's segments, if it is of this log and they are whole; returns where the log is to be read from. */
  private async loadManifest (logSize: number): Promise<number> {
    let buf: Buffer
    try {
      buf = await fsp.readFile(this.manifestFile)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return SEARCH_PREFIX
      throw storageError(err, this.opts.dir)
    }
    const m = decodeManifest(buf, this.nonce)
    const problem = typeof m === 'string' ? m : m.logBytes > logSize ? 'the search log is shorter than its manifest' : null
    if (problem !== null || typeof m === 'string') {
      this.opts.log.warn(`reading the search log whole: ${problem ?? ''}`)
      return SEARCH_PREFIX
    }
    const segments: Segment[] = []
    try {
      const convs = SearchConversations.from(m.conversations)
      for (const name of m.segments) segments.push(await Segment.open(path.join(this.segmentDir, name)))
      this.parts = { convs, segments, live: new SearchPostings(), frozen: null }
      this.manifestAt = m.logBytes
      this.stats.fromManifest = true
      return m.logBytes
    } catch (err) {
      for (const s of segments) await s.close()
      if (!(err instanceof SegmentDamaged) && (err as NodeJS.ErrnoException).code !== 'ENOENT' && !(err instanceof Error && err.message.includes('inconsistent'))) throw storageError(err, this.opts.dir)
      this.opts.log.warn(`reading the search log whole: ${(err as Error).message}`)
      return SEARCH_PREFIX
    }
  }

  /** Removes segment files no manifest lists (what a kill or a failed write left), and the manifest if none is used. */
  private async sweep (): Promise<void> {
    const keep = new Set(this.parts.segments.map(s => path.basename(s.file)))
    if (this.stats.fromManifest) keep.add(path.basename(this.manifestFile))
    let names: string[]
    try { names = await fsp.readdir(this.segmentDir) } catch (err) { throw storageError(err, this.segmentDir) }
    for (const n of names) if (!keep.has(n)) await fsp.rm(path.join(this.segmentDir, n), { force: true, recursive: true })
  }

  private async startLog (): Promise<void> {
    this.nonce = randomBytes(16)
    this.manifestAt = 0
    this.parts = emptyParts()
    try {
      await this.sweep()
      const fh = this.fh = await fsp.open(this.file, 'w+')
      const start = searchLogStart(this.nonce)
      await fh.write(start, 0, start.length, 0)
      this.written = start.length
    } catch (err) {
      throw storageError(err, this.opts.dir)
    }
  }

  /** A record of the log at its offset (`bytes`: its frame's length), applied to the parts. */
  private apply (parts: Parts, r: SearchRecord, at: number, bytes: number): void {
    if (r.t === 'd') parts.live.add(parts.convs.counted(r.c, 1, bytes), r.ts, at, terms(r.x))
    else if (r.t === 'n') parts.convs.counted(r.c, r.n, bytes)
    else parts.convs.drop(r.c, at, bytes)
  }

  private overBudget (live: SearchPostings): boolean {
    return live.docCount >= this.liveDocs || live.bytes >= this.liveBytes
  }

  private isDead (parts: Parts): IsDead {
    return (c, at) => parts.convs.isDead(c, at)
  }

  /** Appends a record to the log (written with the next flush) and applies it. */
  private record (r: SearchRecord): void {
    const frame = encodeRecord(r)
    const at = this.written + this.pendingBytes
    this.pending.push(frame)
    this.pendingBytes += frame.length
    this.pendingConvs.add(r.c)
    this.apply(this.parts, r, at, frame.length)
    if (this.writeFailing && this.pendingBytes > this.maxPendingBytes) this.giveUpPending()
    this.scheduleFlush()
  }

  /**
   * Writes fail and the records waiting are over their cap: they are given up, their documents
   * no longer answered, and their conversations marked to be indexed again from their DAGs once
   * a write succeeds (the DAGs, on disk, are the truth; the index is derived).
   */
  private giveUpPending (): void {
    const convs = [...this.pendingConvs]
    for (const c of convs) this.parts.convs.markStale(c, STALE)
    this.parts.live.kill(this.written)
    this.pending = []
    this.pendingBytes = 0
    this.pendingConvs.clear()
    this.gaveUp = true
    this.givenUpEpoch++
    this.stats.givenUp += convs.length
    this.opts.log.warn(`search index: the disk refuses its writes; ${convs.length} conversation(s) will be indexed again once it takes them`)
  }

  /**
   * Indexes, again and whole, each conversation whose joined entries the index did not count
   * as its summary does (new to the index, its log records lost, or given up): progress is logged.
   */
  private async reconcile (): Promise<void> {
    const { source, log } = this.opts
    const behind = source.list().filter(s => this.parts.convs.seen(s.id) !== s.size - s.waiting)
    if (behind.length === 0) return
    log.info(`search index: indexing ${behind.length} conversation(s)`)
    const t0 = performance.now()
    let entries = 0
    for (const [i, s] of behind.entries()) {
      if (this.closing || this.crashed) return
      const dag = await source.open(s.id)
      if (this.closing || this.crashed) return
      entries += this.reindex(dag)
      this.stats.reindexed++
      // written as it goes: a rebuild of the whole history holds one conversation's records at a time
      if (this.pendingBytes > 4 * 2 ** 20) await this.flush()
      if ((i + 1) % 1000 === 0) log.info(`search index: ${i + 1} of ${behind.length} conversations (${entries} entries)`)
    }
    await this.flush()
    log.info(`search index: indexed ${behind.length} conversation(s), ${entries} entries, in ${Math.round(performance.now() - t0)} ms`)
  }

  /** Runs reconcile once more (after records were given up and writing works again); one at a time. */
  private reconcileLater (): void {
    if (this.reconciling !== null || this.closing) return
    this.reconciling = this.reconcile()
      .catch(err => { this.opts.log.error(`search index: indexing again failed: ${(err as Error).message}`); this.gaveUp = true })
      .finally(() => { this.reconciling = null })
  }

  /** Forgets a conversation's documents and indexes every joined entry of its DAG now; returns how many. */
  private reindex (dag: ConversationDag): number {
    // what joined before now is in the DAG: queued events would only repeat it
    this.drain()
    this.record({ t: 'x', c: dag.conversation })
    const joined: Entry[] = []
    for (const e of dag.entries()) if (dag.isJoined(e.id)) joined.push(e)
    this.index(dag.conversation, joined)
    return joined.length
  }

  private index (conversation: string, joined: readonly Entry[]): void {
    let plain = 0
    for (const e of joined) {
      const text = searchableText(e)
      if (text === null || text.trim() === '') { plain++; continue }
      this.record({ t: 'd', c: conversation, id: e.id, ts: e.ts, x: text })
    }
    if (plain > 0) this.record({ t: 'n', c: conversation, n: plain })
  }

  private enqueue (ev: JoinedEntries): void {
    if (ev.joined.length === 0 || this.closing) return
    this.queue.push(ev)
    // indexed after the append's own work: tokenizing is not on the path to the acknowledgement
    if (this.loaded && !this.drainScheduled) {
      this.drainScheduled = true
      setImmediate(() => { this.drain() })
    }
  }

  private drain (): void {
    this.drainScheduled = false
    if (!this.loaded) return
    for (const ev of this.queue.splice(0)) this.index(ev.conversation, ev.joined)
  }

  private scheduleFlush (): void {
    if (this.flushTimer !== null || this.closing) return
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null
      this.flush().catch(err => { if (!(err instanceof SimulatedCrash)) this.opts.log.error(`could not write the search index: ${(err as Error).message}`) })
    }, this.flushMs)
  }

  /**
   * Writes the pending records (after any write under way), then what is due: the live postings
   * as a segment, merges, a compaction of the log. On failure the records stay pending for the next.
   */
  flush (): Promise<void> {
    this.drain()
    const run = this.flushing.then(async () => {
      await this.writePending()
      if (this.pending.length === 0 && this.overBudget(this.parts.live)) await this.writeLive(this.parts, this.written, true)
      await this.compactIfDue()
    })
    this.flushing = run.catch(() => undefined)
    return run
  }

  private async writePending (): Promise<void> {
    const fh = this.fh
    if (this.crashed || this.pending.length === 0 || fh === null) return
    const buf = Buffer.concat(this.pending)
    const count = this.pending.length
    const epoch = this.givenUpEpoch
    try {
      for (let done = 0; done < buf.length;) done += (await fh.write(buf, done, buf.length - done, this.written + done)).bytesWritten
      // given up while they were written: their offsets belong to the records after them now
      if (epoch !== this.givenUpEpoch) { await fh.truncate(this.written); return }
    } catch (err) {
      this.writeFailing = true
      // a part written would be read as a torn tail: cut it, so the next write starts where this one did
      await fh.truncate(this.written).catch(() => undefined)
      throw storageError(err, this.opts.dir)
    }
    this.writeFailing = false
    this.pending.splice(0, count)
    this.pendingBytes -= buf.length
    this.written += buf.length
    if (this.pending.length === 0) this.pendingConvs.clear()
    if (this.gaveUp) {
      this.gaveUp = false
      this.reconcileLater()
    }
  }

  /**
   * Writes the live postings of `parts` as a segment: every record before `coveredAt` of the log
   * is in them or in its segments, and on disk; then merges what is due and (`listing`) writes
   * the manifest. The postings stay searched until the segment is listed.
   */
  private async writeLive (parts: Parts, coveredAt: number, listing: boolean): Promise<void> {
    const frozen = parts.live
    parts.live = new SearchPostings()
    parts.frozen = frozen
    const convs = parts.convs.state()
    const retired: Segment[] = []
    try {
      // the log up to coveredAt is on disk before a manifest says so
      if (listing) await this.fh?.sync()
      if (frozen.docCount > 0) {
        const { rows, terms: ts } = frozen.segmentParts(this.isDead(parts))
        const file = this.segmentFile()
        const w = await SegmentWriter.create(file, this.blockBytes)
        try {
          for (const t of ts) await w.term(t)
          await w.rows(rows)
        } catch (err) {
          await w.abort()
          throw err
        }
        await w.finish(async () => { this.crashPoint('segment.half') })
        parts.segments.push(await Segment.open(file))
        this.stats.segmentsWritten++
        this.crashPoint('segment.unlisted')
      }
      parts.frozen = null
      for (let pick = this.pickMerge(parts); pick !== null; pick = this.pickMerge(parts)) {
        const inputs = parts.segments.slice(pick.from, pick.to)
        const file = this.segmentFile()
        await mergeSegments(inputs, file, { blockBytes: this.blockBytes, beforeSync: async () => { this.crashPoint('merge.half') } })
        parts.segments.splice(pick.from, pick.to - pick.from, await Segment.open(file))
        // queries under way on the inputs (closed below) start again
        if (parts === this.parts) this.generation++
        retired.push(...inputs)
        this.stats.merges++
        this.crashPoint('merge.unlisted')
      }
      if (listing) await this.writeManifest(parts, coveredAt, convs)
    } catch (err) {
      if (parts.frozen === frozen) {
        // not written: they are live again, before what arrived meanwhile
        parts.frozen = null
        frozen.absorb(parts.live)
        parts.live = frozen
      }
      throw err
    } finally {
      // inputs of a merge are left until a manifest no longer lists them (closing them ends queries on them: they start again)
      for (const s of retired) await s.close()
      this.doomed.push(...retired.map(s => s.file))
    }
  }

  private pickMerge (parts: Parts): { from: number; to: number } | null {
    return pickMerge(parts.segments.map(s => s.docs), { unit: this.liveDocs, factor: this.mergeFactor, maxDocs: this.maxSegmentDocs })
  }

  private segmentFile (): string {
    return path.join(this.segmentDir, `${randomBytes(8).toString('hex')}.seg`)
  }

  private async writeManifest (parts: Parts, coveredAt: number, convs: ConversationsState): Promise<void> {
    const segments = parts.segments.map(s => path.basename(s.file))
    const doomed = this.doomed.splice(0)
    await writeStateFile(this.manifestFile, encodeManifest(this.nonce, { logBytes: coveredAt, conversations: convs, segments }))
    this.manifestAt = coveredAt
    for (const f of doomed) await fsp.rm(f, { force: true })
  }

  /**
   * Rewrites the log with its live records only, once dead ones (records of conversations
   * indexed again) are more than half of it: to a temporary, read into new parts (new segments),
   * renamed over the log, listed by a new manifest. A kill before the rename leaves the old log
   * and manifest; after it, the new log, whose nonce the old manifest does not name (read whole).
   */
  private async compactIfDue (): Promise<void> {
    const fh = this.fh
    const size = this.written - SEARCH_PREFIX
    // not while closing: it reads the whole log again (a close would wait for it)
    if (fh === null || this.crashed || this.closing || this.pending.length > 0 || size < this.compactMinBytes || this.parts.convs.deadBytes <= size * this.compactDeadShare) return
    // a compaction that failed (a full disk) is tried again once the log has grown a tenth
    if (this.written < this.compactFailedAt * 1.1) return
    this.compactFailedAt = this.written
    const old = this.parts
    const nonce = randomBytes(16)
    const t0 = performance.now()
    const out = await fsp.open(this.compactFile, 'w+', 0o600).catch((err: unknown) => { throw storageError(err, this.opts.dir) })
    let outBytes = 0
    const next = emptyParts()
    try {
      const start = searchLogStart(nonce)
      await out.write(start, 0, start.length, 0)
      outBytes = start.length
      let half = false
      const r = await scanLog(fh, SEARCH_PREFIX, this.written, async (rec, at, frame) => {
        if (rec.t === 'x' || !old.convs.isLive(rec.c, at)) return
        for (let done = 0; done < frame.length;) done += (await out.write(frame, done, frame.length - done, outBytes + done)).bytesWritten
        outBytes += frame.length
        if (!half && outBytes * 2 > this.written) { half = true; this.crashPoint('compact.half') }
      })
      if (r.damaged) throw new Error('the search log changed while it was compacted')
      await out.sync()
      // the new parts, from the new log: its segments are listed only once it is the log
      const rn = await this.readLog(next, out, SEARCH_PREFIX, outBytes, false)
      if (rn.damaged || rn.end !== outBytes) throw new Error('the compacted search log does not read back')
      await this.writeLive(next, outBytes, false)
      this.crashPoint('compact.unrenamed')
      await out.close()
      await fsp.rename(this.compactFile, this.file)
      await syncDir(this.opts.dir)
      this.crashPoint('compact.renamed')
    } catch (err) {
      await out.close().catch(() => undefined)
      for (const s of next.segments) await s.close()
      // a kill leaves its files to the next start's sweep
      if (!this.crashed) {
        for (const s of next.segments) await fsp.rm(s.file, { force: true })
        await fsp.rm(this.compactFile, { force: true })
      }
      throw err
    }
    // the switch: records that arrived meanwhile (pending, at offsets of the old log) go after the new log's end
    const newFh = await fsp.open(this.file, 'r+')
    const oldFh = fh
    const before = this.written
    this.fh = newFh
    this.nonce = nonce
    this.written = outBytes
    this.parts = next
    this.generation++
    let at = outBytes
    for (const frame of this.pending) {
      const rec = decodeFrames(frame).records[0]?.record
      if (rec !== undefined) this.apply(next, rec, at, frame.length)
      at += frame.length
    }
    await oldFh.close()
    for (const s of old.segments) await s.close()
    this.doomed.push(...old.segments.map(s => s.file))
    await this.writeManifest(next, outBytes, next.convs.state())
    this.compactFailedAt = 0
    this.stats.compactions++
    this.opts.log.info(`search index: compacted its log from ${before} to ${outBytes} bytes in ${Math.round(performance.now() - t0)} ms`)
  }

  /** A record at an offset: in the file, or still pending. */
  private async readRecord (at: number): Promise<SearchRecord | null> {
    let frame: Buffer | null = null
    if (at >= this.written) {
      let pos = this.written
      for (const f of this.pending) {
        if (pos === at) { frame = f; break }
        pos += f.length
      }
    } else if (this.fh !== null) {
      const head = Buffer.alloc(FRAME_HEAD)
      await this.fh.read(head, 0, FRAME_HEAD, at)
      frame = Buffer.alloc(frameLength(head))
      await this.fh.read(frame, 0, frame.length, at)
    }
    if (frame === null) return null
    return decodeFrames(frame).records[0]?.record ?? null
  }

  /**
   * The entries matching a query, newest first: every word must be in the entry's text, the last
   * one as a prefix. `cursor` continues a previous answer.
   */
  async query (text: string, opts: { limit?: number; cursor?: string } = {}): Promise<SearchResult> {
    await this.open()
    this.drain()
    const limit = Math.max(1, Math.min(MAX_SEARCH_LIMIT, Math.floor(opts.limit ?? 20)))
    const parsed = parseQuery(text)
    const q: SearchQuery = { words: parsed.words.slice(0, MAX_QUERY_WORDS), prefix: parsed.prefix }
    const after = opts.cursor === undefined ? undefined : parseCursor(opts.cursor)
    for (let attempt = 1; ; attempt++) {
      const generation = this.generation
      try {
        return await this.answer(q, limit, after)
      } catch (err) {
        // segments replaced or the log compacted under the query: its parts are closed, ask the new ones
        if (generation === this.generation || attempt >= QUERY_ATTEMPTS) throw err
      }
    }
  }

  private async answer (q: SearchQuery, limit: number, after: DocHit | undefined): Promise<SearchResult> {
    const generation = this.generation
    const parts = this.parts
    const top = new TopHits(limit + 1, after)
    const dead = this.isDead(parts)
    // newest first: the live part, what is being written, then segments newest first (older ones are then often skipped by time)
    parts.live.match(q, top, dead)
    parts.frozen?.match(q, top, dead)
    for (const s of [...parts.segments].reverse()) await s.match(q, top, dead)
    const docs = top.hits()
    const page = docs.slice(0, limit)
    const hits: SearchHit[] = []
    for (const d of page) {
      const r = await this.readRecord(d.at)
      if (generation !== this.generation) throw new Error('the search index changed under the query')
      if (r === null || r.t !== 'd') throw new Error(`the search index lost the record of a hit (at ${d.at}); restart to rebuild it`)
      const s = snippet(r.x, q)
      hits.push({ conversation: r.c, entry: r.id, title: this.opts.source.summary(r.c)?.title ?? '', ts: r.ts, snippet: s.text, match: s.match })
    }
    if (generation !== this.generation) throw new Error('the search index changed under the query')
    const last = page.at(-1)
    return { hits, ...(docs.length > limit && last !== undefined ? { cursor: `${last.ts}:${last.at}` } : {}) }
  }

  /** Documents held and the bytes of memory they take (an estimate: the live postings, segment footers, the conversation table) (benchmarks). */
  get size (): { docs: number; memoryBytes: number; fileBytes: number; segments: number; segmentDocs: number } {
    const p = this.parts
    const segmentDocs = p.segments.reduce((n, s) => n + s.docs, 0)
    const memoryBytes = p.live.bytes + (p.frozen?.bytes ?? 0) + p.segments.reduce((n, s) => n + s.bytes, 0) + p.convs.bytes
    return { docs: segmentDocs + p.live.docCount + (p.frozen?.docCount ?? 0), memoryBytes, fileBytes: this.written + this.pendingBytes, segments: p.segments.length, segmentDocs }
  }

  /** Stops following the history and writes what is pending: the live postings as a segment, listed. */
  async close (): Promise<void> {
    this.closing = true
    this.unsubscribe?.()
    if (this.flushTimer !== null) clearTimeout(this.flushTimer)
    await this.opened?.catch(() => undefined)
    await this.reconciling
    this.drain()
    try {
      if (!this.crashed) {
        await this.flush().catch(err => { if (!(err instanceof SimulatedCrash)) throw err })
        await this.flushing
        if (this.loaded && this.pending.length === 0 && this.fh !== null && (this.written !== this.manifestAt || this.parts.live.docCount > 0)) {
          if (!this.crashed) await this.writeLive(this.parts, this.written, true).catch(err => {
            // the log is whole: the next start reads more of it, that is all
            if (!(err instanceof SimulatedCrash)) this.opts.log.warn(`could not write the search segments: ${storageError(err, this.opts.dir).message}`)
          })
        }
      }
    } finally {
      await this.fh?.close()
      this.fh = null
      for (const s of this.parts.segments) await s.close()
    }
  }
}

async function syncDir (dir: string): Promise<void> {
  if (process.platform === 'win32') return
  const d = await fsp.open(dir, 'r')
  try { await d.sync() } finally { await d.close() }
}

function parseCursor (cursor: string): DocHit {
  const m = /^(-?\d+(?:\.\d+)?):(\d+)$/.exec(cursor)
  if (m === null) throw new Error(`not a search cursor: ${cursor.slice(0, 40)}`)
  return { ts: Number(m[1]), at: Number(m[2]) }
}
