// The binary encoding of the history index (history-index.ts does the I/O): a snapshot of every
// record, and a journal of the records each save changed. Pure: bytes in, state out.
//
// A file is MAGIC, a format version byte, then frames. A frame is [uint32 length][uint32 crc32]
// [payload]: a torn or damaged frame is recognised, and it and everything after it are ignored.
// A file's first frame names its generation and device; in a snapshot it also holds every record.
// Every later frame (journal) is one save: the header (clean, manifestIndexed) and the records
// that changed, applied in order over the snapshot of the same generation.
// A record is [tag][uint32 length][body]: a reader skips tags it does not know and bytes past the
// fields it knows, so a record can gain fields at its end without a new format version.
// In a frame every record of conversations comes before the first of feeds (a lister stops
// there); a snapshot starts with the listing (index-listing.ts), then the summaries as JSON.
import { crc32 } from 'node:zlib'
import { isHex32 } from '../../../shared/entry/hex32'
import type { ConversationSummary, FeedRecord, IndexState } from './index-state'
import { IndexListing, canList, encodeListing, mergeRows, sortSummaries, summaryRows, type ListRows } from './index-listing'

export const MAGIC = Buffer.from('ARBI')
/** Bumped only when a reader of this version could not read the new layout (then: a rebuild). */
export const FORMAT_VERSION = 2
const PREFIX = MAGIC.length + 1
const FRAME_HEAD = 8

const TAG_CONVERSATION = 1
const TAG_FEED = 2
const TAG_CONVERSATION_GONE = 3
const TAG_FEED_GONE = 4
/**
 * Every summary of a snapshot as one JSON object by id: V8's JSON.parse builds it in about half
 * the time this file's decoder takes cold (measured at 10,000 conversations), and `arbor ls`
 * reads nothing else. Journals write summaries as records.
 */
const TAG_SUMMARIES_JSON = 5
/** What `arbor ls` prints, as columns (index-listing.ts), first in a snapshot: a lister reads it instead of the JSON. */
const TAG_LISTING = 6

const FLAG_CWD = 1
const FLAG_REVIVAL = 2
const FLAG_REVIVAL_ON = 4
const FLAG_OWN = 1
const FLAG_CLEAN = 1

/**
 * Writes into a growing buffer. Integers are varints as compact-encoding's uint writes them
 * (≤ 0xfc in a byte, else 0xfd/0xfe/0xff and 2/4/8 bytes little-endian); written by hand:
 * a snapshot holds ~100,000 fields and this runs once per save and per start.
 */
class Writer {
  buf = Buffer.allocUnsafe(64 * 1024)
  p = 0
  /** the ids a frame has written so far that later fields may name by number (shared) */
  refs = new Map<string, number>()

  private room (n: number): void {
    if (this.p + n <= this.buf.length) return
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.p + n))
    this.buf.copy(next, 0, 0, this.p)
    this.buf = next
  }

  uint (n: number): void {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`index field is not a count: ${n}`) // a bug here, never data
    this.room(9)
    const b = this.buf
    if (n <= 0xfc) { b[this.p++] = n; return }
    if (n <= 0xffff) { b[this.p++] = 0xfd; b.writeUInt16LE(n, this.p); this.p += 2; return }
    if (n <= 0xffffffff) { b[this.p++] = 0xfe; b.writeUInt32LE(n, this.p); this.p += 4; return }
    b[this.p++] = 0xff
    b.writeUInt32LE(n % 0x100000000, this.p)
    b.writeUInt32LE(Math.floor(n / 0x100000000), this.p + 4)
    this.p += 8
  }

  string (v: string): void {
    const len = Buffer.byteLength(v)
    this.uint(len)
    this.room(len)
    this.p += this.buf.write(v, this.p, len, 'utf8')
  }

  /** An id: 32 raw bytes when it is lowercase 64-hex (all of them in practice), else its text. */
  id (v: string): void {
    this.room(33)
    if (isHex32(v)) {
      this.buf[this.p++] = 0
      this.p += this.buf.write(v, this.p, 32, 'hex')
    } else {
      this.buf[this.p++] = 1
      this.string(v)
    }
  }

  /** A summary's id, which feeds of the frame may name by number afterwards. */
  ownId (v: string): void {
    this.id(v)
    this.refs.set(v, this.refs.size)
  }

  /** A feed's conversation or device: the number of the same id written before in the frame, else the id. */
  sharedId (v: string): void {
    const n = this.refs.get(v)
    if (n === undefined) { this.ownId(v); return }
    this.room(1)
    this.buf[this.p++] = 2
    this.uint(n)
  }

  /** Reserves a uint32 to fill in later (a length not known yet); returns where. */
  reserve (n: number): number {
    this.room(n)
    const at = this.p
    this.p += n
    return at
  }

  bytes (v: Buffer): void {
    this.room(v.length)
    this.p += v.copy(this.buf, this.p)
  }

  done (): Buffer {
    return this.buf.subarray(0, this.p)
  }
}

