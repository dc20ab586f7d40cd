import { EventEmitter } from 'node:events'
import path from 'node:path'
import fs from 'node:fs/promises'
import type { Duplex } from 'node:stream'
import Corestore from 'corestore'
import type Hypercore from 'hypercore'
import crypto from 'hypercore-crypto'
import { ConversationDag } from '../../shared/conversation-dag'
import { InvalidEntryError, encodeEntry, rememberEncoding, reunderstand, type Entry, type EntryDraft } from '../../shared/entry'
import { makeEntry, validateEntry } from './entry-codec'
import { Lifecycle } from '../../shared/lifecycle'
import { consoleLogger, type Logger } from '../../shared/logger'
import { makeFeedHeader, verifyFeedHeader, type DeviceKeyPair } from './feed-header'
import { EntryCache } from './entry-cache'
import { readLocalBlocks } from './feed-blocks'
import { DagCache, DAG_BYTES, dagBytes, entryBytes, type DagCacheStats } from './dag-cache'
import { HistoryIndexFile, emptyIndex, indexDir, sortSummaries, type ConversationSummary, type FeedRecord, type IndexState } from './history-index'
import { parseManifestRecord, type ManifestRecord } from './manifest-record'
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

/** Emitted as 'invalid' for anything a peer's feed holds that is not a valid entry. */
export interface InvalidEvent {
  feed: string
  seq: number
  error: string
}

export interface NewConversation {
  title?: string
  cwd?: string
  model?: string
  autoRevival?: boolean
}

export class ConversationNotFoundError extends Error {
  constructor (ref: string, reason = 'no conversation') {
    super(`${reason} matches "${ref}"; \`arbor ls\` lists the conversations`)
    this.name = 'ConversationNotFoundError'
  }
}

const FEED_PREFIX = 'arbor/conversation/'
/** blocks read and indexed in one batch: one storage read, one cache write, one summary */
const READ_CHUNK = 256
/** feeds per manifest record: a peer's list of thousands is split into blocks of a few tens of KB */
const MANIFEST_RECORD_FEEDS = 256

/** learned feeds whose manifest record is written in one append */
interface LearnedBatch { keys: string[]; written: Promise<void> }

interface Pending {
  entries: Entry[]
  resolve: (entries: Entry[]) => void
  reject: (err: Error) => void
}

/**
 * The history of every conversation this device holds (DESIGN.md, "History").
 * One Corestore per device; one feed per conversation written by this device; one
 * manifest feed listing every conversation feed held, with lengths. A conversation is
 * the union of the entries of all its feeds, kept as a ConversationDag. Summaries and
 * entry caches are derived state under index/, rebuildable from the feeds.
 */
export class HistoryStore extends EventEmitter {
  readonly dir: string
  readonly corestore: Corestore
  private readonly log: Logger
  private readonly now: () => number
  private readonly maxBatch: number
  private readonly readChunk: number
  private readonly manifestDelayMs: number
  private readonly indexDelayMs: number
  private readonly life: Lifecycle
  private readonly indexFile: HistoryIndexFile
  private readonly cache: EntryCache
  private readonly view: ViewState
  private keyPair_: DeviceKeyPair | null = null
  /** the key pair's public key in hex, made once: every entry written and summarised asks for it */
  private device_: string | null = null
  private manifest: Hypercore.Core | null = null
  private state: IndexState = emptyIndex('')
  private readonly cores = new Map<string, Hypercore.Core>()
  private readonly ownFeedKeys = new Map<string, string>()
  private ownFeedsIndexed = false
  private readonly watched = new Set<string>()
  private readonly lastUsed = new Map<string, number>()
  /** feeds being opened, written or read outside a pump (a count each): never closed as idle meanwhile */
  private readonly pinned = new Map<string, number>()
  /** the longest length peers announced for a feed: it is not closed before it is read that far */
  private readonly wanted = new Map<string, number>()
  /** the length of each own feed after its last write, whether or not the feed is open now */
  private readonly ownLength = new Map<string, number>()
  /** whether a connected peer lacks blocks of a feed below a length (set by the sync layer) */
  private peersLack: (key: string, length: number) => boolean = () => false
  private readonly idleCloseMs: number
  private sweepTimer: NodeJS.Timeout | null = null
  private readonly dags: DagCache<ConversationDag>
  /**
   * DAGs evicted while a caller may still hold one (open() hands out live DAGs): each is
   * kept up to date and taken back on its next use until it is collected, so a holder never
   * reads a stale DAG and the cache never holds two of one conversation.
   */
  private readonly evicted = new Map<string, { ref: WeakRef<ConversationDag>; bytes: number }>()
  private readonly collected = new FinalizationRegistry<string>(conversation => {
    if (this.evicted.get(conversation)?.ref.deref() === undefined) this.evicted.delete(conversation)
  })
  private readonly loading = new Map<string, Promise<ConversationDag>>()
  private readonly queues = new Map<string, Pending[]>()
  private readonly flushing = new Map<string, Promise<void>>()
  /** per conversation, the calls whose write is under way: out of the queue, not yet in the DAG */
  private readonly writing = new Map<string, Pending[]>()
  private readonly pumping = new Map<string, Promise<void>>()
  private readonly pumpAgain = new Set<string>()
  /** feeds whose header was refused this session: not read again */
  private readonly refused = new Set<string>()
  private readonly manifestDirty = new Set<string>()
  /** learned feeds whose manifest record is being written: nothing of them is indexed before it is on disk */
  private readonly recording = new Map<string, Promise<void>>()
  /** learned feeds this session knows the manifest lists, while their header is not indexed yet */
  private readonly inManifest = new Set<string>()
  private learnedBatch: LearnedBatch | null = null
  private manifestTimer: NodeJS.Timeout | null = null
  private indexTimer: NodeJS.Timeout | null = null
  private dirtyMarked: Promise<void> | null = null
  private closing = false
  private readonly watchPeers: boolean

