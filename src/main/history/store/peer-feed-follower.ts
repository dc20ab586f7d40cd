import type Hypercore from 'hypercore'
import { rememberEncoding, type Entry } from '../../../shared/entry/entry'
import type { Logger } from '../../../shared/logger'
import { HEX32 } from '../../../shared/entry/hex32'
import { verifyFeedHeader } from './feed-header'
import { decodeBlock, readLocalBlocks } from './feed-blocks'
import type { FeedPool } from './feed-pool'
import { FeedSlots } from './feed-slots'
import type { FeedRecord, IndexState } from '../index/history-index'
import type { ManifestLog } from './manifest-log'

/** Emitted as 'invalid' for anything a peer's feed holds that is not a valid entry. */
export interface InvalidEvent {
  feed: string
  seq: number
  error: string
}

export interface PeerFeedFollowerOptions {
  pool: FeedPool
  manifest: ManifestLog
  log: Logger
  /** Most blocks read, checked and indexed in one batch (HistoryStoreOptions.readChunk). */
  readChunk: number
  /** Open and follow peers' feeds (HistoryStoreOptions.watchPeers). */
  watchPeers: boolean
  /** the index (its feed records) */
  state: () => IndexState
  device: () => string
  closing: () => boolean
  /** Before anything read is shown, the index on disk must say it may lag the feeds. */
  markDirty: () => Promise<void>
  /** A feed record changed: it goes into the next index save. */
  changed: (key: string) => void
  /** A feed was learned: the 'feed' event. */
  announce: (rec: FeedRecord) => void
  /** How many blocks of a feed this device can serve (HistoryStore.availableLength). */
  available: (key: string) => number
  /** Whether a connected peer announced more than `length` blocks of a feed (HistoryStore.setPeers). */
  served: (key: string, length: number) => boolean
  /** Reads a conversation's DAG into memory. */
  load: (conversation: string) => Promise<unknown>
  /** Indexes entries read from a feed up to `upTo`; resolves once the watermark moved. */
  index: (rec: FeedRecord, entries: Entry[], upTo: number) => Promise<void>
  /** A block is not a valid entry: the 'invalid' event. */
  invalid: (ev: InvalidEvent) => void
}

/**
 * Peers' feeds opened and downloading at once, at most. Each one opened asks the peer to open
 * it too, and until the peer has, its messages wait in the peer's connection buffer, which
 * stops reading past 32 KiB (Protomux); and the peer answers a batch of opens only once all of
 * it is open. Thousands opened at once (a first sync) served none until nearly all were open.
 */
export const PEER_FEEDS_AT_ONCE = 64

/**
 * Following peers' feeds: learning them from the sync layer, opening one when a peer has more
 * of it (PEER_FEEDS_AT_ONCE at a time, in the order peers announce them: newest first),
 * downloading it whole and reading each block that arrives (one reader per feed), checked
 * against the feed's signed header before it is indexed.
 */
export class PeerFeedFollower {
  private readonly watched = new Set<string>()
  /** a slot per feed being opened and downloaded, from its open until it is downloaded, closed, failed, or its peers are gone */
  private readonly slots = new FeedSlots(PEER_FEEDS_AT_ONCE, key => { void this.startFeed(key) })
  private readonly pumping = new Map<string, Promise<void>>()
  private readonly pumpAgain = new Set<string>()
  /** feeds whose header was refused this session: not read again */
  private readonly refused = new Set<string>()
  /** the longest length peers announced for a feed: it is not closed before it is read that far */
  private readonly wanted = new Map<string, number>()
  /** the open sessions this follower reads as blocks arrive (its listeners and download range are set once a session) */
  private readonly following = new WeakSet<Hypercore.Core>()

  constructor (private readonly opts: PeerFeedFollowerOptions) {}

  /** Whether a feed's reader runs now. */
  reading (key: string): boolean { return this.pumping.has(key) }

  /** The longest length peers announced for a feed (0 if none). */
  wantedLength (key: string): number { return this.wanted.get(key) ?? 0 }

  /** A feed was closed (as idle): it is watched again when a peer has more of it. */
  forget (key: string): void {
    this.watched.delete(key)
    // one still queued stays queued: its open comes with its slot
    if (this.slots.holds(key)) this.slots.release(key)
  }

  /** Feeds holding a slot, and waiting for one (tests and benchmarks read it). */
  get slotUse (): { active: number; waiting: number } { return { active: this.slots.active, waiting: this.slots.waiting } }

