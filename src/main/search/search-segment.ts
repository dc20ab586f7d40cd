// An immutable segment of the full-text index on disk: the postings of a run of documents, read
// with positional reads (the page cache is the cache). Layout: MAGIC; the postings (varint gaps,
// in term order); the term dictionary in blocks of about BLOCK_BYTES (per term: its UTF-8 length
// and bytes, its postings' length, its last document); the document rows (DOC_ROW bytes: ts, log
// offset, conversation number); a JSON footer (counts, where each part starts, the first term of
// each block and where it and its postings start); the footer's length; a crc32 of all before it.
// In memory per segment: the footer (its block index is about 1/100 of the dictionary).
import fsp from 'node:fs/promises'
import { crc32 } from 'node:zlib'
import { DOC_ROW, type IsDead, type TermPosting } from './search-postings'
import type { TopHits } from './search-hits'
import type { SearchQuery } from './search-text'
import { getVarint, putVarint, stepGaps } from './search-varint'

const MAGIC = Buffer.from('ARBSEG1\n')
export const BLOCK_BYTES = 4096
/** bytes buffered by a writer or a sequential reader */
const IO_CHUNK = 1 << 20
/** rows read at once (a query, a merge); the footer keeps each run's newest time, so a query reads the newest runs first and skips older ones */
const ROWS_CHUNK = 4096

interface Footer {
  docs: number
  terms: number
  minTs: number
  maxTs: number
  /** per ROWS_CHUNK documents, the newest entry time among them */
  chunkMax: number[]
  dictAt: number
  rowsAt: number
  footerAt: number
  /** per block: its first term, its offset in the dictionary, its first term's postings' offset in the postings */
  blocks: Array<[string, number, number]>
}

/** A term as the dictionary holds it: where its postings are (from the start of the postings) and its last document. */
export interface DictEntry { term: string; off: number; len: number; last: number }

/** The segment's file has changed or is not one: the caller drops the segments and rebuilds from the log. */
export class SegmentDamaged extends Error {}

/** Appends to a file through a buffer, keeping its length and crc32. */
class Appender {
  private buf = Buffer.allocUnsafe(IO_CHUNK)
  private used = 0
  pos = 0
  crc = 0
  constructor (readonly fh: fsp.FileHandle) {}
  async write (b: Uint8Array): Promise<void> {
    if (this.used + b.length > this.buf.length) await this.drain()
    if (b.length > this.buf.length) { await this.raw(b); return }
    this.buf.set(b, this.used)
    this.used += b.length
  }

  async drain (): Promise<void> {
    if (this.used === 0) return
    const b = this.buf.subarray(0, this.used)
    await this.raw(b)
    this.buf = Buffer.allocUnsafe(IO_CHUNK)
    this.used = 0
  }

  private async raw (b: Uint8Array): Promise<void> {
    this.crc = crc32(b, this.crc)
    for (let done = 0; done < b.length;) done += (await this.fh.write(b, done, b.length - done, this.pos + done)).bytesWritten
    this.pos += b.length
  }
}

/** Reads a range of a file front to back through a buffer. */
export class SequentialReader {
  private buf = Buffer.alloc(0)
  private bufAt = 0
  private at: number
  constructor (private readonly fh: fsp.FileHandle, from: number, private readonly end: number) { this.at = from }
  get done (): boolean { return this.at >= this.end }
  get left (): number { return this.end - this.at }
  /** the next `len` bytes (valid until the next call) */
  async take (len: number): Promise<Buffer> {
    if (this.at + len > this.end) throw new SegmentDamaged('a segment part runs past its end')
    const off = this.at - this.bufAt
    if (off < 0 || off + len > this.buf.length) {
      const size = Math.min(Math.max(len, IO_CHUNK), this.end - this.at)
      this.buf = Buffer.allocUnsafe(size)
      const { bytesRead } = await this.fh.read(this.buf, 0, size, this.at)
      if (bytesRead < size) throw new SegmentDamaged('a segment file is shorter than it says')
      this.bufAt = this.at
    }
    const s = this.at - this.bufAt
    this.at += len
    return this.buf.subarray(s, s + len)
  }

  /** A varint (at most 8 bytes). */
  async varint (): Promise<number> {
    const avail = Math.min(8, this.end - this.at)
    const b = await this.peek(avail)
    const { n, end } = getVarint(b, 0)
    this.at += end
    return n
  }

