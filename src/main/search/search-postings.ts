// The live part of the full-text index (pure): the postings of the newest documents, in memory
// until they are as many as the live budget allows, then written as a segment (search-segment.ts).
// Per term its documents (numbered from 0 in this part) as varint gaps, about a byte a posting;
// per document its time, conversation number and where the log holds its record. No text is
// held: a hit's snippet is read from the log.
import type { TopHits } from './search-hits'
import type { SearchQuery } from './search-text'
import { decodeGaps, putVarint, stepGaps } from './search-varint'

/** One term's documents, ascending, as varint gaps. */
interface Posting {
  bytes: Uint8Array
  len: number
  last: number
}

/** A growable typed array's next capacity. */
function grown (n: number): number { return Math.max(16, n * 2) }

/** A document's row in a segment: ts (f64), at (f64), conversation number (u32). */
export const DOC_ROW = 20

/** A term and its documents as a segment stores them. */
export interface TermPosting { term: string; bytes: Uint8Array; last: number }

/** Whether a document (its conversation number and log offset) was forgotten since it was added. */
export type IsDead = (conv: number, at: number) => boolean

export class SearchPostings {
  private readonly postings = new Map<string, Posting>()
  /** terms by their first two characters, for prefix lookups without scanning every term */
  private readonly byStart = new Map<string, string[]>()
  private docTs = new Float64Array(64)
  private docConv = new Uint32Array(64)
  private docAt = new Float64Array(64)
  /** documents whose records were given up before they were written (search-index's full disk) */
  private killed = new Uint8Array(64)
  private docs = 0
  private postingBytes = 0
  /** the newest entry time held */
  maxTs = -Infinity

  get docCount (): number { return this.docs }

  /** Adds a document (one entry with text) of conversation number `conv`; `at` is where the log holds it. */
  add (conv: number, ts: number, at: number, docTerms: readonly string[]): void {
    const d = this.docs++
    if (d >= this.docTs.length) {
      const n = grown(d)
      const ts2 = new Float64Array(n); ts2.set(this.docTs); this.docTs = ts2
      const c2 = new Uint32Array(n); c2.set(this.docConv); this.docConv = c2
      const a2 = new Float64Array(n); a2.set(this.docAt); this.docAt = a2
      const k2 = new Uint8Array(n); k2.set(this.killed); this.killed = k2
    }
    this.docTs[d] = ts
    this.docConv[d] = conv
    this.docAt[d] = at
    if (ts > this.maxTs) this.maxTs = ts
    for (const t of docTerms) this.post(t, d)
  }

  private post (term: string, doc: number): void {
    let p = this.postings.get(term)
    if (p === undefined) {
      p = { bytes: new Uint8Array(8), len: 0, last: -1 }
      this.postings.set(term, p)
      const start = term.slice(0, 2)
      const list = this.byStart.get(start)
      if (list === undefined) this.byStart.set(start, [term])
      else list.push(term)
      this.postingBytes += 8 + term.length * 2 + 80
    }
    if (p.last === doc) return
    if (p.len + 8 > p.bytes.length) {
      const b = new Uint8Array(grown(p.bytes.length))
      b.set(p.bytes.subarray(0, p.len))
      this.postingBytes += b.length - p.bytes.length
      p.bytes = b
    }
    p.len = putVarint(p.bytes, p.len, doc - p.last)
    p.last = doc
  }

  /** Marks dead every document whose record is at or past `from` of the log (records given up). */
  kill (from: number): void {
    for (let d = 0; d < this.docs; d++) if ((this.docAt[d] as number) >= from) this.killed[d] = 1
  }

  /** Takes `other`'s documents after its own (a segment that could not be written is live again). */
  absorb (other: SearchPostings): void {
    const base = this.docs
    for (let d = 0; d < other.docs; d++) {
      this.add(other.docConv[d] as number, other.docTs[d] as number, other.docAt[d] as number, [])
      this.killed[base + d] = other.killed[d] as number
    }
    for (const [term, p] of other.postings) decodeGaps(p.bytes, 0, p.len, d => { this.post(term, base + d) })
  }