  /**
   * A connection closed: a feed whose slot waits on peers, and that no peer left has more of,
   * gives its slot to the next. It stays open and downloading, so the next connection
   * replicates it (Corestore attaches every downloading core) without a slot.
   */
  connectionClosed (stream: unknown): void {
    for (const key of this.slotHolders()) {
      const core = this.opts.pool.get(key)
      const rec = this.opts.state().feeds[key]
      // one still opening holds its slot until its open ends (then it asks whether a peer can send it)
      if (core !== undefined && core.opened && rec !== undefined) this.releaseIfDone(rec, core, stream)
    }
  }

  private slotHolders (): string[] {
    const out: string[] = []
    for (const key of this.watched) if (this.slots.holds(key)) out.push(key)
    return out
  }

  /**
   * Adds a feed of a conversation learned from a peer, and follows it. Resolves once its
   * manifest record is written.
   */
  async addFeed (conversation: string, key: Buffer | string): Promise<void> {
    const k = typeof key === 'string' ? key : key.toString('hex')
    if (!HEX32.test(k)) throw new Error(`not a feed key: ${k.slice(0, 70)}`)
    if (!HEX32.test(conversation)) throw new Error(`not a conversation id: ${conversation.slice(0, 70)}`)
    const state = this.opts.state()
    if (state.feeds[k] !== undefined) return
    const rec: FeedRecord = { key: k, conversation, device: '', own: false, indexed: 0 }
    state.feeds[k] = rec
    await this.opts.markDirty()
    // The record is written while the feed downloads; its reader waits for it before indexing.
    const recorded = this.opts.manifest.recordLearned(k)
    this.opts.changed(k)
    this.opts.announce({ ...rec })
    if (this.opts.watchPeers) void this.watchFeed(rec)
    await recorded
  }

  /**
   * Forgets the peers' feeds of which no block was ever verified here (at start): they hold
   * nothing here, and whoever can serve them announces them again. What a peer made up (feed
   * keys nobody holds) so goes no further than the session it was said in. Returns how many.
   */
  forgetUnverified (): number {
    let n = 0
    for (const rec of Object.values(this.opts.state().feeds)) {
      if (rec.own || rec.indexed > 0) continue
      this.forgetRecord(rec.key)
      n++
    }
    return n
  }

  /**
   * Forgets one peer's feed of which no block verified here, while running (the sync layer
   * evicted it to take another peer's: feed-admission.ts): its record as forgetUnverified
   * forgets one at start, and its download slot or place in the queue and its open core with
   * it. It is followed again when a peer announces it again. False, and nothing done, for this
   * device's own feed, one verified, or one whose blocks are being read and checked now.
   */
  forgetUnverifiedFeed (key: string): boolean {
    const rec = this.opts.state().feeds[key]
    if (rec === undefined) return true
    if (rec.own || rec.indexed > 0 || this.pumping.has(key)) return false
    this.forgetRecord(key)
    this.watched.delete(key)
    this.slots.release(key)
    this.wanted.delete(key)
    this.refused.delete(key)
    this.opts.pool.drop(key)
    return true
  }

  private forgetRecord (key: string): void {
    delete this.opts.state().feeds[key]
    this.opts.changed(key)
  }

  /** Whether `rec` is still this device's record of its feed (not forgotten, nor learned again since). */
  private held (rec: FeedRecord): boolean {
    return this.opts.state().feeds[rec.key] === rec
  }

  /**
   * A peer holds `length` blocks of a feed: follow it if the peer has blocks this device has
   * not indexed yet. False if the feed is new here (the store adds it).
   */
  updateFeed (conversation: string, key: string, length: number): boolean {
    if (length > (this.wanted.get(key) ?? 0)) this.wanted.set(key, length)
    const rec = this.opts.state().feeds[key]
    if (rec === undefined) return false
    if (rec.conversation !== conversation) return true
    // A peer lacking blocks this device has opens the feed's channel itself, and Corestore
    // opens the core for it then (HistoryStore keeps a session on it while the peer lacks
    // them): opening here every feed a peer lacks, thousands at a first sync, held up those it asked for.
    if (rec.own || rec.indexed >= length || !this.opts.watchPeers) return true
    void this.watchFeed(rec)
    return true
  }

