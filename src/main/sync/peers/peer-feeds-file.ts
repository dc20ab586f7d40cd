import { crc32 } from 'node:zlib'

/**
 * The bytes of `sync-peers.bin` (docs/ARCHITECTURE.md, "Reconnecting"): this device's own list
 * as saved (digest, then [key, length] per feed: conversations are the history's) and, per
 * paired device, what it knows of that device's list, each a length-prefixed block, so a start
 * decodes neither: its list when first needed, a peer's block when that peer first connects. Keys
 * are 32 bytes, numbers LEB128 varints, and a CRC-32 of everything before closes the file: a torn,
 * truncated or foreign file is refused whole (a cache: it then costs one full exchange).
 */
export const PEER_FEEDS_FORMAT = 2

/** A list as saved: [feed key, length] pairs. */
export type SavedPairs = Array<[string, number]>

/** What is saved of one peer's list (PeerFeeds.saved). */
export interface SavedPeer {
  /** the heard list's digest, as computed when it was saved */
  digest: string
  /** this device's feeds changed since the peer was last told; 'all': never sent the whole list */
  unsent: 'all' | string[]
  /** the heard list whole, or `like`: this device's saved list but for the feeds the peer holds at another length, and those it lacks */
  heard?: SavedPairs
  like?: { differ: SavedPairs; absent: string[] }
}

/** This device's list as saved. */
export interface SavedList { digest: string; feeds: SavedPairs }

/**
 * This device's list as read back: its keys left as bytes, so a start that finds them in the
 * history's order (the rule) compares them in place and makes no string per feed.
 */
export class SavedListView {
  private readonly scratch = Buffer.alloc(32)
  constructor (readonly digest: string, private readonly keys: Buffer, readonly lengths: number[]) {}
  get size (): number { return this.lengths.length }
  key (i: number): string { return this.keys.toString('hex', i * 32, i * 32 + 32) }
  /** whether the i-th saved key is `hex` */
  keyIs (i: number, hex: string): boolean {
    return hex.length === 64 && this.scratch.write(hex, 'hex') === 32 && this.keys.compare(this.scratch, 0, 32, i * 32, i * 32 + 32) === 0
  }
}

export interface PeerFeedsFile {
  /** this device's list, still encoded (decodeList) */
  mine: Buffer
  /** device → its SavedPeer, still encoded (decodePeer) */
  peers: Map<string, Buffer>
}

/** Appends to a buffer that grows by doubling. */
class Writer {
  private buf = Buffer.allocUnsafe(1024)
  private at = 0

  private room (n: number): void {
    if (this.at + n <= this.buf.length) return
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n))
    this.buf.copy(next, 0, 0, this.at)
    this.buf = next
  }

  uint (n: number): void {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`not a length: ${n}`)
    this.room(8)
    while (n >= 0x80) { this.buf[this.at++] = (n % 0x80) | 0x80; n = Math.floor(n / 0x80) }
    this.buf[this.at++] = n
  }

  key (k: string): void {
    this.room(32)
    if (k.length !== 64 || this.buf.write(k, this.at, 32, 'hex') !== 32) throw new Error(`not a 32-byte key: ${k.slice(0, 16)}`)
    this.at += 32
  }

  bytes (b: Buffer): void {
    this.uint(b.length)
    this.room(b.length)
    b.copy(this.buf, this.at)
    this.at += b.length
  }

  pairs (ps: SavedPairs): void {
    this.uint(ps.length)
    for (const [k, n] of ps) { this.key(k); this.uint(n) }
  }

  keys (ks: string[]): void {
    this.uint(ks.length)
    for (const k of ks) this.key(k)
  }

  /** The bytes written, closed by their CRC-32. */
  sealed (): Buffer {
    this.room(4)
    this.buf.writeUInt32LE(crc32(this.buf.subarray(0, this.at)), this.at)
    return this.buf.subarray(0, this.at + 4)
  }

  done (): Buffer { return this.buf.subarray(0, this.at) }
}

/** Reads what a Writer wrote; throws past the end. */
class Reader {
  private at = 0
  constructor (private readonly buf: Buffer, private readonly end = buf.length) {}

  private need (n: number): void { if (this.at + n > this.end) throw new Error('it ends too soon') }

  uint (): number {
    let n = 0
    for (let scale = 1; ; scale *= 0x80) {
      this.need(1)
      const b = this.buf[this.at++] as number
      n += (b & 0x7f) * scale
      if (b < 0x80) break
      if (scale > 2 ** 42) throw new Error('a number is too long')
    }
    return n
  }

