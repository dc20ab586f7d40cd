import { EventEmitter } from 'node:events'
import path from 'node:path'
import fs from 'node:fs/promises'
import type { Duplex } from 'node:stream'
import Corestore from 'corestore'
import type Hypercore from 'hypercore'
import crypto from 'hypercore-crypto'
import { ConversationDag } from '../../shared/conversation/conversation-dag'
import type { Entry, EntryDraft } from '../../shared/entry/entry'
import { makeEntryBlock } from './store/entry-codec'
import { Lifecycle } from '../../shared/lifecycle'
import { consoleLogger, type Logger } from '../../shared/logger'
import type { DeviceKeyPair } from './store/feed-header'
import { EntryCache } from './store/entry-cache'
import { FeedPool, withoutDownloadingLinger } from './store/feed-pool'
import { DAG_BYTES, type DagCacheStats } from './store/dag-cache'
import { ResidentDags } from './store/resident-dags'
import { ConversationIndex, type EntriesEvent } from './conversation-index'
import { IndexWriter } from './index/index-writer'
import { recoverIndex } from './index-recovery'
import { HistoryIndexFile, indexDir, sortSummaries, type ConversationSummary, type FeedRecord, type IndexState } from './index/history-index'
import { ManifestLog } from './store/manifest-log'
import { AppendQueue } from './store/append-queue'
import { entriesOfCall } from './call-entries'
import { OwnFeeds, hex } from './store/own-feeds'
import { PeerFeedFollower, type InvalidEvent } from './store/peer-feed-follower'
import { ViewState } from './view-state'
import { storageError } from '../disk/storage-error'

export interface HistoryStoreOptions {
  /** The data directory; the store keeps its Corestore and indexes under it. */
  dir: string
  log?: Logger
  /** Wall clock for entry timestamps (display only). */
  now?: () => number
  /** Most entries written in one Hypercore append. */
  maxBatch?: number
  /** Most blocks of a feed read, checked and indexed in one batch (tests split feeds with it). */
  readChunk?: number
  /** How long feed-length updates may wait before they are written to the manifest. */
  manifestDelayMs?: number
  /** How long index changes may wait before the index file is rewritten. */
  indexDelayMs?: number
  /** Open and follow peers' feeds (false for one-shot commands that do not sync). */
  watchPeers?: boolean
  /**
   * Feeds unused this long are closed: every open feed is replicated on every new
   * connection, so idle ones would make a reconnect cost grow with the whole history.
   */
  idleCloseMs?: number
  /**
   * The estimated bytes of conversation DAGs kept in memory (dag-cache.ts); the least
   * recently used are dropped beyond it and read again from the entry cache when needed.
   */
  dagCacheBytes?: number
}

/**
 * 64 MiB: the few conversations a person and their agents work in stay in memory (a
 * 10,000-entry one is ~17 MiB by the estimate), while a node that has opened every one of
 * 10,000 conversations (sync and placement open them) stays within a stated size.
 */
export const DEFAULT_DAG_CACHE_BYTES = 64 * 1024 * 1024

export type { EntriesEvent } from './conversation-index'
export type { InvalidEvent } from './store/peer-feed-follower'

export interface HistoryStoreEvents {
  entries: [EntriesEvent]
  invalid: [InvalidEvent]
  /** a feed was added, or this device can serve more of it */
  feed: [FeedRecord]
}

export interface NewConversation {
  title?: string
  cwd?: string
  model?: string
  autoRevival?: boolean
  /** a fork's source (conversation.fork) */
  forkedFrom?: { conversation: string; entry: string }
}

import { ConversationNotFoundError } from './conversation-not-found'
export { ConversationNotFoundError }

/** blocks read and indexed in one batch: one storage read, one cache write, one summary */
const READ_CHUNK = 256
/**
 * The history of every conversation this device holds (DESIGN.md, "History").
 * One Corestore per device; one feed per conversation written by this device; one
 * manifest feed listing every conversation feed held, with lengths. A conversation is
 * the union of the entries of all its feeds, kept as a ConversationDag. Summaries and
 * entry caches are derived state under index/, rebuildable from the feeds.
 */