/** Buffer's own slicers: toString's argument handling costs more than the copy for short strings. */
interface Slicers { hexSlice (start: number, end: number): string; utf8Slice (start: number, end: number): string }

class Reader {
  private readonly slice: Slicers
  constructor (readonly buf: Buffer, public p: number, public end: number) {
    this.slice = buf as unknown as Slicers
  }

  private need (n: number): void {
    if (this.end - this.p < n) throw new Error('index record is cut short')
  }

  uint (): number {
    this.need(1)
    const b = this.buf
    const a = b[this.p++] as number
    if (a <= 0xfc) return a
    let v: number
    if (a === 0xfd) { this.need(2); v = b.readUInt16LE(this.p); this.p += 2 } else if (a === 0xfe) { this.need(4); v = b.readUInt32LE(this.p); this.p += 4 } else { this.need(8); v = b.readUInt32LE(this.p) + b.readUInt32LE(this.p + 4) * 0x100000000; this.p += 8 }
    return v
  }

  string (): string {
    const len = this.uint()
    this.need(len)
    const v = this.slice.utf8Slice(this.p, this.p + len)
    this.p += len
    return v
  }

  /** An id and, as Writer.ownId/sharedId wrote it, the frame's table of ids named by number. */
  id (table?: string[]): string {
    this.need(1)
    const kind = this.buf[this.p++]
    if (kind === 2 && table !== undefined) {
      const v = table[this.uint()]
      if (v === undefined) throw new Error('bad id reference in the index')
      return v
    }
    const v = this.literalId(kind)
    table?.push(v)
    return v
  }

  private literalId (kind: number | undefined): string {
    if (kind === 1) return this.string()
    if (kind !== 0) throw new Error('bad id in the index')
    this.need(32)
    const v = this.slice.hexSlice(this.p, this.p + 32)
    this.p += 32
    return v
  }
}

/** Shares one string per distinct id (a feed's conversation and device repeat): memory, at 10,000s of feeds. */
function interner (): (v: string) => string {
  const seen = new Map<string, string>()
  return v => {
    const had = seen.get(v)
    if (had !== undefined) return had
    seen.set(v, v)
    return v
  }
}

function writeSummary (w: Writer, v: ConversationSummary): void {
  w.ownId(v.id)
  w.string(v.title)
  w.uint(v.createdAt)
  w.uint(v.updatedAt)
  w.uint(v.size)
  w.uint(v.waiting)
  w.uint((v.cwd !== undefined ? FLAG_CWD : 0) | (v.autoRevival !== undefined ? FLAG_REVIVAL : 0) | (v.autoRevival === true ? FLAG_REVIVAL_ON : 0))
  if (v.cwd !== undefined) w.string(v.cwd)
  w.uint(v.heads.length)
  for (const h of v.heads) w.id(h)
}

function readSummary (r: Reader, table: string[]): ConversationSummary {
  const out: ConversationSummary = { id: r.id(table), title: r.string(), createdAt: r.uint(), updatedAt: r.uint(), heads: [], size: r.uint(), waiting: r.uint() }
  const flags = r.uint()
  if ((flags & FLAG_CWD) !== 0) out.cwd = r.string()
  if ((flags & FLAG_REVIVAL) !== 0) out.autoRevival = (flags & FLAG_REVIVAL_ON) !== 0
  const n = r.uint()
  for (let i = 0; i < n; i++) out.heads.push(r.id())
  return out
}

function writeFeed (w: Writer, v: FeedRecord): void {
  w.id(v.key)
  w.sharedId(v.conversation)
  w.sharedId(v.device)
  w.uint(v.own ? FLAG_OWN : 0)
  w.uint(v.indexed)
}

function readFeed (r: Reader, table: string[]): FeedRecord {
  const key = r.id()
  const conversation = r.id(table)
  const device = r.id(table)
  const own = (r.uint() & FLAG_OWN) !== 0
  return { key, conversation, device, own, indexed: r.uint() }
}

/** What one save changed: records to write as they are now, or as gone if no longer in the state. */
export interface IndexChanges {
  conversations: Iterable<string>
  feeds: Iterable<string>
}

