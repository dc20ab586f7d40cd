import { randomBytes } from 'node:crypto'
import fsp from 'node:fs/promises'
import path from 'node:path'
import type { ConversationDag } from '../../shared/conversation-dag'
import type { Entry } from '../../shared/entry'
import type { Logger } from '../../shared/logger'
import { storageError } from '../disk/storage-error'
import type { EntriesEvent } from './conversation-index'
import { SearchPostings, type DocHit } from './search-postings'
import { FRAME_HEAD, SEARCH_PREFIX, decodeFrames, decodeSnapshot, encodeRecord, encodeSnapshot, frameLength, logNonce, searchLogStart, startProblem, type SearchRecord } from './search-log'
import { parseQuery, searchableText, snippet, terms, type SearchQuery } from './search-text'
import type { SearchHitDto } from '../../shared/api'

/** What the index reads of the history (HistoryStore has it all). */
export interface SearchSource {
  /** every entry that joins a conversation, from this device or a peer, passes here */
  subscribe: (fn: (ev: EntriesEvent) => void) => () => void
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

export interface SearchIndexOptions {
  source: SearchSource
  /** the index directory of the data directory (indexDir) */
  dir: string
  log: Logger
  /** how long new records may wait before they are written (they are written together) */
  flushMs?: number
}

export const MAX_SEARCH_LIMIT = 200
const READ_CHUNK = 4 * 1024 * 1024
/** most words of a query that count (the rest are ignored) */
const MAX_QUERY_WORDS = 16

/**
 * The full-text index of every conversation and branch (derived state). Entries are indexed as
 * they join (the store's 'entries' event: own appends and peers' alike); their text goes into a
 * log of CRC-framed records (index/search.log), postings stay in memory (search-postings.ts).
 * At start the log is read back, and a conversation whose count of joined entries differs from
 * its summary's is indexed again from its DAG: a lost or damaged log costs a rebuild from the
 * entries, never a refusal.
 */
export class SearchIndex {
  readonly file: string
  /** the postings as they were at a length of the log, so a start reads only the log past it */
  readonly snapshotFile: string
  private nonce: Buffer = Buffer.alloc(16)
  /** the log's length the snapshot on disk covers (0: none) */
  private snapshotAt = 0
  private postings = new SearchPostings()
  private readonly queue: EntriesEvent[] = []
  private drainScheduled = false
  private loaded = false
  private closing = false
  private fh: fsp.FileHandle | null = null
  /** bytes of the log on disk, and the frames waiting to be written after them */
  private written = 0
  private pending: Buffer[] = []
  private pendingBytes = 0
  private flushTimer: NodeJS.Timeout | null = null
  private flushing: Promise<void> = Promise.resolve()
  private unsubscribe: (() => void) | null = null
  private opened: Promise<void> | null = null
  private readonly flushMs: number
  /** measured while opening: for benchmarks and the log */
  readonly stats = { loadMs: 0, records: 0, reindexed: 0, fromSnapshot: false }

  constructor (private readonly opts: SearchIndexOptions) {
    this.file = path.join(opts.dir, 'search.log')
    this.snapshotFile = path.join(opts.dir, 'search.snap')
    this.flushMs = opts.flushMs ?? 250
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
    await fsp.mkdir(this.opts.dir, { recursive: true }).catch((err: unknown) => { throw storageError(err, this.opts.dir) })
    await this.load()
    this.loaded = true
    this.drain()
    await this.reconcile()
    this.stats.loadMs = Math.round(performance.now() - t0)
  }

