// The listing of an index snapshot: what `arbor ls` prints of every conversation, as columns, so
// a cold listing of 10,000 conversations builds no object per conversation (JSON.parse of the
// summaries and the garbage collection of what it builds were most of its time). Pure.
//
// The record's body (index-codec.ts writes it first in a snapshot; a reader of format 2 that
// does not know its tag skips it): [uint32 n], then n ids (32 raw bytes each), n updatedAt
// (float64 LE), n sizes (uint32 LE), n head counts (uint32 LE), n title ends (uint32 LE, in
// UTF-16 code units, cumulative), [uint32 bytes] and the titles as one UTF-8 text. Rows are
// most recent first (sortSummaries' order). A newer writer may add columns after the titles.
import { isHex32 } from '../../../shared/entry/hex32'
import type { ConversationSummary } from './index-state'

/** The rows a listing prints, most recent first, read by position (no object per row). */
export interface ListRows {
  readonly length: number
  id: (i: number) => string
  updatedAt: (i: number) => number
  size: (i: number) => number
  branches: (i: number) => number
  title: (i: number) => string
}

const MAX_U32 = 0xffffffff

/** Most recently updated first; ties by id, so every listing agrees. */
export function sortSummaries (list: ConversationSummary[]): ConversationSummary[] {
  return list.sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : 1))
}

/** Whether every summary fits the listing's columns (hex ids, counts below 2^32); else a snapshot has none. */
export function canList (list: Iterable<ConversationSummary>): boolean {
  for (const c of list) {
    if (!isHex32(c.id) || !(c.size >= 0 && c.size <= MAX_U32) || c.heads.length > MAX_U32 || !Number.isFinite(c.updatedAt)) return false
  }
  return true
}

/** The listing record's body of summaries already in sortSummaries' order; null when they do not fit (canList). */
export function encodeListing (sorted: ConversationSummary[]): Buffer | null {
  if (!canList(sorted)) return null
  const n = sorted.length
  const titles = Buffer.from(sorted.map(c => c.title).join(''), 'utf8')
  const buf = Buffer.alloc(4 + n * (32 + 8 + 4 + 4 + 4) + 4 + titles.length)
  let p = buf.writeUInt32LE(n, 0)
  for (const c of sorted) p += buf.write(c.id, p, 32, 'hex')
  for (const c of sorted) p = buf.writeDoubleLE(c.updatedAt, p)
  for (const c of sorted) p = buf.writeUInt32LE(c.size, p)
  for (const c of sorted) p = buf.writeUInt32LE(c.heads.length, p)
  let end = 0
  for (const c of sorted) { end += c.title.length; p = buf.writeUInt32LE(end, p) }
  p = buf.writeUInt32LE(titles.length, p)
  titles.copy(buf, p)
  return buf
}

/** A column of `n` fixed-width numbers, copied out of `buf` (a typed array needs an aligned offset). */
function column<T extends Float64Array | Uint32Array> (Kind: { new (n: number): T; BYTES_PER_ELEMENT: number }, buf: Buffer, at: number, n: number): T {
  const out = new Kind(n)
  new Uint8Array(out.buffer).set(buf.subarray(at, at + n * Kind.BYTES_PER_ELEMENT))
  return out
}

/** The columns of a listing record (as a snapshot holds them). */
export class IndexListing implements ListRows {
  readonly length: number
  private readonly ids: string
  private readonly updated: Float64Array
  private readonly sizes: Uint32Array
  private readonly heads: Uint32Array
  private readonly titleEnds: Uint32Array
  private readonly titles: string