/** One record: [tag][uint32 length][body]; the length lets a reader skip what it does not need or know. */
function writeRecord (w: Writer, tag: number, body: () => void): void {
  w.uint(tag)
  const at = w.reserve(4)
  body()
  w.buf.writeUInt32LE(w.p - at - 4, at)
}

/** A frame around what `fill` writes: its length and checksum first. */
function writeFrame (w: Writer, fill: () => void): void {
  const at = w.reserve(FRAME_HEAD)
  fill()
  const payload = w.buf.subarray(at + FRAME_HEAD, w.p)
  w.buf.writeUInt32LE(payload.length, at)
  w.buf.writeUInt32LE(crc32(payload), at + 4)
}

function writeSave (w: Writer, state: IndexState, changes: IndexChanges, summariesAsJson = false, withListing = true): void {
  w.refs.clear()
  w.uint(state.clean ? FLAG_CLEAN : 0)
  w.uint(state.manifestIndexed)
  const count = w.reserve(4)
  let n = 0
  if (summariesAsJson) {
    // Most recent first, the order `arbor ls` prints: a reader's sort of what it parses is then
    // one pass (an already sorted array), and JSON.parse keeps this order (the keys are no indices).
    const keys = Object.keys(state.conversations).sort((a, b) => (state.conversations[b] as ConversationSummary).updatedAt - (state.conversations[a] as ConversationSummary).updatedAt || (a < b ? -1 : 1))
    const ordered: Record<string, ConversationSummary> = {}
    for (const k of keys) ordered[k] = state.conversations[k] as ConversationSummary
    const listing = withListing ? encodeListing(Object.values(ordered)) : null
    if (listing !== null) { writeRecord(w, TAG_LISTING, () => w.bytes(listing)); n++ }
    writeRecord(w, TAG_SUMMARIES_JSON, () => w.string(JSON.stringify(ordered)))
    // the feeds below name them by number, in the order a reader's Object.keys sees them
    for (const k of keys) w.refs.set(k, w.refs.size)
    n++
  } else for (const k of changes.conversations) {
    const v = state.conversations[k]
    if (v === undefined) writeRecord(w, TAG_CONVERSATION_GONE, () => w.id(k))
    else writeRecord(w, TAG_CONVERSATION, () => writeSummary(w, v))
    n++
  }
  for (const k of changes.feeds) {
    const v = state.feeds[k]
    if (v === undefined) writeRecord(w, TAG_FEED_GONE, () => w.id(k))
    else writeRecord(w, TAG_FEED, () => writeFeed(w, v))
    n++
  }
  w.buf.writeUInt32LE(n, count)
}

function writePrefix (w: Writer): void {
  const at = w.reserve(PREFIX)
  MAGIC.copy(w.buf, at)
  w.buf[at + MAGIC.length] = FORMAT_VERSION
}

/** A whole snapshot file: every record of `state`, summaries first (`withListing` false: as the version before the listing wrote it, for tests). */
export function encodeSnapshot (state: IndexState, generation: number, withListing = true): Buffer {
  const w = new Writer()
  writePrefix(w)
  writeFrame(w, () => {
    w.uint(generation)
    w.id(state.device)
    writeSave(w, state, { conversations: Object.keys(state.conversations), feeds: Object.keys(state.feeds) }, true, withListing)
  })
  return w.done()
}

/** The start of a journal file of a generation (its saves are appended after it). */
export function encodeJournalStart (device: string, generation: number): Buffer {
  const w = new Writer()
  writePrefix(w)
  writeFrame(w, () => { w.uint(generation); w.id(device) })
  return w.done()
}

/** One save appended to a journal: the header as it is now and the changed records. */
export function encodeSave (state: IndexState, changes: IndexChanges): Buffer {
  const w = new Writer()
  writeFrame(w, () => writeSave(w, state, changes))
  return w.done()
}

export class IndexFormatError extends Error {
  constructor (message: string, readonly newer = false) {
    super(message)
    this.name = 'IndexFormatError'
  }
}

/** A file's frames that are whole and intact, and whether anything after them was not. */
export function readFrames (buf: Buffer): { frames: Buffer[]; end: number; damaged: boolean } {
  if (buf.length < PREFIX || !buf.subarray(0, MAGIC.length).equals(MAGIC)) throw new IndexFormatError('not an index file')
  const version = buf[MAGIC.length] as number
  if (version > FORMAT_VERSION) throw new IndexFormatError(`index format ${version} is newer than this version's ${FORMAT_VERSION}`, true)
  if (version !== FORMAT_VERSION) throw new IndexFormatError(`index format ${version} is unknown`)
  const frames: Buffer[] = []
  let at = PREFIX
  while (buf.length - at >= FRAME_HEAD) {
    const len = buf.readUInt32LE(at)
    if (buf.length - at - FRAME_HEAD < len) break
    const payload = buf.subarray(at + FRAME_HEAD, at + FRAME_HEAD + len)
    if (crc32(payload) !== buf.readUInt32LE(at + 4)) break
    frames.push(payload)
    at += FRAME_HEAD + len
  }
  return { frames, end: at, damaged: at < buf.length }
}