  constructor (opts: HistoryStoreOptions) {
    super()
    this.dir = path.resolve(opts.dir)
    this.log = opts.log ?? consoleLogger('history')
    this.now = opts.now ?? Date.now
    this.maxBatch = opts.maxBatch ?? 1000
    this.readChunk = Math.max(1, opts.readChunk ?? READ_CHUNK)
    this.manifestDelayMs = opts.manifestDelayMs ?? 1000
    this.indexDelayMs = opts.indexDelayMs ?? 1000
    this.watchPeers = opts.watchPeers ?? true
    this.idleCloseMs = opts.idleCloseMs ?? 10_000
    this.dags = new DagCache<ConversationDag>(opts.dagCacheBytes ?? DEFAULT_DAG_CACHE_BYTES, (conversation, dag, bytes) => {
      this.evicted.set(conversation, { ref: new WeakRef(dag), bytes })
      this.collected.register(dag, conversation)
    })
    this.corestore = new Corestore(path.join(this.dir, 'corestore'))
    this.indexFile = new HistoryIndexFile(indexDir(this.dir))
    this.cache = new EntryCache(path.join(this.dir, 'index', 'entries'))
    this.view = new ViewState(path.join(this.dir, 'view-state.json'))
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
    if (this.manifest?.key == null) throw new Error('HistoryStore is not ready')
    return this.manifest.key
  }