  private async peek (len: number): Promise<Buffer> {
    const b = await this.take(len)
    this.at -= len
    return b
  }
}

/** Writes a segment: terms must come sorted (JS string order), each with postings in this segment's numbering. */
export class SegmentWriter {
  private readonly blocks: Array<[string, number, number]> = []
  private blockUsed = Infinity
  private terms = 0
  private postingsEnd = MAGIC.length
  private dictLen = 0
  private docs = 0
  private dictCopied = false
  private minTs = Infinity
  private maxTs = -Infinity
  private readonly chunkMax: number[] = []
  private readonly entry = Buffer.alloc(8)

  private constructor (private readonly main: Appender, private readonly dict: Appender, private readonly dictFile: string, private readonly blockBytes: number) {}

  static async create (file: string, blockBytes = BLOCK_BYTES): Promise<SegmentWriter> {
    const fh = await fsp.open(file, 'wx', 0o600)
    let dfh: fsp.FileHandle
    try {
      dfh = await fsp.open(`${file}.dict`, 'w+', 0o600)
    } catch (err) {
      await fh.close()
      throw err
    }
    const w = new SegmentWriter(new Appender(fh), new Appender(dfh), `${file}.dict`, blockBytes)
    await w.main.write(MAGIC)
    return w
  }

  async term (t: TermPosting): Promise<void> {
    const name = Buffer.from(t.term, 'utf8')
    if (this.blockUsed >= this.blockBytes) {
      this.blocks.push([t.term, this.dictLen, this.postingsEnd - MAGIC.length])
      this.blockUsed = 0
    }
    let n = putVarint(this.entry, 0, name.length)
    await this.dict.write(this.entry.subarray(0, n))
    await this.dict.write(name)
    n = putVarint(this.entry, 0, t.bytes.length)
    n = putVarint(this.entry, n, t.last)
    await this.dict.write(this.entry.subarray(0, n))
    const entryLen = n + name.length + putVarint(this.entry, 0, name.length)
    this.dictLen += entryLen
    this.blockUsed += entryLen
    await this.main.write(t.bytes)
    this.postingsEnd += t.bytes.length
    this.terms++
  }

  /** Document rows, in the order of their numbers, after every term. */
  async rows (rows: Buffer): Promise<void> {
    if (!this.dictCopied) {
      // the dictionary joins the file once every posting is written
      this.dictCopied = true
      await this.dict.drain()
      const src = new SequentialReader(this.dict.fh, 0, this.dictLen)
      while (!src.done) await this.main.write(await src.take(Math.min(IO_CHUNK, src.left)))
    }
    for (let r = 0; r < rows.length; r += DOC_ROW) {
      const ts = rows.readDoubleLE(r)
      if (ts < this.minTs) this.minTs = ts
      if (ts > this.maxTs) this.maxTs = ts
      const c = Math.floor((this.docs + r / DOC_ROW) / ROWS_CHUNK)
      if (c >= this.chunkMax.length) this.chunkMax.push(ts)
      else if (ts > (this.chunkMax[c] as number)) this.chunkMax[c] = ts
    }
    this.docs += rows.length / DOC_ROW
    await this.main.write(rows)
  }

  /** Writes the footer, fsyncs and closes; `beforeSync` is the crash point of the tests. Returns the file's length. */
  async finish (beforeSync?: () => Promise<void>): Promise<number> {
    try {
      if (!this.dictCopied) await this.rows(Buffer.alloc(0))
      const dictAt = this.postingsEnd
      const rowsAt = dictAt + this.dictLen
      await this.main.drain()
      const footer: Footer = { docs: this.docs, terms: this.terms, minTs: this.minTs, maxTs: this.maxTs, chunkMax: this.chunkMax, dictAt, rowsAt, footerAt: this.main.pos, blocks: this.blocks }
      const json = Buffer.from(JSON.stringify(footer))
      const len = Buffer.alloc(4)
      len.writeUInt32LE(json.length)
      await this.main.write(json)
      await this.main.write(len)
      await this.main.drain()
      const crc = Buffer.alloc(4)
      crc.writeUInt32LE(this.main.crc)
      await beforeSync?.()
      await this.main.write(crc)
      await this.main.drain()
      await this.main.fh.sync()
      return this.main.pos
    } finally {
      await this.main.fh.close()
      await this.dict.fh.close()
      await fsp.rm(this.dictFile, { force: true })
    }
  }

