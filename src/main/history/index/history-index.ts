import fsp from 'node:fs/promises'
import path from 'node:path'
import { storageError } from '../../disk/storage-error'
import { decodeIndex, decodeListing, encodeJournalStart, encodeSave, encodeSnapshot, type IndexRead } from './index-codec'
import type { ListRows } from './index-listing'
import type { ConversationSummary, IndexState } from './index-state'

export type { ConversationSummary, FeedRecord, IndexState } from './index-state'

/** Where a data directory keeps its index (readable without opening the store). */
export function indexDir (dir: string): string {
  return path.join(path.resolve(dir), 'index')
}

export { sortSummaries } from './index-listing'

export function emptyIndex (device: string): IndexState {
  return { device, clean: true, manifestIndexed: 0, feeds: {}, conversations: {} }
}

export interface CompactionOptions {
  /** the journal is compacted into a new snapshot once it outgrows this share of the snapshot… (0.5) */
  fraction?: number
  /** …or this many bytes, whichever is more: a small index is not rewritten on every save (64 KiB) */
  minBytes?: number
}

/** The files of an index directory: the snapshot, its journal, and the JSON file of format 1. */
export interface IndexFiles { snapshot: string; journal: string; legacy: string }

export function indexFiles (dir: string): IndexFiles {
  return { snapshot: path.join(dir, 'index.snap'), journal: path.join(dir, 'index.log'), legacy: path.join(dir, 'index.json') }
}

async function readOrNull (file: string): Promise<Buffer | null> {
  try {
    return await fsp.readFile(file)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw storageError(err, path.dirname(file))
  }
}

async function readIndex (files: IndexFiles, device: string | null, summariesOnly: boolean): Promise<IndexRead> {
  const [legacy, snapshot, journal] = await Promise.all([readOrNull(files.legacy), readOrNull(files.snapshot), readOrNull(files.journal)])
  return decodeIndex({ legacy, snapshot, journal }, device, summariesOnly)
}

/**
 * The summaries alone, for listing without opening the store; null when there is no readable
 * index. Feed records are skipped unread.
 */
export async function readSummaries (dir: string): Promise<{ clean: boolean; conversations: ConversationSummary[] } | null> {
  const { state } = await readIndex(indexFiles(dir), null, true)
  return state === null ? null : { clean: state.clean, conversations: Object.values(state.conversations) }
}

/**
 * What `arbor ls` prints, for listing without opening the store: the snapshot's listing record
 * with its journal's changes merged in (or the summaries, from a snapshot without one); null
 * when there is no readable index.
 */
export async function readListing (dir: string): Promise<{ clean: boolean; rows: ListRows } | null> {
  const files = indexFiles(dir)
  const [legacy, snapshot, journal] = await Promise.all([readOrNull(files.legacy), readOrNull(files.snapshot), readOrNull(files.journal)])
  return decodeListing({ legacy, snapshot, journal })
}

/**
 * The derived index: summaries and per-feed watermarks, as a snapshot (index.snap, written
 * whole through the state-file writer) and a journal of saves (index.log). A save appends the
 * records marked changed since the last one (`changed`), so it costs what changed; once the
 * journal outgrows a share of the snapshot, a save writes a new snapshot and starts a new
 * journal instead. A crash leaves either file as it was or with a torn last frame, which is
 * ignored (the index then lags and says it is not clean).
 */
export class HistoryIndexFile {
  readonly files: IndexFiles
  private generation = 0
  private snapshotBytes = 0
  private journalBytes = 0
  /** whether the next save may append to the journal on disk (else it writes a snapshot) */
  private appendable = false
  /** a format-1 file to remove once a snapshot replaces it */
  private legacy = false
  private written: { clean: boolean; manifestIndexed: number } | null = null
  private dirtyConversations = new Set<string>()
  private dirtyFeeds = new Set<string>()
  private queue: Promise<void> = Promise.resolve()
  /** saves so far, and how many wrote a snapshot (for benchmarks and tests) */
  readonly stats = { saves: 0, snapshots: 0, bytes: 0 }

  private readonly fraction: number
  private readonly minBytes: number

  /** `dir` is the index directory (indexDir of the data directory). */
  constructor (readonly dir: string, opts: CompactionOptions = {}) {
    this.files = indexFiles(dir)
    this.fraction = opts.fraction ?? 0.5
    this.minBytes = opts.minBytes ?? 64 * 1024
  }