  private async load (): Promise<void> {
    const { log } = this.opts
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
    let pos = await this.loadSnapshot(size)
    let buf = Buffer.alloc(Math.min(READ_CHUNK, Math.max(0, size - pos)))
    let damaged = false
    while (pos < size && !this.closing) {
      const want = Math.min(size - pos, Math.max(READ_CHUNK, buf.length))
      if (buf.length < want) buf = Buffer.alloc(want)
      const { bytesRead } = await fh.read(buf, 0, want, pos)
      const chunk = buf.subarray(0, bytesRead)
      const r = decodeFrames(chunk)
      for (const { at, record } of r.records) this.apply(record, pos + at)
      this.stats.records += r.records.length
      if (r.damaged || bytesRead === 0) { damaged = true; break }
      if (r.end === 0) {
        // a frame longer than the chunk: read it whole next time, unless it runs past the file
        const len = chunk.length >= FRAME_HEAD ? frameLength(chunk) : Infinity
        if (pos + len > size) { damaged = pos < size; break }
        buf = Buffer.alloc(len)
        continue
      }
      pos += r.end
    }
    if (this.closing && !damaged && pos < size) {
      // closed while reading: the rest of the file is left as it is, nothing is written
      await fh.close()
      this.fh = null
      return
    }
    if (damaged || pos < size) {
      // A torn or damaged tail: cut it; the conversations it held are indexed again (reconcile).
      log.warn(`the search index ends in a damaged record at ${pos} of ${size} bytes; cutting it there`)
      await fh.truncate(pos).catch((err: unknown) => { throw storageError(err, this.opts.dir) })
    }
    this.written = pos
  }

  /** The postings of the snapshot, if it is of this log and whole; returns where the log is to be read from. */
  private async loadSnapshot (logSize: number): Promise<number> {
    let buf: Buffer
    try {
      buf = await fsp.readFile(this.snapshotFile)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return SEARCH_PREFIX
      throw storageError(err, this.opts.dir)
    }
    const snap = decodeSnapshot(buf, this.nonce)
    const problem = typeof snap === 'string' ? snap : snap.logBytes > logSize ? 'the search log is shorter than its snapshot' : null
    if (problem === null && typeof snap !== 'string') {
      try {
        this.postings = SearchPostings.decode(snap.postings)
        this.snapshotAt = snap.logBytes
        this.stats.fromSnapshot = true
        return snap.logBytes
      } catch (err) {
        this.opts.log.warn(`reading the search log whole: its snapshot is unreadable (${(err as Error).message})`)
        this.postings = new SearchPostings()
        return SEARCH_PREFIX
      }
    }
    this.opts.log.warn(`reading the search log whole: ${problem ?? ''}`)
    return SEARCH_PREFIX
  }

  private async startLog (): Promise<void> {
    this.nonce = randomBytes(16)
    this.snapshotAt = 0
    try {
      await fsp.rm(this.snapshotFile, { force: true })
      const fh = this.fh = await fsp.open(this.file, 'w+')
      const start = searchLogStart(this.nonce)
      await fh.write(start, 0, start.length, 0)
      this.written = start.length
    } catch (err) {
      throw storageError(err, this.opts.dir)
    }
    this.postings = new SearchPostings()
  }

  /** A record read from the log, at its offset in the file. */
  private apply (r: SearchRecord, at: number): void {
    if (r.t === 'd') this.postings.add(r.c, r.ts, at, terms(r.x))
    else if (r.t === 'n') this.postings.count(r.c, r.n)
    else this.postings.drop(r.c)
  }

  /** Appends a record to the log (written with the next flush) and applies it. */
  private record (r: SearchRecord): void {
    const frame = encodeRecord(r)
    const at = this.written + this.pendingBytes
    this.pending.push(frame)
    this.pendingBytes += frame.length
    this.apply(r, at)
    this.scheduleFlush()
  }

  /**
   * Indexes, again and whole, each conversation whose joined entries the index did not count
   * as its summary does (new to the index, or its log records lost): progress is logged.
   */
  private async reconcile (): Promise<void> {
    const { source, log } = this.opts
    const behind = source.list().filter(s => this.postings.seen(s.id) !== s.size - s.waiting)
    if (behind.length === 0) return
    log.info(`search index: indexing ${behind.length} conversation(s)`)
    const t0 = performance.now()
    let entries = 0
    for (const [i, s] of behind.entries()) {
      if (this.closing) return
      const dag = await source.open(s.id)
      if (this.closing) return
      entries += this.reindex(dag)
      this.stats.reindexed++
      // written as it goes: a rebuild of the whole history holds one conversation's records at a time
      if (this.pendingBytes > READ_CHUNK) await this.flush()
      if ((i + 1) % 1000 === 0) log.info(`search index: ${i + 1} of ${behind.length} conversations (${entries} entries)`)
    }
    await this.flush()
    log.info(`search index: indexed ${behind.length} conversation(s), ${entries} entries, in ${Math.round(performance.now() - t0)} ms`)
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

  private enqueue (ev: EntriesEvent): void {
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
      this.flush().catch(err => { this.opts.log.error(`could not write the search index: ${(err as Error).message}`) })
    }, this.flushMs)
  }

