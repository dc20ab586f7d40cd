import type { Entry } from '../../../shared/entry/entry'
import type { Logger } from '../../../shared/logger'
import { storageError } from '../../disk/storage-error'

interface Pending {
  entries: Entry[]
  /** each entry's feed block (makeEntryBlock) */
  blocks: Buffer[]
  resolve: (entries: Entry[]) => void
  reject: (err: Error) => void
}

export interface AppendQueueOptions {
  /** Most entries written in one batch (HistoryStoreOptions.maxBatch). */
  maxBatch: number
  /** the data directory, to name it in storage errors */
  dir: string
  log: Logger
  /** Writes a batch (entries and their blocks) to the conversation's own feed and indexes it; resolves once the feed has it. */
  write: (conversation: string, entries: Entry[], blocks: Buffer[]) => Promise<void>
  /** Keeps the conversation's DAG in memory while a flush runs; returns the release. */
  pin: (conversation: string) => () => void
}

/**
 * The queue of this device's writes, per conversation: calls are stored in call order, those
 * made in one tick in one batch of up to maxBatch entries; when a batch fails, the calls
 * queued on top of its entries fail with it.
 */
export class AppendQueue {
  private readonly queues = new Map<string, Pending[]>()
  private readonly flushing = new Map<string, Promise<void>>()
  /** per conversation, the calls whose write is under way: out of the queue, not yet in the DAG */
  private readonly writing = new Map<string, Pending[]>()

  constructor (private readonly opts: AppendQueueOptions) {}

  /** Whether an entry is queued or being written for a conversation. */
  holds (conversation: string, id: string): boolean {
    return isQueued(this.queues.get(conversation) ?? [], id) || isQueued(this.writing.get(conversation) ?? [], id)
  }

  /** Queues one call's entries and their blocks; resolves with the entries once they are stored. */
  push (conversation: string, entries: Entry[], blocks: Buffer[]): Promise<Entry[]> {
    const stored = new Promise<Entry[]>((resolve, reject) => {
      const queue = this.queues.get(conversation) ?? []
      queue.push({ entries, blocks, resolve, reject })
      this.queues.set(conversation, queue)
      if (!this.flushing.has(conversation)) this.startFlush(conversation)
    })
    // A caller that does not wait for it still hears of a failure: startFlush logs it.
    stored.catch(() => undefined)
    return stored
  }

  /** Once every flush under way has ended. */
  async settled (): Promise<void> {
    await Promise.allSettled([...this.flushing.values()])
  }

  private startFlush (conversation: string): void {
    // Not evicted while entries written to its feed wait to join it: a reload that re-read
    // the feed (refill) would take them in first, and their 'entries' event would be lost.
    const release = this.opts.pin(conversation)
    const run = (async () => {
      // Let appends made in the same tick join this batch.
      await new Promise<void>(resolve => setImmediate(resolve))
      while ((this.queues.get(conversation)?.length ?? 0) > 0) {
        const queue = this.queues.get(conversation) as Pending[]
        const batch: Pending[] = []
        let count = 0
        while (queue.length > 0 && (batch.length === 0 || count + (queue[0] as Pending).entries.length <= this.opts.maxBatch)) {
          const p = queue.shift() as Pending
          batch.push(p)
          count += p.entries.length
        }
        const entries = batch.length === 1 ? (batch[0] as Pending).entries : batch.flatMap(p => p.entries)
        const blocks = batch.length === 1 ? (batch[0] as Pending).blocks : batch.flatMap(p => p.blocks)
        this.writing.set(conversation, batch)
        try {
          await this.opts.write(conversation, entries, blocks)
          for (const p of batch) p.resolve(p.entries)
        } catch (err) {
          const e = storageError(err, this.opts.dir)
          this.opts.log.error(`could not write ${entries.length} entries to conversation ${conversation.slice(0, 12)}: ${e.message}`)
          for (const p of batch) p.reject(e)
          dropDependents(queue, entries, e)
        } finally {
          this.writing.delete(conversation)
        }
      }
      this.queues.delete(conversation)
    })()
    this.flushing.set(conversation, run)
    void run.finally(() => { this.flushing.delete(conversation); release() })
  }
}

/**
 * After `lost` failed to be written: rejects the queued calls that build on them (their
 * entries would reach the feed with a parent it lacks), and those building on those.
 */
function dropDependents (queue: Pending[], lost: Entry[], err: Error): void {
  const gone = new Set(lost.map(e => e.id))
  for (let i = 0; i < queue.length;) {
    const p = queue[i] as Pending
    if (p.entries.some(e => e.parents.some(id => gone.has(id)))) {
      for (const e of p.entries) gone.add(e.id)
      queue.splice(i, 1)
      p.reject(err)
    } else {
      i++
    }
  }
}

/** Whether an entry is among these calls' (a write queue, or the batch being written); newest first, where a writer's parent usually is. */
function isQueued (queue: Pending[], id: string): boolean {
  for (let i = queue.length - 1; i >= 0; i--) {
    const entries = (queue[i] as Pending).entries
    for (let j = entries.length - 1; j >= 0; j--) if ((entries[j] as Entry).id === id) return true
  }
  return false
}
