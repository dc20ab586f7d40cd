// The in-memory part of the full-text index (pure): per term the documents holding it, as
// delta-encoded varints (about a byte a posting), and per document its conversation, time and
// where its text is in the search log. No text is held: a hit's snippet is read from the log.
import type { SearchQuery } from './search-text'

/** One term's documents, ascending, as varint gaps. */
interface Posting {
  bytes: Uint8Array
  len: number
  last: number
}

/** A growable typed array's next capacity. */
function grown (n: number): number { return Math.max(16, n * 2) }

export interface DocHit { doc: number; ts: number }

export class SearchPostings {
  private readonly postings = new Map<string, Posting>()
  /** terms by their first two characters, for prefix lookups without scanning every term */
  private readonly byStart = new Map<string, string[]>()
  private docTs = new Float64Array(1024)
  private docConv = new Uint32Array(1024)
  private docAt = new Float64Array(1024)
  private dropped = new Uint8Array(1024)
  private docs = 0
  private readonly convIds: string[] = []
  private readonly convNumbers = new Map<string, number>()
  /** per conversation number, the joined entries indexed (with text or without) */
  private seenCounts = new Uint32Array(64)
  /** postings held, for the estimate of memory */
  private postingBytes = 0

  get docCount (): number { return this.docs }

  private conv (id: string): number {
    let n = this.convNumbers.get(id)
    if (n === undefined) {
      n = this.convIds.length
      this.convIds.push(id)
      this.convNumbers.set(id, n)
      if (n >= this.seenCounts.length) { const s = new Uint32Array(grown(n)); s.set(this.seenCounts); this.seenCounts = s }
    }
    return n
  }

  /** Joined entries of a conversation counted so far (what the index should compare to the DAG). */
  seen (conversation: string): number {
    const n = this.convNumbers.get(conversation)
    return n === undefined ? 0 : this.seenCounts[n] as number
  }

  conversations (): string[] { return this.convIds.filter(id => this.seen(id) > 0) }

  /** Counts joined entries that have no searchable text. */
  count (conversation: string, n: number): void {
    const c = this.conv(conversation)
    this.seenCounts[c] = (this.seenCounts[c] as number) + n
  }

  /** Adds a document (one entry with text) and its terms; `at` is where the log holds it. Returns its number. */
  add (conversation: string, ts: number, at: number, docTerms: readonly string[]): number {
    const c = this.conv(conversation)
    this.seenCounts[c] = (this.seenCounts[c] as number) + 1
    const d = this.docs++
    if (d >= this.docTs.length) {
      const n = grown(d)
      const ts2 = new Float64Array(n); ts2.set(this.docTs); this.docTs = ts2
      const c2 = new Uint32Array(n); c2.set(this.docConv); this.docConv = c2
      const a2 = new Float64Array(n); a2.set(this.docAt); this.docAt = a2
      const d2 = new Uint8Array(n); d2.set(this.dropped); this.dropped = d2
    }
    this.docTs[d] = ts
    this.docConv[d] = c
    this.docAt[d] = at
    for (const t of docTerms) this.post(t, d)
    return d
  }

  private post (term: string, doc: number): void {
    let p = this.postings.get(term)
    if (p === undefined) {
      p = { bytes: new Uint8Array(4), len: 0, last: -1 }
      this.postings.set(term, p)
      const start = term.slice(0, 2)
      const list = this.byStart.get(start)
      if (list === undefined) this.byStart.set(start, [term])
      else list.push(term)
      this.postingBytes += 4
    }
    if (p.last === doc) return
    let gap = doc - p.last
    p.last = doc
    if (p.len + 5 > p.bytes.length) {
      const b = new Uint8Array(grown(p.bytes.length))
      b.set(p.bytes.subarray(0, p.len))
      this.postingBytes += b.length - p.bytes.length
      p.bytes = b
    }
    while (gap >= 0x80) { p.bytes[p.len++] = (gap & 0x7f) | 0x80; gap = Math.floor(gap / 0x80) }
    p.bytes[p.len++] = gap
  }

  /** Forgets every document of a conversation (it is to be indexed again whole). */
  drop (conversation: string): void {
    const c = this.convNumbers.get(conversation)
    if (c === undefined) return
    for (let d = 0; d < this.docs; d++) if (this.docConv[d] === c) this.dropped[d] = 1
    this.seenCounts[c] = 0
  }

  /** A document's conversation and where the log holds its text. */
  doc (d: number): { conversation: string; at: number; ts: number } {
    return { conversation: this.convIds[this.docConv[d] as number] as string, at: this.docAt[d] as number, ts: this.docTs[d] as number }
  }

  private decode (p: Posting, into: (doc: number) => void): void {
    let doc = -1
    let gap = 0
    let shift = 1
    for (let i = 0; i < p.len; i++) {
      const b = p.bytes[i] as number
      gap += (b & 0x7f) * shift
      if (b < 0x80) { doc += gap; into(doc); gap = 0; shift = 1 } else shift *= 0x80
    }
  }