  /**
   * The saved state, or null if there is none or it is unreadable (then: rebuild). Any device's
   * if device is null. `legacy`: it was read from the JSON file of format 1; `outdated`: from a
   * snapshot without the listing record (either way, save it to convert).
   */
  async load (device: string | null): Promise<{ state: IndexState | null; problem?: string; legacy?: boolean; outdated?: boolean }> {
    const r = await readIndex(this.files, device, false)
    this.generation = r.generation
    this.snapshotBytes = r.snapshotBytes
    this.journalBytes = r.journalBytes
    // a snapshot without the listing this version writes: the next save writes a new one
    this.appendable = r.appendable && !r.outdated
    this.legacy = r.legacy
    this.written = r.state === null ? null : { clean: r.state.clean, manifestIndexed: r.state.manifestIndexed }
    return { state: r.state, ...(r.problem !== undefined ? { problem: r.problem } : {}), ...(r.legacy ? { legacy: true } : {}), ...(r.outdated ? { outdated: true } : {}) }
  }

  /** A record changed (or was removed): the next save writes it. */
  changed (kind: 'feed' | 'conversation', key: string): void {
    if (kind === 'feed') this.dirtyFeeds.add(key)
    else this.dirtyConversations.add(key)
  }

  /**
   * Writes what changed, as it is when the write starts (saves wait for each other in call
   * order). Resolves once it is on disk; on failure nothing is lost: the records go with the next save.
   */
  save (state: IndexState): Promise<void> {
    const run = this.queue.then(() => this.write(state))
    this.queue = run.catch(() => undefined)
    return run
  }

  private async write (state: IndexState): Promise<void> {
    const conversations = this.dirtyConversations
    const feeds = this.dirtyFeeds
    this.dirtyConversations = new Set()
    this.dirtyFeeds = new Set()
    const header = { clean: state.clean, manifestIndexed: state.manifestIndexed }
    try {
      if (this.appendable && conversations.size === 0 && feeds.size === 0 && this.written?.clean === header.clean && this.written.manifestIndexed === header.manifestIndexed) return
      const frame = this.appendable ? encodeSave(state, { conversations, feeds }) : null
      if (frame === null || this.journalBytes + frame.length > Math.max(this.minBytes, this.snapshotBytes * this.fraction)) {
        await this.compact(state)
      } else {
        await this.append(frame)
      }
      this.written = header
      this.stats.saves++
    } catch (err) {
      // Not saved: these records go with the next save, which writes a whole snapshot.
      for (const k of conversations) this.dirtyConversations.add(k)
      for (const k of feeds) this.dirtyFeeds.add(k)
      this.appendable = false
      throw err
    }
  }

  /** A new snapshot of everything (a new generation), then a new journal for it. */
  private async compact (state: IndexState): Promise<void> {
    this.appendable = false
    const generation = this.generation + 1
    const snapshot = encodeSnapshot(state, generation)
    // loaded here: `arbor ls` reads the index and needs none of it (node:crypto)
    const { writeStateFile } = await import('../../disk/state-file')
    await writeStateFile(this.files.snapshot, snapshot)
    this.generation = generation
    this.snapshotBytes = snapshot.length
    this.stats.snapshots++
    this.stats.bytes += snapshot.length
    if (this.legacy) {
      // A version that knows only index.json would trust it, stale, over the feeds: it goes.
      await fsp.rm(this.files.legacy, { force: true }).catch((err: unknown) => { throw storageError(err, this.dir) })
      this.legacy = false
    }
    const start = encodeJournalStart(state.device, generation)
    await writeStateFile(this.files.journal, start)
    this.journalBytes = start.length
    this.appendable = true
  }

  private async append (frame: Buffer): Promise<void> {
    let fh: fsp.FileHandle | undefined
    try {
      fh = await fsp.open(this.files.journal, 'r+')
      for (let done = 0; done < frame.length;) done += (await fh.write(frame, done, frame.length - done, this.journalBytes + done)).bytesWritten
      await fh.sync()
    } catch (err) {
      // A partly written frame would be ignored as torn when read; cut it all the same, so a
      // failed save leaves the file as it was (the next save writes a snapshot anyway).
      await fh?.truncate(this.journalBytes).catch(() => undefined)
      throw storageError(err, this.dir)
    } finally {
      await fh?.close()
    }
    this.journalBytes += frame.length
    this.stats.bytes += frame.length
  }
}
