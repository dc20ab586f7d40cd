import type Corestore from 'corestore'
import type Hypercore from 'hypercore'
import type { Logger } from '../../shared/logger'

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
  private sweepTimer: NodeJS.Timeout | null = null

  constructor (private readonly opts: FeedPoolOptions) {}

  /** Starts the idle sweep. */
  start (): void {
    this.sweepTimer = setInterval(() => { this.closeIdleFeeds() }, Math.max(50, this.opts.idleCloseMs / 2))
    this.sweepTimer.unref()
  }

  /** Stops the idle sweep; the sessions close with the Corestore. */
  stop (): void {
    if (this.sweepTimer !== null) clearInterval(this.sweepTimer)
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
    this.touch(key)
  }

  /**
   * Holds open a feed Corestore opened because a peer opened its channel: a passive session
   * (it does not make the core replicate on other connections), kept while any peer replicates
   * the feed. Without a session Corestore closes such a core a few seconds after it was once
   * idle, even with a peer attached since, and that peer does not open the channel again.
   */
  adopt (key: string): void {
    if (this.cores.has(key)) return
    const core = this.opts.corestore.get({ key: Buffer.from(key, 'hex'), active: false })
    this.cores.set(key, core)
    this.passive.add(key)
    this.touch(key)
    this.pinWhile(key, () => core.ready()).catch((err: Error) => {
      if (this.cores.get(key) === core) { this.cores.delete(key); this.passive.delete(key) }
      this.opts.log.warn(`cannot hold feed ${key.slice(0, 12)} open for a peer: ${err.message}`)
    })
  }

  /**
   * Holds (adopt) every core Corestore still holds without a session here, of a feed `known` names.
   * One this pool closed as idle stays downloading in Hypercore for 20–40 s (its not-downloading
   * linger), so Corestore attaches it to each new connection and a peer pairs with its channel,
   * while Corestore closes it 4–6 s after it went idle, peer or not: the peer never reopens it.
   */
  adoptHeld (known: (key: string) => boolean): void {
    for (const core of this.opts.corestore.cores) {
      const key = core.key?.toString('hex')
      if (key !== undefined && !this.cores.has(key) && known(key)) this.adopt(key)
    }
  }

  /** A feed's open session (opened if need be); its callers use it before any timer can close it. */
  async core (key: string): Promise<Hypercore.Core> {
    this.touch(key)
    let core = this.cores.get(key)
    if (core !== undefined) this.activate(key)
    if (core === undefined) {
      core = this.opts.corestore.get({ key: Buffer.from(key, 'hex') })
      this.cores.set(key, core)
    }
    const opening = core
    await this.pinWhile(key, () => opening.ready())
    return core
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
      core.close().catch((err: Error) => { this.opts.log.warn(`could not close idle feed ${key.slice(0, 12)}: ${err.message}`) })
    }
  }
}
