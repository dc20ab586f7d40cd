import fs from 'node:fs/promises'
import path from 'node:path'
import { encodeEntry, releaseEncoding, type Entry } from '../../shared/entry'

const NEWLINE = Buffer.from('\n')

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

  constructor (readonly dir: string) {}

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
    let buf: Buffer
    try {
      buf = await fs.readFile(this.file(conversation))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], torn: 0, bytes: 0 }
      throw err
    }
    if (buf.length > 0 && buf[buf.length - 1] !== 0x0a) this.unterminated.add(conversation)
    // Line by line from the bytes: no string of the whole file, which would be old-generation
    // garbage on every load (a conversation is read again each time the DAG cache evicted it).
    const entries: Entry[] = []
    let torn = 0
    let start = 0
    while (start < buf.length) {
      let end = buf.indexOf(0x0a, start)
      if (end === -1) end = buf.length
      if (end > start) {
        try {
          entries.push(JSON.parse(buf.toString('utf8', start, end)) as Entry)
        } catch {
          torn++
        }
      }
      start = end + 1
    }
    return { entries, torn, bytes: buf.length }
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
