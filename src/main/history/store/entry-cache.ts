import fs from 'node:fs/promises'
import path from 'node:path'
import { encodeEntry, releaseEncoding, type Entry } from '../../../shared/entry/entry'

const NEWLINE = Buffer.from('\n')

/** A buffer twice the size holding the same bytes (kept once grown: entries are bounded, so is it). */
function grown (buf: Buffer): Buffer {
  const bigger = Buffer.allocUnsafeSlow(buf.length * 2)
  buf.copy(bigger)
  return bigger
}

/**
 * A per-conversation file of the entries already validated from its feeds, one JSON line
 * each, so opening a conversation is one sequential file read instead of thousands of
 * block reads. Derived state: lines may repeat or trail off after a crash; readers
 * dedupe by id and the store re-reads the feeds past its watermarks.
 */
export class EntryCache {
  private readonly queues = new Map<string, Promise<void>>()
  /** per conversation, the lines of appends waiting for the write under way to finish */
  private readonly waiting = new Map<string, { lines: Buffer[]; written: Promise<void> }>()
  /** Files whose last line has no newline (a torn write): the next append starts a new line. */
  private readonly unterminated = new Set<string>()
  /** Open append handles, most recently used last (an open/close per append costs more than the write). */
  private readonly handles = new Map<string, Promise<fs.FileHandle>>()
  private static readonly MAX_HANDLES = 32

  /**
   * Buffers for reading files, reused: a buffer per read the size of its file would be a large
   * malloc freed at once, and after such frees glibc serves later ones from its heap, which
   * keeps what they fragment (opening 10,000 conversations left ~30 MB of RSS so).
   */
  private readonly readBuffers: Buffer[] = []
  private static readonly MAX_READ_BUFFERS = 4

  /** `readChunk`: the bytes read at a time (a line longer than it grows the buffer it is read into). */
  constructor (readonly dir: string, private readonly readChunk = 256 * 1024) {}

  file (conversation: string): string {
    return path.join(this.dir, conversation + '.jsonl')
  }

