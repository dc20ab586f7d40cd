import fs from 'node:fs/promises'
import path from 'node:path'
import { encodeEntry, type Entry } from '../../shared/entry'

/**
 * A per-conversation file of the entries already validated from its feeds, one JSON line
 * each, so opening a conversation is one sequential file read instead of thousands of
 * block reads. Derived state: lines may repeat or trail off after a crash; readers
 * dedupe by id and the store re-reads the feeds past its watermarks.
 */
export class EntryCache {
  private readonly queues = new Map<string, Promise<void>>()
  /** Files whose last line has no newline (a torn write): the next append starts a new line. */
  private readonly unterminated = new Set<string>()

  constructor (readonly dir: string) {}

  file (conversation: string): string {
    return path.join(this.dir, conversation + '.jsonl')
  }

  async ready (): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true })
  }

  /** Appends in call order per conversation; resolves when written. */
  append (conversation: string, entries: Entry[]): Promise<void> {
    if (entries.length === 0) return this.queues.get(conversation) ?? Promise.resolve()
    let text = entries.map(e => encodeEntry(e) + '\n').join('')
    if (this.unterminated.delete(conversation)) text = '\n' + text
    const prev = this.queues.get(conversation) ?? Promise.resolve()
    const next = prev.then(() => fs.appendFile(this.file(conversation), text))
    this.queues.set(conversation, next)
    void next.finally(() => { if (this.queues.get(conversation) === next) this.queues.delete(conversation) }).catch(() => undefined)
    return next
  }

  /** Every entry in the file; a line that does not parse (a torn write) is counted, not fatal. */
  async read (conversation: string): Promise<{ entries: Entry[]; torn: number }> {
    let text: string
    try {
      text = await fs.readFile(this.file(conversation), 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], torn: 0 }
      throw err
    }
    if (text.length > 0 && !text.endsWith('\n')) this.unterminated.add(conversation)
    const entries: Entry[] = []
    let torn = 0
    let start = 0
    while (start < text.length) {
      let end = text.indexOf('\n', start)
      if (end === -1) end = text.length
      if (end > start) {
        try {
          entries.push(JSON.parse(text.slice(start, end)) as Entry)
        } catch {
          torn++
        }
      }
      start = end + 1
    }
    return { entries, torn }
  }

  /** Replaces a conversation's file with exactly these entries (written aside, then renamed). */
  async rewrite (conversation: string, entries: Entry[]): Promise<void> {
    await (this.queues.get(conversation) ?? Promise.resolve()).catch(() => undefined)
    const tmp = this.file(conversation) + '.tmp'
    await fs.writeFile(tmp, entries.map(e => encodeEntry(e) + '\n').join(''))
    await fs.rename(tmp, this.file(conversation))
    this.unterminated.delete(conversation)
  }

  /** Removes every file (before a rebuild from the feeds). */
  async clear (): Promise<void> {
    await this.drain()
    await fs.rm(this.dir, { recursive: true, force: true })
    await fs.mkdir(this.dir, { recursive: true })
    this.unterminated.clear()
  }

  /** Resolves when every append so far is on disk. */
  async drain (): Promise<void> {
    while (this.queues.size > 0) await Promise.allSettled([...this.queues.values()])
  }
}