/** A file's first frame: which generation and device it is of, and a reader at what follows. */
export function decodeStart (payload: Buffer): { reader: Reader; generation: number; device: string } {
  const reader = new Reader(payload, 0, payload.length)
  return { reader, generation: reader.uint(), device: reader.id() }
}

/**
 * What a lister gathers besides the state (readListing): the snapshot's listing record, and the
 * conversations a journal changed or removed after it (their summaries are in the state).
 */
export interface ListingRead {
  /** false: only note whether there is a listing record (the summaries are read) */
  decode: boolean
  present: boolean
  rows?: IndexListing
  touched: Set<string>
}

/** What a lister passes decodeIndex to gather the listing instead of the summaries. */
export function listingRead (): ListingRead {
  return { decode: true, present: false, touched: new Set() }
}

/**
 * Applies one save (read from `r`) to `state`. With `summariesOnly`, feed records are skipped
 * unread (a listing needs the summaries alone). With `listing`, a snapshot's listing record is
 * read instead of its summaries. Throws on a malformed payload.
 */
export function applySave (r: Reader, state: IndexState, summariesOnly = false, listing?: ListingRead): void {
  state.clean = (r.uint() & FLAG_CLEAN) !== 0
  state.manifestIndexed = r.uint()
  if (r.end - r.p < 4) throw new Error('index save is cut short')
  const n = r.buf.readUInt32LE(r.p)
  r.p += 4
  const body = new Reader(r.buf, 0, 0)
  // Summaries come before feeds in a frame and name no id by number: a lister stops at the first
  // feed (a snapshot holds tens of thousands).
  const table: string[] = []
  for (let i = 0; i < n; i++) {
    const tag = r.uint()
    if (summariesOnly && (tag === TAG_FEED || tag === TAG_FEED_GONE)) break
    if (r.end - r.p < 4) throw new Error('index record is cut short')
    const end = r.p + 4 + r.buf.readUInt32LE(r.p)
    if (end > r.end) throw new Error('index record runs past its frame')
    body.p = r.p + 4
    body.end = end
    if (tag === TAG_CONVERSATION) {
      const v = readSummary(body, table)
      state.conversations[v.id] = v
      listing?.touched.add(v.id)
    } else if (tag === TAG_FEED) {
      const v = readFeed(body, table)
      state.feeds[v.key] = v
    } else if (tag === TAG_CONVERSATION_GONE) {
      const id = body.id()
      delete state.conversations[id]
      listing?.touched.add(id)
    } else if (tag === TAG_FEED_GONE) {
      delete state.feeds[body.id()]
    } else if (tag === TAG_LISTING) {
      if (listing !== undefined) {
        listing.present = true
        if (listing.decode) listing.rows = new IndexListing(body.buf, body.p, body.end)
      }
    } else if (tag === TAG_SUMMARIES_JSON) {
      // the same summaries as the listing before it: a lister has what it needs (feeds are skipped)
      if (listing?.rows !== undefined) { r.p = end; continue }
      const all = JSON.parse(body.string()) as Record<string, ConversationSummary>
      if (typeof all !== 'object' || all === null) throw new Error('index summaries are not an object')
      if (Object.keys(state.conversations).length === 0) state.conversations = all
      else Object.assign(state.conversations, all)
      for (const k of Object.keys(all)) table.push((all[k] as ConversationSummary).id)
    }
    r.p = end
  }
}

/** Applies a journal frame (one save) to `state`. */
export function applySaveFrame (payload: Buffer, state: IndexState, summariesOnly = false, listing?: ListingRead): void {
  applySave(new Reader(payload, 0, payload.length), state, summariesOnly, listing)
}

/** An index state from the JSON file of format 1 (index/index.json), or why it is not one. */
export function parseLegacyIndex (text: string): IndexState | string {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    return 'index file is not valid JSON'
  }
  const v = raw as Partial<IndexState> & { v?: unknown }
  if (typeof v !== 'object' || v === null || v.v !== 1 || typeof v.device !== 'string' || typeof v.feeds !== 'object' || v.feeds === null || typeof v.conversations !== 'object' || v.conversations === null) {
    return 'index was written by another version'
  }
  const intern = interner()
  const state: IndexState = { device: v.device, clean: v.clean === true, manifestIndexed: Number(v.manifestIndexed) || 0, feeds: {}, conversations: {} }
  for (const [k, s] of Object.entries(v.conversations)) state.conversations[k] = { ...s, id: intern(s.id) }
  for (const [k, f] of Object.entries(v.feeds)) state.feeds[k] = { ...f, conversation: intern(f.conversation), device: intern(f.device) }
  return state
}

