import type { Logger } from '../../../shared/logger'
import { emptyIndex, type HistoryIndexFile, type IndexState } from './history-index'

export interface IndexWriterOptions {
  file: HistoryIndexFile
  log: Logger
  /** How long index changes may wait before they are saved (HistoryStoreOptions.indexDelayMs). */
  delayMs: number
  /** whether the store is closing: no new timer then */
  closing: () => boolean
}

/**
 * The index in memory (summaries, feed records, watermarks) and when it is saved: marked not
 * clean on disk before the first write of a session, then the changed records at most once
 * every delayMs (the index file queues its saves).
 */
export class IndexWriter {
  state: IndexState = emptyIndex('')
  private indexTimer: NodeJS.Timeout | null = null
  private dirtyMarked: Promise<void> | null = null

  constructor (private readonly opts: IndexWriterOptions) {}

  /** Whether this session marked the index on disk not clean (it wrote, or was to). */
  get marked (): boolean { return this.dirtyMarked !== null }

  /** Before the first write of a session, the index on disk must say it may be stale. */
  markDirty (): Promise<void> {
    if (this.dirtyMarked === null) {
      this.state.clean = false
      const marked = this.saveIndex()
      this.dirtyMarked = marked
      // not marked (a full disk): the next write tries again rather than failing for ever
      marked.catch(() => { if (this.dirtyMarked === marked) this.dirtyMarked = null })
    }
    return this.dirtyMarked
  }

  /** Writes the index records changed since the last save (the index file queues its saves). */
  saveIndex (): Promise<void> {
    return this.opts.file.save(this.state)
  }

  /** A feed record or conversation summary of the index changed: it goes into the next save. */
  changed (kind: 'feed' | 'conversation', key: string): void {
    this.opts.file.changed(kind, key)
    this.scheduleIndexSave()
  }

  scheduleIndexSave (): void {
    if (this.indexTimer !== null || this.opts.closing()) return
    this.indexTimer = setTimeout(() => {
      this.indexTimer = null
      this.state.clean = false
      this.saveIndex().catch(err => { this.opts.log.error(`could not save the index: ${(err as Error).message}`) })
    }, this.opts.delayMs)
  }

  /** Stops the save timer (the store saves the last time itself as it closes). */
  stop (): void {
    if (this.indexTimer !== null) clearTimeout(this.indexTimer)
  }
}