export class HistoryStore extends EventEmitter<HistoryStoreEvents> {
  readonly dir: string
  readonly corestore: Corestore
  private readonly log: Logger
  private readonly now: () => number
  private readonly life: Lifecycle
  private readonly indexFile: HistoryIndexFile
  private readonly cache: EntryCache
  private readonly view: ViewState
  private keyPair_: DeviceKeyPair | null = null
  /** the key pair's public key in hex, made once: every entry written and summarised asks for it */
  private device_: string | null = null
  private readonly manifestLog: ManifestLog
  private readonly index: IndexWriter
  private readonly pool: FeedPool
  private readonly ownFeeds: OwnFeeds
  private readonly follower: PeerFeedFollower
  /** whether a connected peer lacks blocks of a feed below a length (set by the sync layer) */
  private peersLack: (key: string, length: number) => boolean = () => false
  /** whether a connected peer has blocks of a feed past a length (set by the sync layer; without one, any may) */
  private peersHave: (key: string, length: number) => boolean = () => true
  private readonly dags: ResidentDags
  private readonly conversations: ConversationIndex
  private readonly appends: AppendQueue
  private closing = false

  constructor (opts: HistoryStoreOptions) {
    super()
    const dir = this.dir = path.resolve(opts.dir)
    const log = this.log = opts.log ?? consoleLogger('history')
    const now = this.now = opts.now ?? Date.now
    const readChunk = Math.max(1, opts.readChunk ?? READ_CHUNK)
    // what the parts ask of the store, read when they ask (the index is replaced as the store opens)
    const closing = (): boolean => this.closing
    const device = (): string => this.device
    const state = (): IndexState => this.state
    const markDirty = (): Promise<void> => this.index.markDirty()
    const changed = (key: string): void => { this.index.changed('feed', key) }
    const announce = (rec: FeedRecord): void => { this.emit('feed', rec) }
    const corestore = this.corestore = new Corestore(path.join(dir, 'corestore'))
    this.indexFile = new HistoryIndexFile(indexDir(dir))
    const index = this.index = new IndexWriter({ file: this.indexFile, log, delayMs: opts.indexDelayMs ?? 1000, closing })
    const cache = this.cache = new EntryCache(path.join(dir, 'index', 'entries'))
    this.view = new ViewState(path.join(dir, 'view-state.json'))
    const dags = this.dags = new ResidentDags(opts.dagCacheBytes ?? DEFAULT_DAG_CACHE_BYTES, conversation => this.conversations.readDag(conversation))
    const pool = this.pool = new FeedPool({ corestore, log, idleCloseMs: opts.idleCloseMs ?? 10_000, keepOpen: (key, core) => this.keepOpen(key, core), closed: key => { this.follower.forget(key) } })
    const manifest = this.manifestLog = new ManifestLog({
      corestore, dir, log, delayMs: opts.manifestDelayMs ?? 1000, device, closing, feed: key => this.state.feeds[key],
      recorded: (length, save) => { this.state.manifestIndexed = length; if (save) index.scheduleIndexSave() }
    })
    this.appends = new AppendQueue({ maxBatch: opts.maxBatch ?? 1000, dir, log, write: (c, entries, blocks) => this.writeOwn(c, entries, blocks), pin: c => dags.pin(c) })
    this.ownFeeds = new OwnFeeds({ corestore, pool, manifest, state, device, keyPair: () => this.keyPair, markDirty, changed, announce })
    this.follower = new PeerFeedFollower({
      pool, manifest, log, readChunk, watchPeers: opts.watchPeers ?? true, state, device, closing, markDirty, changed, announce,
      available: key => this.availableLength(key),
      served: (key, length) => this.peersHave(key, length),
      load: conversation => dags.load(conversation),
      index: (rec, entries, upTo) => this.conversations.indexEntries(rec, entries, upTo, false),
      invalid: ev => { this.emit('invalid', ev) }
    })
    this.conversations = new ConversationIndex({ dags, cache, index, pool, manifest, log, now, readChunk, device, announce, entries: ev => { this.emit('entries', ev) } })
    this.life = new Lifecycle(() => this.openStore(), () => this.closeStore())
  }