  /** Offers the documents matching a query to `top`, skipping dead ones. */
  match (q: SearchQuery, top: TopHits, isDead: IsDead): void {
    if (q.prefix === null || this.docs === 0 || this.maxTs < top.floor) return
    const exact: Posting[] = []
    for (const w of q.words) {
      const p = this.postings.get(w)
      if (p === undefined) return
      exact.push(p)
    }
    const prefix = q.prefix
    const starts = prefix.length >= 2 ? [prefix.slice(0, 2)] : [...this.byStart.keys()].filter(s => s.startsWith(prefix))
    const prefixed: Posting[] = []
    for (const s of starts) for (const t of this.byStart.get(s) ?? []) if (t.startsWith(prefix)) prefixed.push(this.postings.get(t) as Posting)
    if (prefixed.length === 0) return
    // how many of the conditions (each exact word, then "some prefixed term") a document meets
    const met = new Uint8Array(this.docs)
    const needed = exact.length + 1
    // word k raises the documents that had every word before it
    for (const [k, p] of exact.entries()) stepGaps(p.bytes, 0, p.len, met, k, k + 1)
    const full = exact.length
    for (const p of prefixed) stepGaps(p.bytes, 0, p.len, met, full, needed)
    for (let d = 0; d < this.docs; d++) {
      if (met[d] !== needed || this.killed[d] === 1) continue
      const ts = this.docTs[d] as number
      if (ts < top.floor) continue
      const at = this.docAt[d] as number
      if (top.wants(ts, at) && !isDead(this.docConv[d] as number, at)) top.offer(ts, at)
    }
  }

  /**
   * The live documents as a segment holds them: rows (DOC_ROW bytes each) numbered again in order
   * of time without the dead (so a segment's newest documents are together, and a query reads them
   * first), and each term's postings in the new numbering, terms sorted.
   */
  segmentParts (isDead: IsDead): { rows: Buffer; terms: TermPosting[] } {
    const order: number[] = []
    for (let d = 0; d < this.docs; d++) if (this.killed[d] === 0 && !isDead(this.docConv[d] as number, this.docAt[d] as number)) order.push(d)
    order.sort((a, b) => (this.docTs[a] as number) - (this.docTs[b] as number) || (this.docAt[a] as number) - (this.docAt[b] as number))
    const renumber = new Int32Array(this.docs).fill(-1)
    const rows = Buffer.alloc(order.length * DOC_ROW)
    for (const [r, d] of order.entries()) {
      renumber[d] = r
      rows.writeDoubleLE(this.docTs[d] as number, r * DOC_ROW)
      rows.writeDoubleLE(this.docAt[d] as number, r * DOC_ROW + 8)
      rows.writeUInt32LE(this.docConv[d] as number, r * DOC_ROW + 16)
    }
    const terms: TermPosting[] = []
    let docs = new Int32Array(1024)
    for (const term of [...this.postings.keys()].sort()) {
      const p = this.postings.get(term) as Posting
      let n = 0
      decodeGaps(p.bytes, 0, p.len, d => {
        const r = renumber[d] as number
        if (r < 0) return
        if (n === docs.length) { const g = new Int32Array(docs.length * 2); g.set(docs); docs = g }
        docs[n++] = r
      })
      if (n === 0) continue
      const sorted = docs.subarray(0, n).sort()
      // a varint of a number below 2^35 takes at most 5 bytes
      const out = new Uint8Array(n * 5)
      let len = 0
      let last = -1
      for (const r of sorted) { len = putVarint(out, len, r - last); last = r }
      terms.push({ term, bytes: out.slice(0, len), last })
    }
    return { rows, terms }
  }

  /** Estimated bytes held: the document table and the postings. */
  get bytes (): number {
    return this.docTs.length * 21 + this.postingBytes
  }
}
