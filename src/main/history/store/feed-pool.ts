import type Corestore from 'corestore'
import type Hypercore from 'hypercore'
import type { Logger } from '../../../shared/logger'

export interface FeedPoolOptions {
  corestore: Corestore
  log: Logger
  /** Feeds unused this long are closed (HistoryStoreOptions.idleCloseMs). */
  idleCloseMs: number
  /** Whether an idle, unpinned feed must stay open all the same (the store's rules: being read, wanted, lacking at a peer). */
  keepOpen: (key: string, core: Hypercore.Core) => boolean
  /** A feed was closed as idle. */
  closed: (key: string) => void
}

/**
 * Hypercore keeps a core "downloading" for 20–40 s after its last active session ends, and
 * Corestore attaches every downloading core to each new connection: a reconnect soon after a
 * sync opened a channel per feed touched (1,000 feeds: 200 KB, 10× the time of 100), and each
 * side's linger kept the other's feeds open. This store decides how long a feed stays open and
 * for whom (idle closing, passive sessions for peers), and a peer asks for the feeds it lacks by
 * their lists: no linger, on every core Corestore opens (HistoryStore watches them all), whoever
 * opened it — a peer's channel opens a core with Corestore's defaults, and the first open
 * decides. Hypercore 11 has no setter: its replicator reads this field at each change (the
 * version is pinned; test/e2e/sync/sync-reconnect-idle-feeds.test.ts fails if it stops working).
 */
export function withoutDownloadingLinger (core: object): void {
  const replicator = (core as { replicator?: { _notDownloadingLinger?: unknown } }).replicator
  if (replicator !== undefined && typeof replicator._notDownloadingLinger === 'number') replicator._notDownloadingLinger = 0
}

/**
 * The open sessions of conversation feeds, one per feed, and their idle closing: every open
 * feed is replicated on every new connection, so idle ones would make a reconnect cost grow
 * with the whole history. A feed is pinned while it is opened, written or read (pinWhile).
 */
export class FeedPool {
  /** the open session of each feed, by key (hex) */
  readonly cores = new Map<string, Hypercore.Core>()
  private readonly lastUsed = new Map<string, number>()
  /** feeds whose session is passive (adopted for a peer, or idle with a peer attached): kept while a peer replicates them */
  private readonly passive = new Set<string>()
  /** feeds being opened, written or read outside a pump (a count each): never closed as idle meanwhile */
  private readonly pinned = new Map<string, number>()
  /** weak sessions on cores closed here as idle that Corestore still holds (watch) */
  private readonly watches = new Map<string, Hypercore.Core>()
  private sweepTimer: NodeJS.Timeout | null = null
  private stopped = false

  constructor (private readonly opts: FeedPoolOptions) {}

  /** Starts the idle sweep. */
  start (): void {
    this.sweepTimer = setInterval(() => { this.closeIdleFeeds() }, Math.max(50, this.opts.idleCloseMs / 2))
    this.sweepTimer.unref()
  }

  /** Stops the idle sweep; the sessions close with the Corestore. */
  stop (): void {
    this.stopped = true
    if (this.sweepTimer !== null) clearInterval(this.sweepTimer)
    for (const key of [...this.watches.keys()]) this.unwatch(key)
  }

  /** The open session of a feed, if any, without using it. */
  get (key: string): Hypercore.Core | undefined {
    return this.cores.get(key)
  }

  has (key: string): boolean {
    return this.cores.has(key)
  }

  /** A feed was used now (its idle time starts again). */
  touch (key: string): void {
    this.lastUsed.set(key, Date.now())
  }

  /** Takes a session opened elsewhere (a new own feed, by name) into the pool. */
  add (key: string, core: Hypercore.Core): void {
    this.cores.set(key, core)
    this.unwatch(key)
    this.touch(key)
  }

  /**
   * Holds open a feed whose core a peer replicates without a session here (Corestore opened it
   * for the peer's channel, or the peer paired with a core closed here as idle: watch): a
   * passive session (it does not make the core replicate on other connections), kept while any
   * peer replicates the feed. Opening it cancels Corestore's gc of the core, which would
   * otherwise close it a few seconds after it was idle, peer or not, and that peer does not
   * open the channel again.
   */
  adopt (key: string): void {
    if (this.cores.has(key) || this.stopped) return
    const core = this.opts.corestore.get({ key: Buffer.from(key, 'hex'), active: false })
    this.cores.set(key, core)
    this.unwatch(key)
    this.passive.add(key)
    this.touch(key)
    this.pinWhile(key, () => core.ready()).catch((err: Error) => {
      if (this.cores.get(key) === core) { this.cores.delete(key); this.passive.delete(key) }
      this.opts.log.warn(`cannot hold feed ${key.slice(0, 12)} open for a peer: ${err.message}`)
    })
  }

