import { ConversationDag } from '../../shared/conversation/conversation-dag'
import { encodeEntry, reunderstand, type Entry } from '../../shared/entry/entry'
import type { Logger } from '../../shared/logger'
import { dagBytes, entryBytes } from './store/dag-cache'
import type { EntryCache } from './store/entry-cache'
import { decodeBlock, readLocalBlocks } from './store/feed-blocks'
import type { FeedPool } from './store/feed-pool'
import type { ConversationSummary, FeedRecord } from './index/history-index'
import type { IndexWriter } from './index/index-writer'
import type { ManifestLog } from './store/manifest-log'
import type { ResidentDags } from './store/resident-dags'

/** Emitted as 'entries' whenever entries enter a conversation, from this device or a peer. */
export interface EntriesEvent {
  conversation: string
  /** entries that joined the tree, parents before children */
  joined: Entry[]
  /** entries that arrived but wait for a parent */
  waiting: Entry[]
  feed: string
  local: boolean
}

export interface ConversationIndexOptions {
  dags: ResidentDags
  cache: EntryCache
  index: IndexWriter
  pool: FeedPool
  manifest: ManifestLog
  log: Logger
  now: () => number
  /** Most blocks read in one batch. */
  readChunk: number
  device: () => string
  /** The 'entries' event. */
  entries: (ev: EntriesEvent) => void
  /** What this device can serve of a peer's feed grew: the 'feed' event. */
  announce: (rec: FeedRecord) => void
}

/**
 * Each conversation's DAG, entry cache and summary kept in step with its feeds: entries read
 * from or written to a feed go into all three, and the feed's watermark moves once the cache
 * holds them; a conversation not in memory is read back from its cache, or from its feeds
 * when the cache is short.
 */
export class ConversationIndex {
  constructor (private readonly opts: ConversationIndexOptions) {}