  /**
   * The documents matching a query, newest first (by entry time, then by number), below a
   * cursor (the last hit of the previous page), at most `limit`.
   */
  query (q: SearchQuery, limit: number, after?: DocHit): DocHit[] {
    if (q.prefix === null || limit <= 0) return []
    const exact: Posting[] = []
    for (const w of q.words) {
      const p = this.postings.get(w)
      if (p === undefined) return []
      exact.push(p)
    }
    const prefix = q.prefix
    const starts = prefix.length >= 2 ? [prefix.slice(0, 2)] : [...this.byStart.keys()].filter(s => s.startsWith(prefix))
    const prefixed: Posting[] = []
    for (const s of starts) for (const t of this.byStart.get(s) ?? []) if (t.startsWith(prefix)) prefixed.push(this.postings.get(t) as Posting)
    if (prefixed.length === 0) return []
    // how many of the conditions (each exact word, then "some prefixed term") a document meets
    const met = new Uint8Array(this.docs)
    const needed = exact.length + 1
    for (const p of exact) this.decode(p, d => { met[d] = (met[d] as number) + 1 })
    const full = exact.length
    for (const p of prefixed) this.decode(p, d => { if (met[d] === full) met[d] = needed })
    // the newest `limit`, kept sorted oldest first so the oldest is the one pushed out
    const top: DocHit[] = []
    const newer = (a: DocHit, b: DocHit): boolean => a.ts > b.ts || (a.ts === b.ts && a.doc > b.doc)
    for (let d = 0; d < this.docs; d++) {
      if (met[d] !== needed || this.dropped[d] === 1) continue
      const h = { doc: d, ts: this.docTs[d] as number }
      if (after !== undefined && !newer(after, h)) continue
      if (top.length === limit && !newer(h, top[0] as DocHit)) continue
      let i = top.length
      while (i > 0 && newer(top[i - 1] as DocHit, h)) i--
      top.splice(i, 0, h)
      if (top.length > limit) top.shift()
    }
    return top.reverse()
  }

  /**
   * Everything, as bytes (search.snap): a JSON head naming the conversations and terms, then the
   * document table and the postings as they are in memory.
   */
  encode (): Buffer {
    const terms = [...this.postings.keys()]
    const ps = terms.map(t => this.postings.get(t) as Posting)
    const head = Buffer.from(JSON.stringify({ docs: this.docs, convs: this.convIds, terms, lens: ps.map(p => p.len), lasts: ps.map(p => p.last) }))
    const n = this.docs
    const parts: Uint8Array[] = [u32(head.length), head, bytesOf(this.docTs, n * 8), bytesOf(this.docAt, n * 8), bytesOf(this.docConv, n * 4), this.dropped.subarray(0, n), bytesOf(this.seenCounts, this.convIds.length * 4)]
    for (const p of ps) parts.push(p.bytes.subarray(0, p.len))
    return Buffer.concat(parts)
  }

  /** What encode wrote; throws on bytes that are not (the caller then reads the log instead). */
  static decode (buf: Buffer): SearchPostings {
    const headLen = buf.readUInt32LE(0)
    const head = JSON.parse(buf.subarray(4, 4 + headLen).toString('utf8')) as { docs: number; convs: string[]; terms: string[]; lens: number[]; lasts: number[] }
    const s = new SearchPostings()
    const n = head.docs
    let at = 4 + headLen
    const take = (len: number): Buffer => {
      if (at + len > buf.length) throw new Error('search snapshot is cut short')
      const b = buf.subarray(at, at + len)
      at += len
      return b
    }
    const cap = Math.max(1024, n)
    s.docTs = new Float64Array(cap); fill(s.docTs, take(n * 8))
    s.docAt = new Float64Array(cap); fill(s.docAt, take(n * 8))
    s.docConv = new Uint32Array(cap); fill(s.docConv, take(n * 4))
    s.dropped = new Uint8Array(cap); s.dropped.set(take(n))
    s.docs = n
    for (const id of head.convs) s.conv(id)
    fill(s.seenCounts, take(head.convs.length * 4))
    for (const [i, term] of head.terms.entries()) {
      const len = head.lens[i] as number
      const bytes = new Uint8Array(Math.max(4, len))
      bytes.set(take(len))
      s.postings.set(term, { bytes, len, last: head.lasts[i] as number })
      const start = term.slice(0, 2)
      const list = s.byStart.get(start)
      if (list === undefined) s.byStart.set(start, [term])
      else list.push(term)
      s.postingBytes += bytes.length
    }
    if (at !== buf.length) throw new Error('search snapshot has bytes past its end')
    return s
  }

  /** Estimated bytes held: the document table and the postings. */
  get bytes (): number {
    return this.docTs.length * 21 + this.postingBytes + this.postings.size * 80
  }
}

function u32 (n: number): Buffer { const b = Buffer.alloc(4); b.writeUInt32LE(n); return b }
function bytesOf (a: Float64Array | Uint32Array, len: number): Uint8Array { return new Uint8Array(a.buffer, a.byteOffset, len) }
/** Copies bytes into a typed array (the bytes need not be aligned). */
function fill (a: Float64Array | Uint32Array, b: Buffer): void { new Uint8Array(a.buffer, a.byteOffset, b.length).set(b) }