  ready (): Promise<void> { return this.life.ready() }
  close (): Promise<void> { return this.life.close() }
  get opened (): boolean { return this.life.opened }
  get closed (): boolean { return this.life.closed }

  /** This device's public key (hex): the author of every entry it writes. */
  get device (): string {
    if (this.device_ === null) throw new Error('HistoryStore is not ready')
    return this.device_
  }

  /** The key of this device's manifest feed, for peers to replicate. */
  get manifestKey (): Buffer {
    return this.manifestLog.key
  }

  private async openStore (): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true })
    try {
      await this.corestore.ready()
    } catch (err) {
      throw storageError(err, this.dir)
    }
    // A feed Corestore opens because a peer opened its channel is held in the pool like any
    // other, so the idle sweep keeps it open while the peer lacks blocks of it (keepOpen).
    this.corestore.watch(this.onCoreOpened)
    this.keyPair_ = await this.corestore.createKeyPair('arbor/device')
    this.device_ = this.keyPair_.publicKey.toString('hex')
    await this.manifestLog.open(this.keyPair)
    await Promise.all([this.cache.ready(), this.view.load()])
    const { dir, log, device, indexFile: file, index, cache, manifestLog: manifest, pool, follower, dags, conversations } = this
    await recoverIndex({ dir, log, device, file, index, cache, manifest, pool, follower, dags, conversations })
    const forgotten = follower.forgetUnverified()
    if (forgotten > 0) log.info(`${forgotten} feed(s) that peers announced and of which nothing arrived are forgotten until a peer announces them again`)
    // Peer feeds are opened only when a peer has more of them (updateFeed), and idle
    // feeds are closed: a reconnect with nothing new opens no feed at all.
    this.pool.start()
  }

  /**
   * Whether an idle feed stays open: while it is read, not yet indexed as far as a peer
   * announced, or still lacking at a connected peer (FeedPool closes the others).
   */
  private keepOpen (key: string, core: Hypercore.Core): boolean {
    if (this.follower.reading(key)) return true
    const rec = this.state.feeds[key]
    if (rec === undefined) return true
    if (!rec.own && rec.indexed < Math.max(core.length, this.follower.wantedLength(key))) return true
    return this.peersLack(key, this.availableLength(key))
  }

  /** The open feeds (tests reach for them). */
  private get cores (): Map<string, Hypercore.Core> { return this.pool.cores }

  /** Runs fn with a feed pinned open (FeedPool.pinWhile). */
  private pinWhile<T> (key: string, fn: () => Promise<T>): Promise<T> { return this.pool.pinWhile(key, fn) }

  /** Corestore opened a core (for this store, or for a peer that opened its channel). */
  private readonly onCoreOpened = (core: Corestore.OpenedCore): void => {
    withoutDownloadingLinger(core)
    core.ready().then(() => {
      const key = core.key?.toString('hex')
      // the pool's own opens are in it by now; only a known conversation feed is held
      if (key === undefined || this.closing || this.pool.has(key) || this.state.feeds[key] === undefined) return
      this.pool.adopt(key)
    }, () => undefined) // a core that fails to open fails for whoever opened it, and is reported there
  }

  private async closeStore (): Promise<void> {
    this.closing = true
    this.corestore.unwatch(this.onCoreOpened)
    this.pool.stop()
    await this.appends.settled()
    // every reader has finished before the index is saved
    await this.follower.close()
    await this.manifestLog.settled()
    await this.cache.close()
    this.manifestLog.stop()
    this.index.stop()
    let clean = true
    try {
      if (this.manifestLog.writable) await this.manifestLog.writeManifestLengths()
    } catch (err) {
      clean = false
      this.log.error(`could not record feed lengths in the manifest: ${(err as Error).message}`)
    }
    // A failed save (a full disk) leaves the previous files, which say to reconcile: the
    // store still closes, so its directory is free to open again.
    if (this.index.marked || !this.state.clean) {
      this.state.clean = clean
      await this.index.saveIndex().catch(err => { this.log.error(`could not save the index: ${storageError(err, this.dir).message}`) })
    }
    await this.view.save().catch(err => { this.log.error(`could not save the selected entries: ${storageError(err, this.dir).message}`) })
    try {
      await this.corestore.close()
    } catch (err) {
      // A feed whose creation failed (a full disk) makes Corestore's close throw before it
      // closes the storage: close that here, so the data directory is free to open again.
      this.log.warn(`closing the feeds: ${storageError(err, this.dir).message}`)
      await this.corestore.storage.close()
    }
  }

  // ---------------------------------------------------------------- writing

  /** Starts a conversation: writes its root entry to a new feed of this device. */
  async createConversation (opts: NewConversation = {}): Promise<Entry> {
    return (await this.writeConversation(opts, () => []))[0] as Entry
  }

  /**
   * Starts a conversation with entries below its root (an import): `children`, given the
   * root's id, are drafts whose parents are `$k` or the root. One batch, the root first: the
   * conversation is stored whole or not at all. Resolves with every entry written.
   */
  async writeConversation (opts: NewConversation, children: (root: string) => EntryDraft[]): Promise<Entry[]> {
    await this.ready()
    const body = {
      title: opts.title ?? '',
      nonce: crypto.randomBytes(16).toString('hex'),
      ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
      ...(opts.model !== undefined ? { model: opts.model } : {}),
      ...(opts.autoRevival !== undefined ? { autoRevival: opts.autoRevival } : {}),
      ...(opts.forkedFrom !== undefined ? { forkedFrom: { conversation: opts.forkedFrom.conversation, entry: opts.forkedFrom.entry } } : {})
    }
    const { entry: root, block } = makeEntryBlock({ kind: 'conversation', body, parents: [] }, { conversation: null, device: this.device, ts: this.now() })
    // built (and checked) before anything is written: a bad draft refuses the whole conversation
    const drafts = children(root.id)
    const rest = drafts.length === 0
      ? { entries: [], blocks: [] }
      : entriesOfCall(drafts, { conversation: root.id, device: this.device, ts: this.now(), known: id => id === root.id, waits: () => false })
    const dag = new ConversationDag(root.id, [], { now: this.now })
    this.dags.set(root.id, dag, DAG_BYTES)
    try {
      await this.writeOwn(root.id, [root, ...rest.entries], [block, ...rest.blocks])
    } catch (err) {
      if (this.dags.peek(root.id)?.size === 0) this.dags.forget(root.id)
      throw storageError(err, this.dir)
    }
    return [root, ...rest.entries]
  }

  /**
   * Appends entries written on this device. A parent may be `$k`: the k-th draft of the
   * same call, so one call can write a chain. Entries are checked first (a bad one refuses
   * the whole call with an InvalidEntryError); concurrent calls are written together in
   * one batch. Resolves, with the complete entries, once they are stored.
   */
  async append (conversation: string, drafts: EntryDraft[]): Promise<Entry[]> {
    return await (await this.enqueue(conversation, drafts)).stored
  }

  /**
   * What append does, resolving as soon as the entries are built and queued: `entries` are
   * what will be stored (a later call may name them as parents), `stored` resolves with them
   * once the feed has them, and is the acknowledgement. Calls for one conversation are
   * stored in call order; if a write fails, entries queued on top of the lost ones fail too.
   */
  async enqueue (conversation: string, drafts: EntryDraft[]): Promise<{ entries: Entry[]; stored: Promise<Entry[]> }> {
    // Awaited only when there is something to wait for: each await is a hop in which other
    // work runs, and an agent enqueues at every step.
    if (!this.life.opened) await this.ready()
    if (this.closing) throw new Error('the history store is closing')
    const dag = this.dags.resident(conversation) ?? await this.dags.load(conversation)
    if (dag.root === undefined) throw new ConversationNotFoundError(conversation, 'no conversation with a root entry')
    const { entries, blocks } = entriesOfCall(drafts, {
      conversation,
      device: this.device,
      ts: this.now(),
      known: id => dag.isJoined(id) || this.appends.holds(conversation, id),
      waits: id => dag.has(id)
    })
    if (entries.length === 0) return { entries, stored: Promise.resolve([]) }
    return { entries, stored: this.appends.push(conversation, entries, blocks) }
  }

  /** Writes entries (and their blocks) to this device's feed of a conversation and indexes them; resolves once the feed has them. */
  private async writeOwn (conversation: string, entries: Entry[], blocks: Buffer[]): Promise<void> {
    const core = await this.ownFeeds.ownFeed(conversation)
    await this.ownFeeds.writeBlocks(core, blocks)
    await this.conversations.indexEntries(this.state.feeds[hex(core)] as FeedRecord, entries, core.length, true, blocks)
  }

  // ---------------------------------------------------------------- peers

  /**
   * Adds a feed of a conversation learned from a peer (the sync layer announces keys;
   * Corestore replication does not). Its entries are read, checked and indexed as they
   * replicate; invalid ones are reported and skipped.
   */
  async addFeed (conversation: string, key: Buffer | string): Promise<void> {
    // the record is made before this returns once the store is open: the sync layer's count of
    // what peers made it record (feed-admission.ts) must never lag the records
    if (!this.life.opened) await this.ready()
    await this.follower.addFeed(conversation, key)
  }

  /**
   * Forgets a peer's feed of which no block verified here (the sync layer evicted it:
   * feed-admission.ts); it is followed again when a peer announces it again. False, and
   * nothing done, for an own feed, one verified, or one being read and checked now.
   */
  forgetUnverifiedFeed (key: string): boolean {
    return this.follower.forgetUnverifiedFeed(key)
  }

  /** Whether a peer's feed is being read and checked now (it is not forgotten meanwhile). */
  checking (key: string): boolean {
    return this.follower.reading(key)
  }

  /**
   * A peer holds `length` blocks of a feed: add the feed if it is new, and follow it
   * (open, download, index) if the peer has blocks this device has not indexed yet.
   */
  async updateFeed (conversation: string, key: string, length: number): Promise<void> {
    if (!this.follower.updateFeed(conversation, key, length)) await this.addFeed(conversation, key)
  }

  /**
   * How the sync layer says what connected peers hold: a feed is kept open while
   * `lack(key, length)` holds for what this device can serve of it (closeIdleFeeds), and a
   * peer's feed waits in a download slot only while `have(key, length)` holds for what this
   * device has of it (a peer that can send it is connected).
   */
  setPeers (peers: { lack: (key: string, length: number) => boolean; have: (key: string, length: number) => boolean }): void {
    this.peersLack = peers.lack
    this.peersHave = peers.have
  }

  /** This device's key pair (its identity on the network). */
  get keyPair (): DeviceKeyPair {
    if (this.keyPair_ === null) throw new Error('HistoryStore is not ready')
    return this.keyPair_
  }

  /** The record of one feed, or undefined. */
  feedRecord (key: string): FeedRecord | undefined {
    const rec = this.state.feeds[key]
    return rec === undefined ? undefined : { ...rec }
  }

  /** How many blocks of a feed this device can serve: its own feed's length, or what it has verified of a peer's. */
  availableLength (key: string): number {
    const rec = this.state.feeds[key]
    if (rec === undefined) return 0
    if (!rec.own) return rec.indexed
    const core = this.pool.get(key)
    return Math.max(rec.indexed, this.ownFeeds.length(key) ?? 0, core !== undefined && core.opened ? core.length : 0)
  }

  /** Peers' feeds holding a slot (being opened and downloaded) and waiting for one (PEER_FEEDS_AT_ONCE). */
  get peerFeedSlots (): { active: number; waiting: number } { return this.follower.slotUse }

  /** Feeds held, optionally of one conversation. */
  feeds (conversation?: string): FeedRecord[] {
    return Object.values(this.state.feeds).filter(f => conversation === undefined || f.conversation === conversation).map(f => ({ ...f }))
  }

  /** Replication of every loaded feed over a stream (Corestore replication). */
  replicate (isInitiatorOrStream: boolean | Duplex): Duplex {
    // cores closed as idle that Corestore still holds are attached to it too: the pool watches them for a peer (FeedPool.watch)
    const stream = this.corestore.replicate(isInitiatorOrStream)
    const noise = (stream as unknown as { noiseStream: unknown }).noiseStream
    // a feed waiting on this connection's peer for its blocks waits no longer in a slot
    stream.once('close', () => { this.follower.connectionClosed(noise) })
    return stream
  }

  /** The index in memory (IndexWriter.state; benchmarks read it). */
  private get state (): IndexState { return this.index.state }

  // ---------------------------------------------------------------- reading

  /**
   * A conversation as a DAG, named by its id or any unique prefix. The returned DAG is
   * live: it grows as entries arrive (subscribe to 'entries' to hear when).
   */
  async open (ref: string): Promise<ConversationDag> {
    await this.ready()
    return this.dags.load(this.resolve(ref))
  }

  /** Conversations with their summaries, most recently updated first. Reads no entries. */
  list (): ConversationSummary[] {
    return sortSummaries(Object.values(this.state.conversations))
  }

  summary (conversation: string): ConversationSummary | undefined {
    return this.state.conversations[conversation]
  }

  /** The full id of the conversation a reference (id or unique id prefix) names. */
  resolve (ref: string): string {
    const r = ref.toLowerCase()
    if (!/^[0-9a-f]+$/.test(r)) throw new ConversationNotFoundError(ref, 'no conversation (ids are hex)')
    // A full id also names a conversation whose root has not arrived yet (only its feeds).
    if (this.state.conversations[r] !== undefined || this.dags.peek(r) !== undefined || Object.values(this.state.feeds).some(f => f.conversation === r)) return r
    const matches = Object.keys(this.state.conversations).filter(id => id.startsWith(r))
    if (matches.length === 1) return matches[0] as string
    if (matches.length === 0) throw new ConversationNotFoundError(ref)
    throw new ConversationNotFoundError(ref, `${matches.length} conversations (${matches.slice(0, 3).map(m => m.slice(0, r.length + 4)).join(', ')}…)`)
  }

  /**
   * Keeps a conversation's DAG in memory while held (an agent at work in it): never evicted
   * once loaded, whatever else is opened. Returns the release.
   */
  hold (conversation: string): () => void {
    return this.dags.pin(conversation)
  }

  /** The DAG cache against its budget (estimated bytes), for benchmarks and tests. */
  dagCacheStats (): DagCacheStats {
    return this.dags.stats
  }

  /** Calls back on every 'entries' event; returns the unsubscribe function. */
  subscribe (fn: (ev: EntriesEvent) => void): () => void {
    this.on('entries', fn)
    return () => { this.off('entries', fn) }
  }

  // ---------------------------------------------------------------- view state

  /** The entry this device last looked at in a conversation (its branch is the one shown). */
  selected (conversation: string): string | undefined {
    return this.view.selected(conversation)
  }

  select (conversation: string, entry: string): void {
    const dag = this.dags.peek(conversation)
    if (dag !== undefined && !dag.isJoined(entry)) throw new Error(`entry ${entry.slice(0, 12)} is not in conversation ${conversation.slice(0, 12)}`)
    this.view.select(conversation, entry)
  }
}