  /**
   * Adds entries read from (or written to) a feed up to `upTo` into the DAG, cache and summary.
   * A conversation not in memory is read in first: which entries join and which wait, and the
   * summary's heads, title and waiting count, depend on the whole DAG. `blocks`, of entries
   * written here, are their encodings (makeEntryBlock): sized and cached as they are.
   */
  async indexEntries (rec: FeedRecord, entries: Entry[], upTo: number, local: boolean, blocks?: Buffer[]): Promise<void> {
    const { dags, log } = this.opts
    const dag = dags.resident(rec.conversation) ?? await dags.load(rec.conversation)
    const joined: Entry[] = []
    const fresh: Entry[] = []
    const freshBlocks: Buffer[] | undefined = blocks === undefined ? undefined : []
    let bytes = 0
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i] as Entry
      if (dag.has(e.id)) continue
      fresh.push(e)
      for (const j of dag.add(e)) joined.push(j)
      const block = blocks?.[i]
      if (block !== undefined) freshBlocks?.push(block)
      // an entry read from a feed has its encoding remembered (the feed's text): not encoded again
      bytes += entryBytes(block === undefined ? Buffer.byteLength(encodeEntry(e)) : block.length)
    }
    dags.grew(dag, bytes)
    // The summary and listeners see the DAG as soon as it changes; the watermark moves
    // only once the cache holds the entries below it.
    this.summarise(dag)
    if (fresh.length > 0) {
      // what joined is joined in the DAG: the fresh entries not joined there are those waiting
      const ev: EntriesEvent = { conversation: rec.conversation, joined, waiting: fresh.filter(e => !dag.isJoined(e.id)), feed: rec.key, local }
      try {
        this.opts.entries(ev)
      } catch (err) {
        // A listener's bug must not stop indexing: report it and go on.
        log.error(`a listener of new entries failed: ${(err as Error).stack ?? String(err)}`)
      }
    }
    const cached = this.opts.cache.append(rec.conversation, fresh, freshBlocks).then(() => {
      const grew = upTo > rec.indexed
      rec.indexed = Math.max(rec.indexed, upTo)
      if (grew) this.opts.index.changed('feed', rec.key)
      this.opts.manifest.grew(rec.key)
      // What this device can serve of a peer's feed is its watermark: peers hear of it now.
      if (grew && !local) this.opts.announce({ ...rec })
    })
    // A peer feed's reader uses the watermark as its cursor: it waits. A local append is
    // acknowledged once the feed has it; the cache (derived) catches up behind it.
    if (!local) return cached
    cached.catch(err => { log.error(`could not write the entry cache of ${rec.conversation.slice(0, 12)}: ${(err as Error).message}; it is rebuilt from the feeds`) })
  }

  /** Writes a conversation's summary into the index, from its DAG. */
  summarise (dag: ConversationDag): void {
    const { index } = this.opts
    const root = dag.root
    // A root this version does not understand (a newer one wrote it) is listed all the same.
    if (root === undefined) {
      index.scheduleIndexSave()
      return
    }
    const s: ConversationSummary = {
      id: dag.conversation,
      title: dag.title(),
      createdAt: root.ts,
      updatedAt: dag.updatedAt,
      heads: dag.headIds(),
      size: dag.size,
      waiting: dag.size - dag.joinedSize
    }
    // only a directory this device gave it: one a peer wrote is not where this device works
    const cwd = dag.cwdOf(this.opts.device())
    if (cwd !== undefined) s.cwd = cwd
    const revival = dag.meta('autoRevival')
    const autoRevival = revival !== undefined ? revival.value === true : root.kind === 'conversation' ? root.body.autoRevival : undefined
    if (autoRevival !== undefined) s.autoRevival = autoRevival
    index.state.conversations[dag.conversation] = s
    index.changed('conversation', dag.conversation)
  }

  /**
   * A conversation's DAG read from its entry cache, or again from its feeds when the cache
   * is short or torn, with its estimated size (ResidentDags keeps it).
   */
  async readDag (conversation: string): Promise<{ dag: ConversationDag; bytes: number }> {
    const { log } = this.opts
    const { entries, torn, bytes } = await this.opts.cache.read(conversation)
    const d = new ConversationDag(conversation, [], { now: this.opts.now })
    for (const e of entries) if (e.conversation === conversation) d.add(reunderstand(e))
    let size = dagBytes(entries.length, bytes)
    const expected = this.opts.index.state.conversations[conversation]?.size ?? 0
    if (torn > 0 || d.size < expected) {
      // Derived state went missing or bad: read the conversation again from its feeds.
      // A torn last line with nothing missing is what a kill mid-write leaves: expected, not a warning.
      const say = d.size >= expected ? log.info : log.warn
      say.call(log, `entry cache of ${conversation.slice(0, 12)} ${d.size < expected ? `is missing entries (${d.size} of ${expected})` : 'ends in a torn line'} (${torn} torn line(s)); re-reading its feeds`)
      size = await this.refill(d)
    }
    return { dag: d, bytes: size }
  }

  /**
   * Re-reads every indexed block of a conversation's feeds into `dag` and rewrites its cache;
   * returns the DAG's estimated size. This device's own feeds are read whole: an entry the
   * feed acknowledged whose cache line failed (a full disk) is not behind the watermark yet.
   */
  private async refill (dag: ConversationDag): Promise<number> {
    const { pool, readChunk } = this.opts
    for (const rec of Object.values(this.opts.index.state.feeds)) {
      if (rec.conversation !== dag.conversation || (!rec.own && rec.indexed <= 1)) continue
      const from = { ...rec, device: rec.own ? this.opts.device() : rec.device }
      await pool.pinWhile(rec.key, async () => {
        const core = await pool.core(rec.key)
        const end = rec.own ? core.length : rec.indexed
        for (let start = 1; start < end; start += readChunk) {
          const blocks = await readLocalBlocks(core, start, Math.min(end, start + readChunk))
          for (const block of blocks) {
            // Invalid blocks were reported when the feed was first read: skipped quietly here.
            const d = block === null ? null : decodeBlock(block, from)
            if (d?.ok === true) dag.add(d.entry)
          }
        }
      })
    }
    await this.opts.index.markDirty()
    const entries = [...dag.entries()]
    await this.opts.cache.rewrite(dag.conversation, entries)
    return dagBytes(entries.length, entries.reduce((n, e) => n + Buffer.byteLength(encodeEntry(e)), 0))
  }
}