  /**
   * Watches a core closed here as idle for as long as Corestore holds it. It stays paired on
   * every connection it was attached to, so a peer opening its channel there pairs with it
   * through Hypercore, not Corestore, and Corestore's gc goes on and closes it under that peer.
   * A weak session does not keep the core open but hears the peer attach: the feed is adopted
   * then. It closes with the core.
   */
  private watch (key: string, core: Hypercore.Core): void {
    let weak: Hypercore.Core
    try {
      weak = core.session({ weak: true, active: false })
    } catch (err) {
      // only a session closed elsewhere refuses one; its core is not held for a peer then
      this.opts.log.warn(`cannot watch idle feed ${key.slice(0, 12)} for peers: ${(err as Error).message}`)
      return
    }
    this.unwatch(key)
    this.watches.set(key, weak)
    // after Hypercore's loop over the core's listening sessions, which ending the watch would shorten under it
    weak.on('peer-add', () => { queueMicrotask(() => { this.adopt(key) }) })
    weak.once('close', () => { if (this.watches.get(key) === weak) this.watches.delete(key) })
  }

  /** The feed is held by a session of the pool again (or the pool stops): its watch ends. */
  private unwatch (key: string): void {
    const weak = this.watches.get(key)
    if (weak === undefined) return
    this.watches.delete(key)
    weak.close().catch((err: Error) => { this.opts.log.warn(`could not end the watch of feed ${key.slice(0, 12)}: ${err.message}`) })
  }

  /** A feed's open session (opened if need be); its callers use it before any timer can close it. */
  async core (key: string): Promise<Hypercore.Core> {
    this.touch(key)
    let core = this.cores.get(key)
    if (core !== undefined) this.activate(key)
    if (core === undefined) {
      core = this.opts.corestore.get({ key: Buffer.from(key, 'hex') })
      this.cores.set(key, core)
      this.unwatch(key)
    }
    const opening = core
    await this.pinWhile(key, () => opening.ready())
    return core
  }

  /** A feed is no longer held here (forgotten before any block of it verified): its session closes now. */
  drop (key: string): void {
    this.unwatch(key)
    const core = this.cores.get(key)
    if (core === undefined) return
    this.cores.delete(key)
    this.lastUsed.delete(key)
    this.passive.delete(key)
    core.close().catch((err: Error) => { this.opts.log.warn(`could not close forgotten feed ${key.slice(0, 12)}: ${err.message}`) })
  }

  /** A feed held passive until now is used by this device (downloaded, replicated) from here on. */
  activate (key: string): void {
    if (this.passive.delete(key)) this.cores.get(key)?.setActive(true)
  }

  /** Runs fn with a feed pinned open (the idle sweep leaves it alone meanwhile). */
  async pinWhile<T> (key: string, fn: () => Promise<T>): Promise<T> {
    this.pinned.set(key, (this.pinned.get(key) ?? 0) + 1)
    try {
      return await fn()
    } finally {
      const n = (this.pinned.get(key) ?? 1) - 1
      if (n === 0) this.pinned.delete(key)
      else this.pinned.set(key, n)
    }
  }

  /**
   * Closes feeds nobody has used for idleCloseMs: not while one is pinned, nor while the
   * store's keepOpen holds for it. A feed a peer still needs must stay open here: Corestore
   * closes a core without sessions once it has been idle a few seconds, even while a peer's
   * download from it is under way, and the peer does not open that replication channel again.
   */
  closeIdleFeeds (): void {
    const now = Date.now()
    for (const [key, core] of this.cores) {
      if (now - (this.lastUsed.get(key) ?? 0) < this.opts.idleCloseMs || this.pinned.has(key) || this.opts.keepOpen(key, core)) continue
      // With a peer attached it is made passive, not closed: Corestore closes a core without
      // sessions a few seconds after it was once idle, even with a peer attached since, and
      // that peer does not open the channel again. Passive on both sides, Hypercore closes the
      // channel, and the next sweep the session.
      if (core.peers.length > 0) {
        if (!this.passive.has(key)) { this.passive.add(key); core.setActive(false) }
        continue
      }
      this.passive.delete(key)
      this.cores.delete(key)
      this.lastUsed.delete(key)
      this.opts.closed(key)
      // watched before its session closes: the core is never without a listener for a peer
      this.watch(key, core)
      core.close().catch((err: Error) => { this.opts.log.warn(`could not close idle feed ${key.slice(0, 12)}: ${err.message}`) })
    }
  }
}