  private async watchFeed (rec: FeedRecord): Promise<void> {
    if (this.watched.has(rec.key)) {
      const open = this.opts.pool.get(rec.key)
      // a peer has more: a session left passive downloads again
      if (open !== undefined) { this.opts.pool.activate(rec.key); this.pump(rec, open) }
      return
    }
    this.watched.add(rec.key)
    this.slots.want(rec.key)
  }

  /** A feed got its slot: open it, download it whole, read it as it arrives. */
  private async startFeed (key: string): Promise<void> {
    const rec = this.opts.state().feeds[key]
    if (rec === undefined || this.opts.closing() || !this.watched.has(key)) { this.slots.release(key); return }
    // No connected peer has more of it (the one that announced it is gone): it waits for the
    // next announcement, not in a slot, where it would hold up feeds a connected peer can send.
    if (!this.opts.served(key, rec.indexed)) { this.slots.release(key); this.watched.delete(key); return }
    let core: Hypercore.Core
    try {
      core = await this.opts.pool.core(rec.key)
    } catch (err) {
      if (!this.held(rec)) return // forgotten while it opened (its core closed): its slot went with it
      this.slots.release(key)
      // watched again when a peer announces it again
      this.watched.delete(key)
      if (!this.opts.closing()) this.opts.log.warn(`cannot open feed ${rec.key.slice(0, 12)}: ${(err as Error).message}`)
      return
    }
    if (this.opts.closing()) { this.slots.release(key); return }
    // forgotten while it opened: its slot went with it
    if (!this.held(rec)) return
    // A feed given a slot again while its core stayed open (announced again after nobody served
    // it) is already followed: listeners and a download range added each time would pile up.
    if (!this.following.has(core)) {
      this.following.add(core)
      const more = (): void => {
        if (!this.held(rec)) return
        this.opts.pool.touch(rec.key)
        this.releaseIfDone(rec, core)
        this.pump(rec, core)
      }
      core.on('append', more)
      // The reader reads only what is stored here: it runs again as each block arrives.
      core.on('download', more)
      // Keep the whole history locally, for offline use.
      core.download({ start: 0, end: -1 })
    }
    if (core.length === 0) this.releaseIfNobodyServes(rec, core)
    // the connection it was opened for may have closed meanwhile
    this.releaseIfDone(rec, core)
    this.pump(rec, core)
  }

  /**
   * A feed of which nothing has arrived gives its slot back once no connection can send it any:
   * a peer without the core refuses its replication channel, and Hypercore's update then ends
   * without a length. A peer that announced a feed it cannot serve (made up) would otherwise
   * hold a slot for as long as it stays connected, and with PEER_FEEDS_AT_ONCE such feeds, every
   * other feed would wait. It is followed again when a peer announces it again.
   */
  private releaseIfNobodyServes (rec: FeedRecord, core: Hypercore.Core): void {
    core.update({ wait: true }).then(found => {
      if (found || core.length > 0 || !this.held(rec) || !this.slots.holds(rec.key) || this.opts.closing()) return
      this.slots.release(rec.key)
      this.watched.delete(rec.key)
      // not kept open for a length nobody serves (HistoryStore.keepOpen)
      this.wanted.delete(rec.key)
    }, () => undefined) // a session closed meanwhile: its slot went with it
  }

  /**
   * A feed holding a slot gives it back once it holds every block announced of it, or once no
   * connected peer has more of it: by what peers announced (one that announced it may be gone),
   * and by what those replicating it (on a connection other than `closing`) said they hold
   * (a peer that announced more than it serves must not hold a slot for ever).
   */
  private releaseIfDone (rec: FeedRecord, core: Hypercore.Core, closing: unknown = null): void {
    if (!this.slots.holds(rec.key)) return
    const have = core.contiguousLength
    const peers = core.peers.filter(p => p.stream !== closing)
    const whole = core.length > 0 && have >= Math.max(core.length, this.wantedLength(rec.key))
    const noneHasMore = peers.length > 0 && core.length > 0 && have >= core.length && peers.every(p => p.remoteSynced && p.remoteContiguousLength <= have)
    if (this.refused.has(rec.key) || whole || noneHasMore || !this.opts.served(rec.key, have)) this.slots.release(rec.key)
  }