  /** Gives up: the files are removed (a kill instead leaves them to the start's sweep). */
  async abort (): Promise<void> {
    await this.main.fh.close().catch(() => undefined)
    await this.dict.fh.close().catch(() => undefined)
  }
}

export class Segment {
  private constructor (readonly file: string, private readonly fh: fsp.FileHandle, private readonly f: Footer, readonly fileBytes: number) {}

  get docs (): number { return this.f.docs }
  get maxTs (): number { return this.f.maxTs }
  /** bytes held in memory: the footer */
  get bytes (): number { return 200 + this.f.blocks.reduce((n, b) => n + 40 + b[0].length * 2, 0) }

  /** Opens a segment and checks it whole against its crc32; SegmentDamaged when it is not one. */
  static async open (file: string): Promise<Segment> {
    const fh = await fsp.open(file, 'r')
    try {
      const size = (await fh.stat()).size
      if (size < MAGIC.length + 8) throw new SegmentDamaged(`${file} is too short to be a segment`)
      const r = new SequentialReader(fh, 0, size - 4)
      let crc = 0
      let head: Buffer | null = null
      while (!r.done) {
        const b = await r.take(Math.min(IO_CHUNK, r.left))
        head ??= Buffer.from(b.subarray(0, MAGIC.length))
        crc = crc32(b, crc)
      }
      const tail = Buffer.alloc(8)
      await fh.read(tail, 0, 8, size - 8)
      if (head === null || !head.equals(MAGIC)) throw new SegmentDamaged(`${file} is not a segment`)
      if (crc !== tail.readUInt32LE(4)) throw new SegmentDamaged(`${file} is damaged (checksum)`)
      const footerLen = tail.readUInt32LE(0)
      if (footerLen > size - 8 - MAGIC.length) throw new SegmentDamaged(`${file} has a footer longer than itself`)
      const footerAt = size - 8 - footerLen
      const json = Buffer.alloc(footerLen)
      await fh.read(json, 0, footerLen, footerAt)
      const f = JSON.parse(json.toString('utf8')) as Footer
      if (!Array.isArray(f.chunkMax) || f.chunkMax.length !== Math.ceil(f.docs / ROWS_CHUNK) || f.footerAt !== footerAt || f.rowsAt + f.docs * DOC_ROW !== footerAt || !(f.dictAt <= f.rowsAt)) throw new SegmentDamaged(`${file} has parts that do not add up`)
      return new Segment(file, fh, f, size)
    } catch (err) {
      await fh.close()
      if (err instanceof SegmentDamaged) throw err
      if (err instanceof SyntaxError) throw new SegmentDamaged(`${file} has a footer that is not JSON`)
      throw err
    }
  }

  async close (): Promise<void> { await this.fh.close() }

  private async block (i: number): Promise<DictEntry[]> {
    const [, at, postAt] = this.f.blocks[i] as [string, number, number]
    const end = i + 1 < this.f.blocks.length ? (this.f.blocks[i + 1] as [string, number, number])[1] : this.f.rowsAt - this.f.dictAt
    const buf = Buffer.alloc(end - at)
    await this.fh.read(buf, 0, buf.length, this.f.dictAt + at)
    const out: DictEntry[] = []
    let p = 0
    let off = postAt
    while (p < buf.length) {
      const n = getVarint(buf, p)
      const term = buf.subarray(n.end, n.end + n.n).toString('utf8')
      const len = getVarint(buf, n.end + n.n)
      const last = getVarint(buf, len.end)
      out.push({ term, off, len: len.n, last: last.n })
      off += len.n
      p = last.end
    }
    return out
  }