  key (): string {
    this.need(32)
    const k = this.buf.toString('hex', this.at, this.at + 32)
    this.at += 32
    return k
  }

  bytes (): Buffer {
    const n = this.uint()
    this.need(n)
    const b = this.buf.subarray(this.at, this.at + n)
    this.at += n
    return b
  }

  raw (n: number): Buffer {
    this.need(n)
    const b = this.buf.subarray(this.at, this.at + n)
    this.at += n
    return b
  }

  /** A count, checked against what is left (each item takes at least `min` bytes), so a corrupt count cannot allocate without bound. */
  count (min: number): number {
    const n = this.uint()
    if (n * min > this.end - this.at) throw new Error('it ends too soon')
    return n
  }

  pairs (): SavedPairs {
    const out: SavedPairs = new Array(this.count(33))
    for (let i = 0; i < out.length; i++) out[i] = [this.key(), this.uint()]
    return out
  }

  keys (): string[] {
    const out: string[] = new Array(this.count(32))
    for (let i = 0; i < out.length; i++) out[i] = this.key()
    return out
  }

  finish (): void { if (this.at !== this.end) throw new Error('it has bytes past its end') }
}

const ALL = 1
const LIKE = 2

/** The file's bytes: this device's list, then each peer's block. */
export function encodePeerFeedsFile (mine: SavedList, peers: Iterable<[string, SavedPeer]>): Buffer {
  // the list's keys together, then its lengths: read back, the keys stay one buffer
  const list = new Writer()
  list.key(mine.digest)
  list.uint(mine.feeds.length)
  for (const [k] of mine.feeds) list.key(k)
  for (const [, n] of mine.feeds) list.uint(n)
  const w = new Writer()
  w.uint(PEER_FEEDS_FORMAT)
  w.bytes(list.done())
  const blocks = [...peers].map(([d, p]) => [d, encodePeer(p)] as const)
  w.uint(blocks.length)
  for (const [d, b] of blocks) { w.key(d); w.bytes(b) }
  return w.sealed()
}

function encodePeer (p: SavedPeer): Buffer {
  const w = new Writer()
  w.key(p.digest)
  w.uint((p.unsent === 'all' ? ALL : 0) | (p.like !== undefined ? LIKE : 0))
  if (p.unsent !== 'all') w.keys(p.unsent)
  if (p.like !== undefined) { w.pairs(p.like.differ); w.keys(p.like.absent) } else w.pairs(p.heard ?? [])
  return Buffer.from(w.done())
}

/** The file read back; throws, saying why, for a file this version does not read (another format, torn, corrupt). */
export function decodePeerFeedsFile (buf: Buffer): PeerFeedsFile {
  if (buf.length < 5 || buf.readUInt32LE(buf.length - 4) !== crc32(buf.subarray(0, buf.length - 4))) throw new Error('it is torn or not of this format (its checksum does not match)')
  const r = new Reader(buf, buf.length - 4)
  const format = r.uint()
  if (format !== PEER_FEEDS_FORMAT) throw new Error(`it is of format ${format}, this version reads ${PEER_FEEDS_FORMAT}`)
  const mine = r.bytes()
  const peers = new Map<string, Buffer>()
  for (let n = r.uint(); n > 0; n--) peers.set(r.key(), r.bytes())
  r.finish()
  return { mine, peers }
}

/** This device's list (from decodePeerFeedsFile); throws if it does not decode whole. */
export function decodeList (block: Buffer): SavedListView {
  const r = new Reader(block)
  const digest = r.key()
  const keys = r.raw(r.count(33) * 32)
  const lengths: number[] = new Array(keys.length / 32)
  for (let i = 0; i < lengths.length; i++) lengths[i] = r.uint()
  r.finish()
  return new SavedListView(digest, keys, lengths)
}

/** One peer's block (from decodePeerFeedsFile); throws if it does not decode whole. */
export function decodePeer (block: Buffer): SavedPeer {
  const r = new Reader(block)
  const digest = r.key()
  const flags = r.uint()
  const unsent = (flags & ALL) !== 0 ? 'all' as const : r.keys()
  const p: SavedPeer = (flags & LIKE) !== 0 ? { digest, unsent, like: { differ: r.pairs(), absent: r.keys() } } : { digest, unsent, heard: r.pairs() }
  r.finish()
  return p
}