  async ready (): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true })
  }

  /**
   * Appends in call order per conversation; resolves when written. `blocks`, when given, are
   * the entries' encodings (their feed blocks, makeEntryBlock): written as they are.
   */
  append (conversation: string, entries: Entry[], blocks?: Buffer[]): Promise<void> {
    if (entries.length === 0) return this.queues.get(conversation) ?? Promise.resolve()
    const lines: Buffer[] = []
    if (this.unterminated.delete(conversation)) lines.push(NEWLINE)
    if (blocks !== undefined) {
      for (const b of blocks) lines.push(b, NEWLINE)
    } else {
      let text = ''
      for (const e of entries) {
        text += encodeEntry(e) + '\n'
        releaseEncoding(e) // this line was the last use of the text written to the feed
      }
      lines.push(Buffer.from(text))
    }
    // Appends made while a write is under way go out together in the next one: a write per
    // batch, not per call (an agent appends an entry or two at a time).
    const waiting = this.waiting.get(conversation)
    if (waiting !== undefined) {
      for (const l of lines) waiting.lines.push(l)
      return waiting.written
    }
    const prev = this.queues.get(conversation) ?? Promise.resolve()
    const next: { lines: Buffer[]; written: Promise<void> } = { lines, written: Promise.resolve() }
    next.written = prev.then(async () => {
      this.waiting.delete(conversation)
      const lines = next.lines
      // the blocks as they are, in one call (libuv writes past IOV_MAX in turn): no copy of a batch's bytes
      await (await this.handle(conversation)).writev(lines)
    })
    this.waiting.set(conversation, next)
    this.queues.set(conversation, next.written)
    // A failed write rejects what waited for it; this chain's own end only tidies up.
    void next.written.finally(() => {
      if (this.waiting.get(conversation) === next) this.waiting.delete(conversation)
      if (this.queues.get(conversation) === next.written) this.queues.delete(conversation)
    }).catch(() => undefined)
    return next.written
  }

  private handle (conversation: string): Promise<fs.FileHandle> {
    let h = this.handles.get(conversation)
    if (h !== undefined) {
      this.handles.delete(conversation)
      this.handles.set(conversation, h)
      return h
    }
    h = fs.open(this.file(conversation), 'a')
    this.handles.set(conversation, h)
    h.catch(() => { if (this.handles.get(conversation) === h) this.handles.delete(conversation) })
    if (this.handles.size > EntryCache.MAX_HANDLES) {
      const [oldest] = this.handles.keys()
      if (oldest !== undefined && !this.queues.has(oldest)) void this.closeHandle(oldest)
    }
    return h
  }

  private async closeHandle (conversation: string): Promise<void> {
    const h = this.handles.get(conversation)
    if (h === undefined) return
    this.handles.delete(conversation)
    await (await h.catch(() => null))?.close()
  }

  /** Waits for pending appends and closes every file. */
  async close (): Promise<void> {
    await this.drain()
    await Promise.all([...this.handles.keys()].map(c => this.closeHandle(c)))
  }

  /**
   * Every entry in the file, after the appends queued before the call (a conversation read
   * again after its DAG was evicted must see them); a line that does not parse (a torn
   * write) is counted, not fatal. `bytes`: the file's size, for the DAG cache's estimate.
   */
  async read (conversation: string): Promise<{ entries: Entry[]; torn: number; bytes: number }> {
    // a failed append is the store's to report; what it left out is found missing and re-read
    await (this.queues.get(conversation) ?? Promise.resolve()).catch(() => undefined)
    let fh: fs.FileHandle
    try {
      fh = await fs.open(this.file(conversation), 'r')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], torn: 0, bytes: 0 }
      throw err
    }
    let buf = this.readBuffers.pop() ?? Buffer.allocUnsafeSlow(this.readChunk)
    const entries: Entry[] = []
    let torn = 0
    let bytes = 0
    const parse = (start: number, end: number): void => {
      if (end === start) return
      try {
        entries.push(JSON.parse(buf.toString('utf8', start, end)) as Entry)
      } catch {
        torn++
      }
    }
    try {
      // Line by line from the bytes, a chunk at a time: no string of the whole file (old-generation
      // garbage on every load: a conversation is read again each time the DAG cache evicted it).
      let have = 0 // bytes in buf from its start: the unfinished line, then what was just read
      for (;;) {
        if (have === buf.length) buf = grown(buf) // a line longer than the buffer
        const { bytesRead } = await fh.read(buf, have, buf.length - have, null)
        if (bytesRead === 0) break
        const from = have
        have += bytesRead
        bytes += bytesRead
        const read = buf.subarray(0, have)
        let start = 0
        for (let end = read.indexOf(0x0a, from); end !== -1; end = read.indexOf(0x0a, start)) {
          parse(start, end)
          start = end + 1
        }
        buf.copyWithin(0, start, have)
        have -= start
      }
      if (have > 0) {
        this.unterminated.add(conversation)
        parse(0, have)
      }
    } finally {
      if (this.readBuffers.length < EntryCache.MAX_READ_BUFFERS) this.readBuffers.push(buf)
      await fh.close()
    }
    return { entries, torn, bytes }
  }

  /** Replaces a conversation's file with exactly these entries (written aside, then renamed). */
  async rewrite (conversation: string, entries: Entry[]): Promise<void> {
    await (this.queues.get(conversation) ?? Promise.resolve()).catch(() => undefined)
    await this.closeHandle(conversation) // the file is replaced: appends must reopen it
    const tmp = this.file(conversation) + '.tmp'
    await fs.writeFile(tmp, entries.map(e => encodeEntry(e) + '\n').join(''))
    await fs.rename(tmp, this.file(conversation))
    this.unterminated.delete(conversation)
  }

  /** Removes every file (before a rebuild from the feeds). */
  async clear (): Promise<void> {
    await this.close()
    await fs.rm(this.dir, { recursive: true, force: true })
    await fs.mkdir(this.dir, { recursive: true })
    this.unterminated.clear()
  }

  /** Resolves when every append so far is on disk. */
  async drain (): Promise<void> {
    while (this.queues.size > 0) await Promise.allSettled([...this.queues.values()])
  }
}