  /** The block where `term` would be: the last whose first term is not after it. */
  private blockOf (term: string): number {
    let lo = 0
    let hi = this.f.blocks.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if ((this.f.blocks[mid] as [string, number, number])[0] <= term) lo = mid
      else hi = mid - 1
    }
    return lo
  }

  async lookup (term: string): Promise<DictEntry | null> {
    if (this.f.blocks.length === 0) return null
    return (await this.block(this.blockOf(term))).find(e => e.term === term) ?? null
  }

  /** The terms beginning with `prefix`, in order (they are next to each other in the dictionary). */
  async withPrefix (prefix: string): Promise<DictEntry[]> {
    const out: DictEntry[] = []
    for (let i = this.f.blocks.length === 0 ? 0 : this.blockOf(prefix); i < this.f.blocks.length; i++) {
      for (const e of await this.block(i)) {
        if (e.term.startsWith(prefix)) out.push(e)
        else if (e.term > prefix) return out
      }
    }
    return out
  }

  private async postings (from: number, to: number): Promise<Buffer> {
    const buf = Buffer.alloc(to - from)
    await this.fh.read(buf, 0, buf.length, MAGIC.length + from)
    return buf
  }

  /** Offers the documents matching a query to `top`, skipping dead ones. */
  async match (q: SearchQuery, top: TopHits, isDead: IsDead): Promise<void> {
    if (q.prefix === null || this.f.docs === 0 || this.f.maxTs < top.floor) return
    const exact: DictEntry[] = []
    for (const w of q.words) {
      const e = await this.lookup(w)
      if (e === null) return
      exact.push(e)
    }
    const prefixed = await this.withPrefix(q.prefix)
    if (prefixed.length === 0) return
    const met = new Uint8Array(this.f.docs)
    const needed = exact.length + 1
    // word k raises the documents that had every word before it
    for (const [k, e] of exact.entries()) {
      const b = await this.postings(e.off, e.off + e.len)
      stepGaps(b, 0, b.length, met, k, k + 1)
    }
    const full = exact.length
    // consecutive terms' postings are next to each other: one read for all of them
    const first = prefixed[0] as DictEntry
    const lastE = prefixed[prefixed.length - 1] as DictEntry
    const all = await this.postings(first.off, lastE.off + lastE.len)
    for (const e of prefixed) stepGaps(all, e.off - first.off, e.off - first.off + e.len, met, full, needed)
    // the runs of documents with candidates, newest first: once the page is full, older runs are not read
    const runs: number[] = []
    for (let c = 0; c < this.f.chunkMax.length; c++) {
      const end = Math.min(this.f.docs, (c + 1) * ROWS_CHUNK)
      for (let d = c * ROWS_CHUNK; d < end; d++) if (met[d] === needed) { runs.push(c); break }
    }
    runs.sort((a, b) => (this.f.chunkMax[b] as number) - (this.f.chunkMax[a] as number))
    const rows = Buffer.alloc(Math.min(ROWS_CHUNK, this.f.docs) * DOC_ROW)
    for (const c of runs) {
      if ((this.f.chunkMax[c] as number) < top.floor) break
      const from = c * ROWS_CHUNK
      const n = Math.min(ROWS_CHUNK, this.f.docs - from)
      await this.fh.read(rows, 0, n * DOC_ROW, this.f.rowsAt + from * DOC_ROW)
      for (let i = 0; i < n; i++) {
        if (met[from + i] !== needed) continue
        const r = i * DOC_ROW
        const ts = rows.readDoubleLE(r)
        if (ts < top.floor) continue
        const at = rows.readDoubleLE(r + 8)
        if (top.wants(ts, at) && !isDead(rows.readUInt32LE(r + 16), at)) top.offer(ts, at)
      }
    }
  }

  /** Every term in order, with its postings (for a merge: read front to back). */
  async * entries (): AsyncGenerator<TermPosting & { first: number }> {
    const dict = new SequentialReader(this.fh, this.f.dictAt, this.f.rowsAt)
    const post = new SequentialReader(this.fh, MAGIC.length, this.f.dictAt)
    while (!dict.done) {
      const n = await dict.varint()
      const term = (await dict.take(n)).toString('utf8')
      const len = await dict.varint()
      const last = await dict.varint()
      const bytes = Buffer.from(await post.take(len))
      yield { term, bytes, last, first: getVarint(bytes, 0).n - 1 }
    }
  }

  /** The document rows, in chunks. */
  async * rows (): AsyncGenerator<Buffer> {
    const r = new SequentialReader(this.fh, this.f.rowsAt, this.f.footerAt)
    while (!r.done) yield Buffer.from(await r.take(Math.min(ROWS_CHUNK * DOC_ROW, r.left)))
  }
}