  /** Reads a peer feed's new blocks; one reader per feed, re-run if more arrived meanwhile. */
  private pump (rec: FeedRecord, core: Hypercore.Core): void {
    if (this.opts.closing()) return
    if (this.pumping.has(rec.key)) { this.pumpAgain.add(rec.key); return }
    const run = (async () => {
      do {
        this.pumpAgain.delete(rec.key)
        await this.readFeed(rec, core)
      } while (this.pumpAgain.has(rec.key) && !this.opts.closing())
      this.releaseIfDone(rec, core)
    })().catch(err => {
      // a feed that cannot be read waits no longer in a slot
      this.slots.release(rec.key)
      if (!this.opts.closing() && !isClosingError(err)) this.opts.log.warn(`reading feed ${rec.key.slice(0, 12)} stopped: ${(err as Error).message}`)
    })
    this.pumping.set(rec.key, run)
    void run.finally(() => this.pumping.delete(rec.key))
  }

  /**
   * Reads, checks and indexes the blocks of a feed past its watermark that this device's
   * storage holds (its contiguous prefix). It never asks a peer for a block: the feed's
   * download range fetches them, and each one downloaded runs the reader again (watchFeed).
   * Following a peer (`whole`), it reads a batch once it is complete (readChunk blocks, or
   * up to the feed's length), as a reader waiting for those blocks did: a sync of thousands
   * of feeds at once would otherwise index each a block or two at a time, and the work per
   * batch (summary, cache write, watermark) would be done per block. Recovery reads own
   * feeds with it too (`whole` false: whatever the disk holds).
   */
  async readFeed (rec: FeedRecord, core: Hypercore.Core, whole = true): Promise<void> {
    const { readChunk } = this.opts
    while (rec.indexed < core.contiguousLength && !this.opts.closing() && !this.refused.has(rec.key) && this.held(rec)) {
      const start = rec.indexed
      const end = Math.min(core.contiguousLength, start + readChunk)
      if (whole && end < Math.min(core.length, start + readChunk)) return
      // Before anything read here is shown, the index on disk must say it may lag the feeds:
      // only then does recovery after a crash read them past its watermarks.
      await this.opts.markDirty()
      // The header comes with the first blocks: one read, not two.
      const blocks = await readLocalBlocks(core, start, end)
      let first = 0
      if (start === 0) {
        const block = blocks[0]
        if (block === null || block === undefined) return
        // Nothing of a learned feed is shown before the manifest lists it: after a crash,
        // recovery finds feeds through the manifest, and a feed it does not list is lost.
        if (!rec.own && !this.opts.manifest.lists(rec.key)) await this.opts.manifest.recordLearned(rec.key)
        try {
          const h = verifyFeedHeader(block, Buffer.from(rec.key, 'hex'), { type: 'arbor/conversation', conversation: rec.conversation })
          if (rec.own && h.device !== this.opts.device()) throw new Error(`feed ${rec.key.slice(0, 12)} was listed as this device's but is signed by ${h.device.slice(0, 12)}`)
          rec.device = h.device
        } catch (err) {
          // Without a valid header nothing in the feed can be attributed: refuse it whole,
          // once (every block that arrives runs the reader again).
          this.refused.add(rec.key)
          this.reportInvalid({ feed: rec.key, seq: 0, error: (err as Error).message })
          return
        }
        rec.indexed = 1
        this.opts.manifest.headerIndexed(rec.key) // from here on the watermark says it: indexed > 0 means recorded
        this.opts.changed(rec.key)
        first = 1
      }
      const good: Entry[] = []
      blocks.forEach((block, i) => {
        const seq = start + i
        if (i < first || block === null) return
        const d = decodeBlock(block, rec)
        if (!d.ok) { this.reportInvalid({ feed: rec.key, seq, error: d.error }); return }
        rememberEncoding(d.entry, d.text) // the cache stores the text as received: no second encoding
        good.push(d.entry)
      })
      await this.opts.load(rec.conversation)
      await this.opts.index(rec, good, end)
    }
  }

  private reportInvalid (ev: InvalidEvent): void {
    this.opts.log.warn(`skipped block ${ev.seq} of feed ${ev.feed.slice(0, 12)}: ${ev.error}`)
    this.opts.invalid(ev)
  }

  /**
   * Stops following: a reader waiting for blocks no connected peer has would wait forever,
   * so closing the followed feeds cancels those waits; resolves once every reader has ended.
   */
  async close (): Promise<void> {
    this.slots.clear()
    await Promise.allSettled([...this.watched].map(key => this.opts.pool.get(key)?.close()))
    await Promise.allSettled([...this.pumping.values()])
  }
}

function isClosingError (err: unknown): boolean {
  const code = (err as { code?: string })?.code
  return code === 'REQUEST_CANCELLED' || code === 'SESSION_CLOSED'
}