  /** Throws when the body is cut short or its columns disagree (the snapshot is then unreadable). */
  constructor (buf: Buffer, start: number, end: number) {
    if (end - start < 4) throw new Error('index listing is cut short')
    const n = buf.readUInt32LE(start)
    let p = start + 4
    const fixed = n * (32 + 8 + 4 + 4 + 4)
    if (end - p < fixed + 4) throw new Error('index listing is cut short')
    this.length = n
    this.ids = buf.toString('hex', p, p + n * 32)
    p += n * 32
    this.updated = column(Float64Array, buf, p, n)
    p += n * 8
    this.sizes = column(Uint32Array, buf, p, n)
    p += n * 4
    this.heads = column(Uint32Array, buf, p, n)
    p += n * 4
    this.titleEnds = column(Uint32Array, buf, p, n)
    p += n * 4
    const bytes = buf.readUInt32LE(p)
    p += 4
    if (end - p < bytes) throw new Error('index listing is cut short')
    const ends = this.titleEnds
    // as many bytes as UTF-16 units: every title is ASCII, and latin1 reads it as a plain copy
    this.titles = buf.toString(n > 0 && ends[n - 1] === bytes ? 'latin1' : 'utf8', p, p + bytes)
    // Checked whole here, so that reading a row cannot go wrong: ends that rise to the titles'
    // length, rows most recent first (a merge with a journal's changes relies on the order).
    let last = 0
    for (let i = 0; i < n; i++) {
      const e = ends[i] as number
      if (e < last) throw new Error('index listing titles are out of order')
      last = e
      const before = this.updated[i - 1] as number
      const at = this.updated[i] as number
      // the ids are compared only on a tie (rare): a slice per row costs
      if (i > 0 && (before < at || (before === at && !(this.id(i - 1) < this.id(i))))) throw new Error('index listing is not most recent first')
    }
    if (last !== this.titles.length) throw new Error('index listing titles do not add up')
  }

  id (i: number): string { return this.ids.slice(i * 64, i * 64 + 64) }
  updatedAt (i: number): number { return this.updated[i] as number }
  size (i: number): number { return this.sizes[i] as number }
  branches (i: number): number { return this.heads[i] as number }
  title (i: number): string { return this.titles.slice(i === 0 ? 0 : this.titleEnds[i - 1], this.titleEnds[i]) }
}

/** sortSummaries' order: a row at (updatedAt a, id x) may come before one at (b, y). */
function inOrder (a: number, x: string, b: number, y: string): boolean {
  return a > b || (a === b && x < y)
}

/** Summaries in sortSummaries' order as rows. */
export function summaryRows (sorted: ConversationSummary[]): ListRows {
  const at = (i: number): ConversationSummary => sorted[i] as ConversationSummary
  return {
    length: sorted.length,
    id: i => at(i).id,
    updatedAt: i => at(i).updatedAt,
    size: i => at(i).size,
    branches: i => at(i).heads.length,
    title: i => at(i).title
  }
}

/**
 * A snapshot's rows with the changes of its journal: the rows of `touched` conversations are
 * left out, and `changed` (the touched ones that still exist, in sortSummaries' order) merged in.
 */
export function mergeRows (base: ListRows, touched: ReadonlySet<string>, changed: ConversationSummary[]): ListRows {
  if (touched.size === 0) return base
  const extra = summaryRows(changed)
  // order[k] >= 0: row of the snapshot; < 0: -1 - index in `changed`
  const order = new Int32Array(base.length + changed.length)
  let n = 0
  let j = 0
  for (let i = 0; i < base.length; i++) {
    const id = base.id(i)
    if (touched.has(id)) continue
    while (j < changed.length && inOrder(extra.updatedAt(j), extra.id(j), base.updatedAt(i), id)) order[n++] = -1 - j++
    order[n++] = i
  }
  while (j < changed.length) order[n++] = -1 - j++
  const pick = <T>(fromBase: (i: number) => T, fromExtra: (i: number) => T) => (k: number): T => {
    const i = order[k] as number
    return i >= 0 ? fromBase(i) : fromExtra(-1 - i)
  }
  return {
    length: n,
    id: pick(i => base.id(i), i => extra.id(i)),
    updatedAt: pick(i => base.updatedAt(i), i => extra.updatedAt(i)),
    size: pick(i => base.size(i), i => extra.size(i)),
    branches: pick(i => base.branches(i), i => extra.branches(i)),
    title: pick(i => base.title(i), i => extra.title(i))
  }
}