  /** Writes the pending records (after any write under way); on failure they stay pending for the next. */
  flush (): Promise<void> {
    const run = this.flushing.then(() => this.writePending())
    this.flushing = run.catch(() => undefined)
    return run
  }

  private async writePending (): Promise<void> {
    const fh = this.fh
    if (this.pending.length === 0 || fh === null) return
    const buf = Buffer.concat(this.pending)
    const count = this.pending.length
    try {
      for (let done = 0; done < buf.length;) done += (await fh.write(buf, done, buf.length - done, this.written + done)).bytesWritten
    } catch (err) {
      // a part written would be read as a torn tail: cut it, so the next write starts where this one did
      await fh.truncate(this.written).catch(() => undefined)
      throw storageError(err, this.opts.dir)
    }
    this.pending.splice(0, count)
    this.pendingBytes -= buf.length
    this.written += buf.length
  }

  /** Writes the postings as a snapshot of the log as it is (on disk first), if the log grew since the last. */
  private async saveSnapshot (): Promise<void> {
    const fh = this.fh
    if (fh === null || !this.loaded || this.pending.length > 0 || this.written === this.snapshotAt) return
    try {
      await fh.sync()
      const { writeStateFile } = await import('../disk/state-file')
      await writeStateFile(this.snapshotFile, encodeSnapshot(this.nonce, this.written, this.postings.encode()))
      this.snapshotAt = this.written
    } catch (err) {
      // the log is whole: the next start reads more of it, that is all
      this.opts.log.warn(`could not write the search snapshot: ${storageError(err, this.opts.dir).message}`)
    }
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
    const docs = this.postings.query(q, limit + 1, after)
    const page = docs.slice(0, limit)
    const hits: SearchHit[] = []
    for (const d of page) {
      const r = await this.readRecord(this.postings.doc(d.doc).at)
      if (r === null || r.t !== 'd') throw new Error(`the search index lost the record of a hit (document ${d.doc}); restart to rebuild it`)
      const s = snippet(r.x, q)
      hits.push({ conversation: r.c, entry: r.id, title: this.opts.source.summary(r.c)?.title ?? '', ts: r.ts, snippet: s.text, match: s.match })
    }
    const last = page.at(-1)
    return { hits, ...(docs.length > limit && last !== undefined ? { cursor: `${last.ts}:${last.doc}` } : {}) }
  }

  /** Documents held and the estimated bytes of memory they take (benchmarks). */
  get size (): { docs: number; memoryBytes: number; fileBytes: number } {
    return { docs: this.postings.docCount, memoryBytes: this.postings.bytes, fileBytes: this.written + this.pendingBytes }
  }

  /** Stops following the history and writes what is pending. */
  async close (): Promise<void> {
    this.closing = true
    this.unsubscribe?.()
    if (this.flushTimer !== null) clearTimeout(this.flushTimer)
    await this.opened?.catch(() => undefined)
    this.drain()
    try {
      await this.flush()
      await this.saveSnapshot()
    } finally {
      await this.fh?.close()
      this.fh = null
    }
  }
}

function parseCursor (cursor: string): DocHit {
  const m = /^(-?\d+(?:\.\d+)?):(\d+)$/.exec(cursor)
  if (m === null) throw new Error(`not a search cursor: ${cursor.slice(0, 40)}`)
  return { ts: Number(m[1]), doc: Number(m[2]) }
}