/** What the index files say, decoded (history-index.ts reads them). */
export interface IndexRead {
  state: IndexState | null
  problem?: string
  /** a journal of the snapshot's generation could be read whole: saves can be appended to it */
  appendable: boolean
  generation: number
  snapshotBytes: number
  journalBytes: number
  legacy: boolean
  /** the snapshot lacks the listing record this version writes (it can list them): save to convert */
  outdated: boolean
}

/**
 * The index the files hold (null: absent). The JSON file of format 1 (index.json), where it
 * exists, was written after any binary files (a version that knows only it ran last): it wins.
 * A state that may lag the feeds is returned with clean: false.
 */
export function decodeIndex (files: { legacy: Buffer | null; snapshot: Buffer | null; journal: Buffer | null }, device: string | null, summariesOnly = false, listing?: ListingRead): IndexRead {
  const none = { appendable: false, generation: 0, snapshotBytes: 0, journalBytes: 0, legacy: false, outdated: false }
  const legacy = files.legacy
  if (legacy !== null) {
    const state = parseLegacyIndex(legacy.toString('utf8'))
    if (typeof state === 'string') return { ...none, legacy: true, state: null, problem: state }
    if (device !== null && state.device !== device) return { ...none, legacy: true, state: null, problem: 'index was written by another device' }
    return { ...none, legacy: true, state }
  }
  const snap = files.snapshot
  if (snap === null) return { ...none, state: null }
  let state: IndexState
  let generation: number
  let outdated: boolean
  try {
    const { frames, damaged } = readFrames(snap)
    if (frames.length !== 1 || damaged) return { ...none, state: null, problem: 'index snapshot is damaged' }
    const start = decodeStart(frames[0] as Buffer)
    generation = start.generation
    state = { device: start.device, clean: true, manifestIndexed: 0, feeds: {}, conversations: {} }
    const seen: ListingRead = listing ?? { decode: false, present: false, touched: new Set() }
    applySave(start.reader, state, summariesOnly, seen)
    outdated = listing === undefined && !seen.present && canList(Object.values(state.conversations))
  } catch (err) {
    return { ...none, state: null, problem: err instanceof IndexFormatError && err.newer ? `${err.message} (written by a newer Arbor)` : `index snapshot is unreadable: ${(err as Error).message}` }
  }
  if (device !== null && state.device !== device) return { ...none, state: null, problem: 'index was written by another device' }
  const read: IndexRead = { state, appendable: false, generation, snapshotBytes: snap.length, journalBytes: 0, legacy: false, outdated }
  const journal = files.journal
  if (journal === null) return read // a compaction stopped before its journal was started: the snapshot is whole
  try {
    const { frames, end, damaged } = readFrames(journal)
    if (frames.length === 0) throw new Error('no journal start')
    const start = decodeStart(frames[0] as Buffer)
    // An older generation's journal is already in the snapshot (a compaction stopped before its journal was reset).
    if (start.generation < generation) return read
    if (start.generation > generation || start.device !== state.device) throw new Error('the journal is not of this snapshot')
    for (const f of frames.slice(1)) applySaveFrame(f, state, summariesOnly, listing)
    // A torn tail is what a kill in the middle of a save leaves: the saves before it stand, but
    // the index may lag the feeds, so it is read as not clean (the store reconciles).
    if (damaged) state.clean = false
    return { ...read, appendable: !damaged, journalBytes: end }
  } catch {
    state.clean = false
    return read
  }
}

/**
 * What `arbor ls` prints, from the index files: the snapshot's listing with its journal's
 * changes merged in (or the summaries, from a snapshot without one); null when the files hold
 * no readable index. `clean: false`: the index may lag the feeds (ls then asks the store).
 */
export function decodeListing (files: { legacy: Buffer | null; snapshot: Buffer | null; journal: Buffer | null }): { clean: boolean; rows: ListRows } | null {
  const listing = listingRead()
  const { state } = decodeIndex(files, null, true, listing)
  if (state === null) return null
  const changed = sortSummaries(Object.values(state.conversations))
  return { clean: state.clean, rows: listing.rows === undefined ? summaryRows(changed) : mergeRows(listing.rows, listing.touched, changed) }
}