  private async openStore (): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true })
    try {
      await this.corestore.ready()
    } catch (err) {
      throw storageError(err, this.dir)
    }
    this.keyPair_ = await this.corestore.createKeyPair('arbor/device')
    this.device_ = this.keyPair_.publicKey.toString('hex')
    this.manifest = this.corestore.get({ name: 'arbor/manifest' })
    await this.manifest.ready()
    if (this.manifest.length === 0) {
      const header = makeFeedHeader({ type: 'arbor/manifest', feed: this.manifestKey.toString('hex') }, this.keyPair)
      await this.manifest.append(Buffer.from(JSON.stringify(header)))
    }
    await Promise.all([this.cache.ready(), this.view.load()])
    const { state, problem, legacy } = await this.indexFile.load(this.device)
    if (problem !== undefined) this.log.warn(`rebuilding the index: ${problem}`)
    // The previous version's index.json: written once in this version's format (and removed), as it is.
    if (state !== null && legacy === true) {
      this.state = state
      await this.saveIndex().catch(err => { this.log.warn(`could not convert the index yet: ${storageError(err, this.dir).message}`) })
    }
    if (state === null) {
      this.state = emptyIndex(this.device)
      this.state.clean = false
      await this.rebuild()
    } else {
      this.state = state
      if (!state.clean) {
        this.log.info('the store was not closed cleanly; reconciling the index with the feeds')
        await this.markDirty()
        await this.reconcile()
      }
    }
    // Peer feeds are opened only when a peer has more of them (updateFeed), and idle
    // feeds are closed: a reconnect with nothing new opens no feed at all.
    this.sweepTimer = setInterval(() => { this.closeIdleFeeds() }, Math.max(50, this.idleCloseMs / 2))
    this.sweepTimer.unref()
  }

  /**
   * Closes feeds nobody has used for idleCloseMs: not while one is opened, written or read,
   * not yet indexed as far as a peer announced, or still lacking at a connected peer. A
   * feed a peer still needs must stay open here: Corestore closes a core without sessions
   * once it has been idle a few seconds, even while a peer's download from it is under way,
   * and the peer does not open that replication channel again by itself.
   */
  private closeIdleFeeds (): void {
    const now = Date.now()
    for (const [key, core] of this.cores) {
      if (now - (this.lastUsed.get(key) ?? 0) < this.idleCloseMs || this.pumping.has(key) || this.pinned.has(key)) continue
      const rec = this.state.feeds[key]
      if (rec === undefined) continue
      if (!rec.own && rec.indexed < Math.max(core.length, this.wanted.get(key) ?? 0)) continue
      if (this.peersLack(key, this.availableLength(key))) continue
      this.cores.delete(key)
      this.watched.delete(key)
      this.lastUsed.delete(key)
      core.close().catch((err: Error) => { this.log.warn(`could not close idle feed ${key.slice(0, 12)}: ${err.message}`) })
    }
  }

  private async closeStore (): Promise<void> {
    this.closing = true
    if (this.sweepTimer !== null) clearInterval(this.sweepTimer)
    await Promise.allSettled([...this.flushing.values()])
    // A reader waiting for blocks no connected peer has would wait forever: closing the
    // peer feeds cancels those waits; then every reader has finished before the index is saved.
    await Promise.allSettled([...this.watched].map(key => this.cores.get(key)?.close()))
    await Promise.allSettled([...this.pumping.values()])
    await Promise.allSettled([...this.recording.values()])
    await this.cache.close()
    if (this.manifestTimer !== null) clearTimeout(this.manifestTimer)
    if (this.indexTimer !== null) clearTimeout(this.indexTimer)
    let clean = true
    try {
      if (this.manifest !== null && !this.manifest.closed) await this.writeManifestLengths()
    } catch (err) {
      clean = false
      this.log.error(`could not record feed lengths in the manifest: ${(err as Error).message}`)
    }
    // A failed save (a full disk) leaves the previous files, which say to reconcile: the
    // store still closes, so its directory is free to open again.
    if (this.dirtyMarked !== null || !this.state.clean) {
      this.state.clean = clean
      await this.saveIndex().catch(err => { this.log.error(`could not save the index: ${storageError(err, this.dir).message}`) })
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
    await this.ready()
    const body = {
      title: opts.title ?? '',
      nonce: crypto.randomBytes(16).toString('hex'),
      ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
      ...(opts.model !== undefined ? { model: opts.model } : {}),
      ...(opts.autoRevival !== undefined ? { autoRevival: opts.autoRevival } : {})
    }
    const root = makeEntry({ kind: 'conversation', body, parents: [] }, { conversation: null, device: this.device, ts: this.now() })
    const dag = new ConversationDag(root.id, [], { now: this.now })
    this.dags.set(root.id, dag, DAG_BYTES)
    try {
      const core = await this.ownFeed(root.id)
      await this.writeBlocks(core, [root])
      await this.indexEntries(this.state.feeds[hex(core)] as FeedRecord, [root], core.length, true)
    } catch (err) {
      if (this.peekDag(root.id)?.size === 0) this.forgetDag(root.id)
      throw storageError(err, this.dir)
    }
    return root
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
    await this.ready()
    if (this.closing) throw new Error('the history store is closing')
    const dag = await this.load(conversation)
    if (dag.root === undefined) throw new ConversationNotFoundError(conversation, 'no conversation with a root entry')
    const queue = this.queues.get(conversation) ?? []
    const ts = this.now()
    const entries: Entry[] = []
    const ids = new Set<string>()
    for (const draft of drafts) {
      if (draft.kind === 'conversation') throw new InvalidEntryError('a conversation root is written by createConversation, not appended')
      // `$k` names the k-th draft of this call, whose id the caller cannot know beforehand.
      const parents = draft.parents.map(p => {
        const ref = p.startsWith('$') ? /^\$(\d+)$/.exec(p) : null
        if (ref === null) return p
        const earlier = entries[Number(ref[1])]
        if (earlier === undefined) throw new InvalidEntryError(`parent ${p} does not name an earlier draft of this append`)
        return earlier.id
      })
      for (const p of parents) {
        if (!dag.isJoined(p) && !ids.has(p) && !isQueued(queue, p) && !isQueued(this.writing.get(conversation) ?? [], p)) {
          throw new InvalidEntryError(`parent ${p.slice(0, 12)} is not an entry of conversation ${conversation.slice(0, 12)}${dag.has(p) ? ' yet (it waits for its own parent)' : ''}`)
        }
      }
      const entry = makeEntry({ ...draft, parents }, { conversation, device: this.device, ts })
      entries.push(entry)
      ids.add(entry.id)
    }
    if (entries.length === 0) return { entries, stored: Promise.resolve([]) }
    const stored = new Promise<Entry[]>((resolve, reject) => {
      queue.push({ entries, resolve, reject })
      this.queues.set(conversation, queue)
      if (!this.flushing.has(conversation)) this.startFlush(conversation)
    })
    // A caller that does not wait for it still hears of a failure: startFlush logs it.
    stored.catch(() => undefined)
    return { entries, stored }
  }

  private startFlush (conversation: string): void {
    // Not evicted while entries written to its feed wait to join it: a reload that re-read
    // the feed (refill) would take them in first, and their 'entries' event would be lost.
    const release = this.dags.pin(conversation)
    const run = (async () => {
      // Let appends made in the same tick join this batch.
      await new Promise<void>(resolve => setImmediate(resolve))
      while ((this.queues.get(conversation)?.length ?? 0) > 0) {
        const queue = this.queues.get(conversation) as Pending[]
        const batch: Pending[] = []
        let count = 0
        while (queue.length > 0 && (batch.length === 0 || count + (queue[0] as Pending).entries.length <= this.maxBatch)) {
          const p = queue.shift() as Pending
          batch.push(p)
          count += p.entries.length
        }
        const entries = batch.flatMap(p => p.entries)
        this.writing.set(conversation, batch)
        try {
          const core = await this.ownFeed(conversation)
          await this.writeBlocks(core, entries)
          await this.indexEntries(this.state.feeds[hex(core)] as FeedRecord, entries, core.length, true)
          for (const p of batch) p.resolve(p.entries)
        } catch (err) {
          const e = storageError(err, this.dir)
          this.log.error(`could not write ${entries.length} entries to conversation ${conversation.slice(0, 12)}: ${e.message}`)
          for (const p of batch) p.reject(e)
          this.dropDependents(queue, entries, e)
        } finally {
          this.writing.delete(conversation)
        }
      }
      this.queues.delete(conversation)
    })()
    this.flushing.set(conversation, run)
    void run.finally(() => { this.flushing.delete(conversation); release() })
  }

  /**
   * After `lost` failed to be written: rejects the queued calls that build on them (their
   * entries would reach the feed with a parent it lacks), and those building on those.
   */
  private dropDependents (queue: Pending[], lost: Entry[], err: Error): void {
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

  private async writeBlocks (core: Hypercore.Core, entries: Entry[]): Promise<void> {
    const key = hex(core)
    await this.pinWhile(key, async () => {
      await this.markDirty()
      await core.append(entries.map(e => Buffer.from(encodeEntry(e))))
    })
    this.ownLength.set(key, core.length)
    this.emit('feed', { ...this.state.feeds[key] as FeedRecord })
  }

  /** Runs fn with a feed pinned open (the idle sweep leaves it alone meanwhile). */
  private async pinWhile<T> (key: string, fn: () => Promise<T>): Promise<T> {
    this.pinned.set(key, (this.pinned.get(key) ?? 0) + 1)
    try {
      return await fn()
    } finally {
      const n = (this.pinned.get(key) ?? 1) - 1
      if (n === 0) this.pinned.delete(key)
      else this.pinned.set(key, n)
    }
  }

  /** This device's feed for a conversation, created (with its signed header) on first use. */
  private async ownFeed (conversation: string): Promise<Hypercore.Core> {
    if (!this.ownFeedsIndexed) {
      for (const f of Object.values(this.state.feeds)) if (f.own) this.ownFeedKeys.set(f.conversation, f.key)
      this.ownFeedsIndexed = true
    }
    const existing = this.ownFeedKeys.get(conversation)
    if (existing !== undefined) return this.core(existing)
    const core = this.corestore.get({ name: FEED_PREFIX + conversation })
    await core.ready()
    const key = hex(core)
    this.cores.set(key, core)
    this.lastUsed.set(key, Date.now())
    const rec: FeedRecord = { key, conversation, device: this.device, own: true, indexed: 1 }
    await this.pinWhile(key, async () => {
      if (core.length === 0) {
        const header = makeFeedHeader({ type: 'arbor/conversation', feed: key, conversation }, this.keyPair)
        await this.markDirty()
        await core.append(Buffer.from(JSON.stringify(header)))
      }
      // Known as this device's feed only once the manifest lists it: after a failed write (a
      // full disk) the next append records it again instead of writing to an unlisted feed.
      await this.recordInManifest(rec, core.length)
      this.state.feeds[key] = rec
      this.changed('feed', key)
      this.ownFeedKeys.set(conversation, key)
    })
    this.emit('feed', { ...rec })
    return core
  }

  /** A feed's open session (opened if need be); its callers use it before any timer can close it. */
  private async core (key: string): Promise<Hypercore.Core> {
    this.lastUsed.set(key, Date.now())
    let core = this.cores.get(key)
    if (core === undefined) {
      core = this.corestore.get({ key: Buffer.from(key, 'hex') })
      this.cores.set(key, core)
    }
    const opening = core
    await this.pinWhile(key, () => opening.ready())
    return core
  }

  // ---------------------------------------------------------------- peers

  /**
   * Adds a feed of a conversation learned from a peer (the sync layer announces keys;
   * Corestore replication does not). Its entries are read, checked and indexed as they
   * replicate; invalid ones are reported and skipped.
   */
  async addFeed (conversation: string, key: Buffer | string): Promise<void> {
    await this.ready()
    const k = typeof key === 'string' ? key : key.toString('hex')
    if (!/^[0-9a-f]{64}$/.test(k)) throw new Error(`not a feed key: ${k.slice(0, 70)}`)
    if (!/^[0-9a-f]{64}$/.test(conversation)) throw new Error(`not a conversation id: ${conversation.slice(0, 70)}`)
    if (this.state.feeds[k] !== undefined) return
    const rec: FeedRecord = { key: k, conversation, device: '', own: false, indexed: 0 }
    this.state.feeds[k] = rec
    await this.markDirty()
    // The record is written while the feed downloads; its reader waits for it before indexing.
    const recorded = this.recordLearned(k)
    this.changed('feed', k)
    this.emit('feed', { ...rec })
    if (this.watchPeers) void this.watchFeed(rec)
    await recorded
  }

  /**
   * A peer holds `length` blocks of a feed: add the feed if it is new, and follow it
   * (open, download, index) if the peer has blocks this device has not indexed yet.
   */
  async updateFeed (conversation: string, key: string, length: number): Promise<void> {
    if (length > (this.wanted.get(key) ?? 0)) this.wanted.set(key, length)
    const rec = this.state.feeds[key]
    if (rec === undefined) { await this.addFeed(conversation, key); return }
    if (rec.conversation !== conversation) return
    // The peer lacks blocks this device has: open the feed, so its core is replicated to
    // the peer (and not closed under it) until the peer says it has them (closeIdleFeeds).
    if (length < this.availableLength(key) && !this.cores.has(key)) {
      this.core(key).catch((err: Error) => { if (!this.closing) this.log.warn(`cannot open feed ${key.slice(0, 12)} for a peer: ${err.message}`) })
    }
    if (rec.own || rec.indexed >= length || !this.watchPeers) return
    void this.watchFeed(rec)
  }

  /**
   * How the sync layer says which feeds connected peers lack: a feed is kept open while
   * `lack(key, length)` holds for what this device can serve of it (closeIdleFeeds).
   */
  setPeersLack (lack: (key: string, length: number) => boolean): void {
    this.peersLack = lack
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
    const core = this.cores.get(key)
    return Math.max(rec.indexed, this.ownLength.get(key) ?? 0, core !== undefined && core.opened ? core.length : 0)
  }

  /** Feeds held, optionally of one conversation. */
  feeds (conversation?: string): FeedRecord[] {
    return Object.values(this.state.feeds).filter(f => conversation === undefined || f.conversation === conversation).map(f => ({ ...f }))
  }

  /** Replication of every loaded feed over a stream (Corestore replication). */
  replicate (isInitiatorOrStream: boolean | Duplex): Duplex {
    return this.corestore.replicate(isInitiatorOrStream)
  }

  private async watchFeed (rec: FeedRecord): Promise<void> {
    if (this.watched.has(rec.key)) {
      const open = this.cores.get(rec.key)
      if (open !== undefined) this.pump(rec, open)
      return
    }
    this.watched.add(rec.key)
    let core: Hypercore.Core
    try {
      core = await this.core(rec.key)
    } catch (err) {
      if (!this.closing) this.log.warn(`cannot open feed ${rec.key.slice(0, 12)}: ${(err as Error).message}`)
      return
    }
    const more = (): void => { this.lastUsed.set(rec.key, Date.now()); this.pump(rec, core) }
    core.on('append', more)
    // The reader reads only what is stored here: it runs again as each block arrives.
    core.on('download', more)
    // Keep the whole history locally, for offline use.
    core.download({ start: 0, end: -1 })
    this.pump(rec, core)
  }

  /** Reads a peer feed's new blocks; one reader per feed, re-run if more arrived meanwhile. */
  private pump (rec: FeedRecord, core: Hypercore.Core): void {
    if (this.closing) return
    if (this.pumping.has(rec.key)) { this.pumpAgain.add(rec.key); return }
    const run = (async () => {
      do {
        this.pumpAgain.delete(rec.key)
        await this.readFeed(rec, core)
      } while (this.pumpAgain.has(rec.key) && !this.closing)
    })().catch(err => {
      if (!this.closing && !isClosingError(err)) this.log.warn(`reading feed ${rec.key.slice(0, 12)} stopped: ${(err as Error).message}`)
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
   * batch (summary, cache write, watermark) would be done per block.
   */
  private async readFeed (rec: FeedRecord, core: Hypercore.Core, whole = true): Promise<void> {
    while (rec.indexed < core.contiguousLength && !this.closing && !this.refused.has(rec.key)) {
      const start = rec.indexed
      const end = Math.min(core.contiguousLength, start + this.readChunk)
      if (whole && end < Math.min(core.length, start + this.readChunk)) return
      // Before anything read here is shown, the index on disk must say it may lag the feeds:
      // only then does recovery after a crash read them past its watermarks.
      await this.markDirty()
      // The header comes with the first blocks: one read, not two.
      const blocks = await readLocalBlocks(core, start, end)
      let first = 0
      if (start === 0) {
        const block = blocks[0]
        if (block === null || block === undefined) return
        // Nothing of a learned feed is shown before the manifest lists it: after a crash,
        // recovery finds feeds through the manifest, and a feed it does not list is lost.
        if (!rec.own && !this.inManifest.has(rec.key)) await this.recordLearned(rec.key)
        try {
          const h = verifyFeedHeader(block, Buffer.from(rec.key, 'hex'), { type: 'arbor/conversation', conversation: rec.conversation })
          if (rec.own && h.device !== this.device) throw new Error(`feed ${rec.key.slice(0, 12)} was listed as this device's but is signed by ${h.device.slice(0, 12)}`)
          rec.device = h.device
        } catch (err) {
          // Without a valid header nothing in the feed can be attributed: refuse it whole,
          // once (every block that arrives runs the reader again).
          this.refused.add(rec.key)
          this.reportInvalid({ feed: rec.key, seq: 0, error: (err as Error).message })
          return
        }
        rec.indexed = 1
        this.inManifest.delete(rec.key) // from here on the watermark says it: indexed > 0 means recorded
        this.changed('feed', rec.key)
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
      await this.load(rec.conversation)
      await this.indexEntries(rec, good, end, false)
    }
  }

  private reportInvalid (ev: InvalidEvent): void {
    this.log.warn(`skipped block ${ev.seq} of feed ${ev.feed.slice(0, 12)}: ${ev.error}`)
    this.emit('invalid', ev)
  }

  // ---------------------------------------------------------------- indexing

  /**
   * Adds entries read from (or written to) a feed up to `upTo` into the DAG, cache and summary.
   * A conversation not in memory is read in first: which entries join and which wait, and the
   * summary's heads, title and waiting count, depend on the whole DAG.
   */
  private async indexEntries (rec: FeedRecord, entries: Entry[], upTo: number, local: boolean): Promise<void> {
    const dag = this.resident(rec.conversation) ?? await this.load(rec.conversation)
    const joined: Entry[] = []
    const fresh: Entry[] = []
    let bytes = 0
    for (const e of entries) {
      if (dag.has(e.id)) continue
      fresh.push(e)
      for (const j of dag.add(e)) joined.push(j)
      bytes += entryBytes(Buffer.byteLength(encodeEntry(e))) // the encoding is remembered: the feed or the cache has it
    }
    this.grew(dag, bytes)
    // The summary and listeners see the DAG as soon as it changes; the watermark moves
    // only once the cache holds the entries below it.
    this.summarise(dag)
    if (fresh.length > 0) {
      // what joined is joined in the DAG: the fresh entries not joined there are those waiting
      const ev: EntriesEvent = { conversation: rec.conversation, joined, waiting: fresh.filter(e => !dag.isJoined(e.id)), feed: rec.key, local }
      try {
        this.emit('entries', ev)
      } catch (err) {
        // A listener's bug must not stop indexing: report it and go on.
        this.log.error(`a listener of new entries failed: ${(err as Error).stack ?? String(err)}`)
      }
    }
    const cached = this.cache.append(rec.conversation, fresh).then(() => {
      const grew = upTo > rec.indexed
      rec.indexed = Math.max(rec.indexed, upTo)
      if (grew) this.changed('feed', rec.key)
      this.manifestDirty.add(rec.key)
      this.scheduleManifest()
      // What this device can serve of a peer's feed is its watermark: peers hear of it now.
      if (grew && !local) this.emit('feed', { ...rec })
    })
    // A peer feed's reader uses the watermark as its cursor: it waits. A local append is
    // acknowledged once the feed has it; the cache (derived) catches up behind it.
    if (!local) return cached
    cached.catch(err => { this.log.error(`could not write the entry cache of ${rec.conversation.slice(0, 12)}: ${(err as Error).message}; it is rebuilt from the feeds`) })
  }

  private summarise (dag: ConversationDag): void {
    const root = dag.root
    // A root this version does not understand (a newer one wrote it) is listed all the same.
    if (root === undefined) {
      this.scheduleIndexSave()
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
    const own = dag.rootBy(this.device)
    if (own?.body.cwd !== undefined) s.cwd = own.body.cwd
    const revival = dag.meta('autoRevival')
    const autoRevival = revival !== undefined ? revival.value === true : root.kind === 'conversation' ? root.body.autoRevival : undefined
    if (autoRevival !== undefined) s.autoRevival = autoRevival
    this.state.conversations[dag.conversation] = s
    this.changed('conversation', dag.conversation)
  }

  /**
   * A conversation's DAG: the one in memory, else read from its entry cache (concurrent
   * calls share one read). Kept in the size-budgeted cache, least recently used dropped first.
   */
  private load (conversation: string): Promise<ConversationDag> {
    const dag = this.resident(conversation)
    if (dag !== undefined) return Promise.resolve(dag)
    let p = this.loading.get(conversation)
    if (p === undefined) {
      p = (async () => {
        const { entries, torn, bytes } = await this.cache.read(conversation)
        const d = new ConversationDag(conversation, [], { now: this.now })
        for (const e of entries) if (e.conversation === conversation) d.add(reunderstand(e))
        let size = dagBytes(entries.length, bytes)
        const expected = this.state.conversations[conversation]?.size ?? 0
        if (torn > 0 || d.size < expected) {
          // Derived state went missing or bad: read the conversation again from its feeds.
          // A torn last line with nothing missing is what a kill mid-write leaves: expected, not a warning.
          const say = d.size >= expected ? this.log.info : this.log.warn
          say.call(this.log, `entry cache of ${conversation.slice(0, 12)} ${d.size < expected ? `is missing entries (${d.size} of ${expected})` : 'ends in a torn line'} (${torn} torn line(s)); re-reading its feeds`)
          size = await this.refill(d)
        }
        this.dags.set(conversation, d, size)
        return d
      })()
      const loading = p
      void loading.finally(() => { if (this.loading.get(conversation) === loading) this.loading.delete(conversation) }).catch(() => undefined)
      this.loading.set(conversation, p)
    }
    return p
  }

  /** The DAG in memory, if any: one evicted but still held somewhere is taken back into the cache. */
  private resident (conversation: string): ConversationDag | undefined {
    const dag = this.dags.get(conversation)
    if (dag !== undefined) return dag
    const kept = this.evicted.get(conversation)
    if (kept === undefined) return undefined
    this.evicted.delete(conversation)
    const alive = kept.ref.deref()
    if (alive !== undefined) this.dags.set(conversation, alive, kept.bytes)
    return alive
  }

  /** The DAG in memory, if any, without using it (no reload, no change of recency). */
  private peekDag (conversation: string): ConversationDag | undefined {
    return this.dags.peek(conversation) ?? this.evicted.get(conversation)?.ref.deref()
  }

  private forgetDag (conversation: string): void {
    this.dags.delete(conversation)
    this.evicted.delete(conversation)
  }

  /** `dag` grew by an estimated `bytes`: counted against the budget (which may evict others). */
  private grew (dag: ConversationDag, bytes: number): void {
    if (bytes === 0) return
    const c = dag.conversation
    if (this.dags.peek(c) === dag) {
      this.dags.resize(c, (this.dags.sizeOf(c) ?? 0) + bytes)
      return
    }
    const kept = this.evicted.get(c)
    if (kept !== undefined && kept.ref.deref() === dag) kept.bytes += bytes
  }

  /**
   * Re-reads every indexed block of a conversation's feeds into `dag` and rewrites its cache;
   * returns the DAG's estimated size. This device's own feeds are read whole: an entry the
   * feed acknowledged whose cache line failed (a full disk) is not behind the watermark yet.
   */
  private async refill (dag: ConversationDag): Promise<number> {
    for (const rec of Object.values(this.state.feeds)) {
      if (rec.conversation !== dag.conversation || (!rec.own && rec.indexed <= 1)) continue
      const from = { ...rec, device: rec.own ? this.device : rec.device }
      await this.pinWhile(rec.key, async () => {
        const core = await this.core(rec.key)
        const end = rec.own ? core.length : rec.indexed
        for (let start = 1; start < end; start += this.readChunk) {
          const blocks = await readLocalBlocks(core, start, Math.min(end, start + this.readChunk))
          for (const block of blocks) {
            // Invalid blocks were reported when the feed was first read: skipped quietly here.
            const d = block === null ? null : decodeBlock(block, from)
            if (d?.ok === true) dag.add(d.entry)
          }
        }
      })
    }
    await this.markDirty()
    const entries = [...dag.entries()]
    await this.cache.rewrite(dag.conversation, entries)
    return dagBytes(entries.length, entries.reduce((n, e) => n + Buffer.byteLength(encodeEntry(e)), 0))
  }

  /** Before the first write of a session, the index on disk must say it may be stale. */
  private markDirty (): Promise<void> {
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
  private saveIndex (): Promise<void> {
    return this.indexFile.save(this.state)
  }

  /** A feed record or conversation summary of the index changed: it goes into the next save. */
  private changed (kind: 'feed' | 'conversation', key: string): void {
    this.indexFile.changed(kind, key)
    this.scheduleIndexSave()
  }

  private scheduleIndexSave (): void {
    if (this.indexTimer !== null || this.closing) return
    this.indexTimer = setTimeout(() => {
      this.indexTimer = null
      this.state.clean = false
      this.saveIndex().catch(err => { this.log.error(`could not save the index: ${(err as Error).message}`) })
    }, this.indexDelayMs)
  }

  /** Rebuilds the index from the manifest and the feeds (after a lost or unreadable index). */
  private async rebuild (): Promise<void> {
    await this.markDirty()
    await this.cache.clear()
    this.state.manifestIndexed = 0
    await this.reconcile()
  }

  /** Reads the manifest and every own feed past their watermarks (after a crash the index may lag). */
  private async reconcile (): Promise<void> {
    const manifest = this.manifest as Hypercore.Core
    for (let i = Math.max(1, this.state.manifestIndexed); i < manifest.length; i++) {
      const block = await manifest.get(i)
      const rec = block === null ? null : parseManifestRecord(block)
      if (rec === null) { this.log.warn(`manifest block ${i} is unreadable; skipped`); continue }
      for (const f of rec.feeds) {
        const known = this.state.feeds[f.key]
        if (known !== undefined) {
          if (!known.own && known.indexed === 0) this.inManifest.add(f.key)
          continue
        }
        const own = f.device === this.device
        this.state.feeds[f.key] = { key: f.key, conversation: f.conversation, device: own ? this.device : '', own, indexed: 0 }
        this.changed('feed', f.key)
        if (!own) this.inManifest.add(f.key)
      }
    }
    this.state.manifestIndexed = manifest.length
    for (const rec of Object.values(this.state.feeds)) {
      const core = await this.core(rec.key)
      // Only what is on this disk: replication resumes the rest when peers are back.
      if (rec.indexed < core.contiguousLength) await this.readFeed(rec, core, false)
    }
    for (const id of new Set(Object.values(this.state.feeds).map(f => f.conversation))) {
      const dag = await this.load(id)
      this.summarise(dag)
    }
    await this.saveIndex()
  }

  // ---------------------------------------------------------------- manifest

  private async recordInManifest (rec: FeedRecord, length: number): Promise<void> {
    const record: ManifestRecord = { feeds: [{ key: rec.key, conversation: rec.conversation, device: rec.own ? this.device : rec.device, length }] }
    await (this.manifest as Hypercore.Core).append(Buffer.from(JSON.stringify(record)))
    this.state.manifestIndexed = (this.manifest as Hypercore.Core).length
  }

  /**
   * Writes a learned feed's manifest record; the feeds learned in one turn of the event
   * loop (a peer's whole list, at the first sync) share one append. Resolves once it is stored.
   */
  private recordLearned (key: string): Promise<void> {
    const pending = this.recording.get(key)
    if (pending !== undefined) return pending
    if (this.learnedBatch === null) {
      const batch: LearnedBatch = { keys: [], written: Promise.resolve() }
      batch.written = new Promise<void>(resolve => setImmediate(resolve)).then(() => {
        this.learnedBatch = null
        return this.writeLearned(batch.keys)
      })
      // A failed record is retried by the next reader of the feed.
      const done = (): void => { for (const k of batch.keys) this.recording.delete(k) }
      batch.written.then(done, done)
      this.learnedBatch = batch
    }
    this.learnedBatch.keys.push(key)
    this.recording.set(key, this.learnedBatch.written)
    return this.learnedBatch.written
  }

  private async writeLearned (keys: string[]): Promise<void> {
    const feeds: ManifestRecord['feeds'] = []
    for (const k of keys) {
      const rec = this.state.feeds[k]
      if (rec !== undefined) feeds.push({ key: k, conversation: rec.conversation, device: rec.device, length: rec.indexed })
    }
    const blocks: Buffer[] = []
    for (let i = 0; i < feeds.length; i += MANIFEST_RECORD_FEEDS) blocks.push(Buffer.from(JSON.stringify({ feeds: feeds.slice(i, i + MANIFEST_RECORD_FEEDS) } satisfies ManifestRecord)))
    const manifest = this.manifest as Hypercore.Core
    try {
      await manifest.append(blocks)
    } catch (err) {
      throw new Error(`could not record ${feeds.length} feed(s) learned from peers in the manifest: ${storageError(err, this.dir).message}`, { cause: err })
    }
    this.state.manifestIndexed = manifest.length
    for (const k of keys) if (this.state.feeds[k]?.indexed === 0) this.inManifest.add(k)
  }

  private scheduleManifest (): void {
    if (this.manifestTimer !== null || this.closing) return
    this.manifestTimer = setTimeout(() => {
      this.manifestTimer = null
      this.writeManifestLengths().catch(err => this.log.error(`could not update the manifest: ${(err as Error).message}`))
    }, this.manifestDelayMs)
  }

  /** One manifest record with the new lengths of every feed that grew since the last one. */
  private async writeManifestLengths (): Promise<void> {
    if (this.manifestDirty.size === 0) return
    const feeds: ManifestRecord['feeds'] = []
    for (const key of this.manifestDirty) {
      const rec = this.state.feeds[key]
      if (rec !== undefined) feeds.push({ key, conversation: rec.conversation, device: rec.device, length: rec.indexed })
    }
    this.manifestDirty.clear()
    try {
      await (this.manifest as Hypercore.Core).append(Buffer.from(JSON.stringify({ feeds } satisfies ManifestRecord)))
    } catch (err) {
      // not recorded (a full disk): these lengths go with the next record
      for (const f of feeds) this.manifestDirty.add(f.key)
      throw err
    }
    this.state.manifestIndexed = (this.manifest as Hypercore.Core).length
    this.scheduleIndexSave()
  }

  // ---------------------------------------------------------------- reading

  /**
   * A conversation as a DAG, named by its id or any unique prefix. The returned DAG is
   * live: it grows as entries arrive (subscribe to 'entries' to hear when).
   */
  async open (ref: string): Promise<ConversationDag> {
    await this.ready()
    return this.load(this.resolve(ref))
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
    if (this.state.conversations[r] !== undefined || this.peekDag(r) !== undefined || Object.values(this.state.feeds).some(f => f.conversation === r)) return r
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
    const dag = this.peekDag(conversation)
    if (dag !== undefined && !dag.isJoined(entry)) throw new Error(`entry ${entry.slice(0, 12)} is not in conversation ${conversation.slice(0, 12)}`)
    this.view.select(conversation, entry)
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

function hex (core: Hypercore.Core): string {
  return (core.key as Buffer).toString('hex')
}

/** A block of a conversation feed as an entry of that feed's device and conversation, or why it is not one. */
function decodeBlock (block: Buffer, feed: Pick<FeedRecord, 'device' | 'conversation'>): { ok: true; entry: Entry; text: string } | { ok: false; error: string } {
  const text = block.toString('utf8')
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    return { ok: false, error: 'block is not JSON' }
  }
  const v = validateEntry(raw, feed.device)
  if (!v.ok) return v
  if (v.entry.conversation !== feed.conversation) return { ok: false, error: `entry ${v.entry.id.slice(0, 12)} belongs to another conversation` }
  return { ok: true, entry: v.entry, text }
}

function isClosingError (err: unknown): boolean {
  const code = (err as { code?: string })?.code
  return code === 'REQUEST_CANCELLED' || code === 'SESSION_CLOSED'
}
