import { EventEmitter } from 'node:events'
import fs from 'node:fs/promises'
import path from 'node:path'
import type Hyperswarm from 'hyperswarm'
import type DHT from 'hyperdht'
import type NoiseSecretStream from '@hyperswarm/secret-stream'
import type { HistoryStore } from '../history/history-store'
import type { FeedRecord } from '../history/index/history-index'
import { Lifecycle } from '../../shared/lifecycle'
import { consoleLogger, type Logger } from '../../shared/logger'
import { systemClock, type Clock, type ClockTimer } from '../../shared/clock'
import crypto from 'hypercore-crypto'
import { ALIVE_MAX, type AliveMessage, type DevicesMessage, type FeedAnnouncement, type HeldMessage, type LiveMessage, type RunningAgent } from './wire/arbor-messages'
import { HeldAcks } from './peers/held-acks'
import { AliveAsks, AliveRelays, signAlive, type AliveProof } from './peers/alive-proofs'
import { FailureDetector } from './peers/failure-detector'
import { Lease, leaseMargin, type Instant } from './peers/lease'
import { SILENT_FLOOR_MS, SilenceDeadlines, heardFrom, peerAddress } from './peers/silent-connections'
import { SyncSession, type SessionHost } from './wire/sync-session'
import { FeedAdmission, MAX_PENDING_PER_PEER, MAX_PENDING_TOTAL, type Eviction } from './peers/feed-admission'
import { FeedList, type HeldFeed } from './peers/feed-list'
import { PeerFeeds, pairs, type SavedMine } from './peers/peer-feeds'
import { decodeList, decodePeer, decodePeerFeedsFile, encodePeerFeedsFile, type PeerFeedsFile, type SavedListView } from './peers/peer-feeds-file'
import { writeStateFile } from '../disk/state-file'
import { PROTOCOL, peerVersion, type PeerVersion, type ProtocolVersions } from '../../shared/protocol-version'
import { ENTRY_SCHEMA_VERSION } from '../../shared/entry/entry'
import { ARBOR_VERSION } from '../../shared/app-version'

/** What the sync layer needs of the cluster: its secret and who is in it, and word when that changes. */
export interface ClusterMembership {
  readonly secret: Buffer | null
  /** `devices`: who is in the cluster changed (ClusterStoreEvents): the node tells its peers and drops who left */
  on (event: 'devices', listener: () => void): unknown
  off (event: 'devices', listener: () => void): unknown
  readonly name: string
  isTrusted (device: string): boolean
  devicesMessage (): DevicesMessage
  merge (msg: DevicesMessage, from: string): boolean
  seen (device: string, at: number): void
  topic (): Buffer | null
  proof (handshakeHash: Buffer, isInitiator: boolean): Buffer | null
  verifyProof (handshakeHash: Buffer, isInitiator: boolean, proof: Buffer): boolean
}

export interface BootstrapNode { host: string; port: number }

/**
 * How long a device may be silent before it is suspected dead (heartbeats every second):
 * three missed heartbeats and some. Shorter than Erlang's 45–75 s and Pekko's ~5.5 s, like
 * memberlist's LAN profile (~4 s at 3 nodes), so an opt-in agent is revived within 5 s.
 */
export const DEFAULT_SUSPECT_AFTER_MS = 4000

/** The first protocol minor (of major 1) whose devices answer `held` questions (acknowledged intents). */
export const HELD_SINCE_MINOR = 3

/** The first protocol minor (of major 1) whose devices relay and sign `alive` proofs (heard through a peer). */
export const ALIVE_SINCE_MINOR = 4

/**
 * How much longer than the detection window a device's signature over a nonce counts (and how
 * long a first question may wait for its answer): a nonce goes out with every heartbeat, and
 * its answer comes back through a relay within the lease's margin. So a device heard only
 * through a peer is taken for dead no sooner than it would be by that peer, whose own silence
 * window the owner's lease is measured against (ARCHITECTURE §14).
 */
export function relayAllowance (heartbeatMs: number, windowMs: number): number {
  return heartbeatMs + leaseMargin(windowMs)
}

/** How long an unacknowledged step waits before it says so (an answer takes a round trip and a disk write). */
export const HELD_QUIET_MS = 500

/** Why a step's intent is not acknowledged yet: no device connected, only devices of an older Arbor (`older`), or none answered yet. */
export interface HeldWait { why: 'none-connected' | 'older-only' | 'unanswered'; older: string[] }

/** Where a node keeps what its peers hold (peer-feeds-file.ts), in its history's directory. */
export const PEER_FEEDS_FILE = 'sync-peers.bin'
/** The JSON file protocol 1.2's first build wrote (it shipped nowhere): ignored, and removed on the first save. */
const OLD_PEER_FEEDS_FILE = 'sync-peers.json'
/** How long after a change of what peers hold it is saved: a crash loses at most this, and costs a full exchange. */
const PEER_FEEDS_SAVE_MS = 2000

/** The longest wait between lookups for paired devices that are not connected. */
const LOOKUP_MAX_MS = 8000
/** The first wait between lookups (then doubled up to LOOKUP_MAX_MS). */
const LOOKUP_FIRST_MS = 1000

export interface SyncNodeOptions {
  history: HistoryStore
  cluster: ClusterMembership
  /** a private DHT (`--bootstrap host:port`); default: the public one */
  bootstrap?: BootstrapNode[]
  /** false: no Hyperswarm, connections come only through attach() (in-process tests) */
  swarm?: boolean
  /** false: start with the network off (`arbor serve --offline`): nothing is sent until setOnline(true) */
  online?: boolean
  heartbeatMs?: number
  suspectAfterMs?: number
  /** while true, devices that are not paired may connect, for pairing only (no sync) */
  pairingOpen?: () => boolean
  /**
   * How long a new connection may take to open the arbor channel (default 3000 ms); then it
   * is dropped and the swarm connects again. Hyperswarm, when two devices dial each other at
   * once, can leave each side holding a connection the other dropped: without this, nothing
   * flows until the transport times out, some 12 s later.
   */
  openTimeoutMs?: number
  /** batch feed-length announcements for this long (a burst of appends is one message) */
  announceDelayMs?: number
  /** feeds a peer may make this device record before any block of them verifies: per peer, and in total (feed-admission.ts; tests set small ones) */
  pendingFeeds?: { perPeer: number; total: number }
  /** the versions this node says it speaks (default: this Arbor's, thisVersion()); tests set others */
  versions?: ProtocolVersions
  clock?: Clock
  /** the lease's wall clock (default Date.now, or the injected clock's time); tests move it apart from the monotonic one */
  wallClock?: () => number
  log?: Logger
}

/** The versions this Arbor speaks, as its hello says them. */
export function thisVersion (): ProtocolVersions {
  return { ...PROTOCOL, schema: ENTRY_SCHEMA_VERSION, app: ARBOR_VERSION }
}

/** A paired device as this one sees it. */
export interface PeerState {
  device: string
  name: string
  connected: boolean
  suspected: boolean
  /** when this device began to suspect it (its clock) */
  suspectedSince?: number
  lastHeard?: number
  /** blocks it holds that this device has not indexed yet */
  behind: number
  agents: RunningAgent[]
  /** how its Arbor compares with this one's, from its last hello (since this node started) */
  version?: PeerVersion
}

/** 'incompatible': it said hello, but the two do not sync (its PeerState's version says what to do) */
export type PeerEvent = { device: string; state: 'connected' | 'disconnected' | 'suspected' | 'recovered' | 'incompatible' }

export interface SyncNodeEvents {
  /** a paired device connected, went, was suspected or recovered, or does not sync */
  peer: [PeerEvent]
  /** the agents a peer runs */
  presence: [{ device: string; agents: RunningAgent[] }]
  /** the devices a peer hears changed */
  hears: [{ device: string; hears: string[] }]
  /** a peer echoed a heartbeat: the lease may be held again */
  lease: []
  /** a peer said it holds more of this device's feeds */
  held: []
  /** a live event from a peer's agent */
  live: [LiveMessage & { device: string }]
  /** the network was switched on or off here */
  online: [boolean]
  /** a device kept alive only by peers' relayed answers (or one awaited) may now be taken for dead */
  lapse: []
}

/**
 * Keeps this device's history in sync with its paired devices (DESIGN.md, "Sync and
 * trust"): a Hyperswarm on the cluster's topic whose firewall admits only paired
 * devices, one SyncSession per connection, feed announcements as the history grows,
 * heartbeats and a failure detector. Never blocks local work: everything here reacts
 * to the history, it is never awaited by it.
 */
export class SyncNode extends EventEmitter<SyncNodeEvents> {
  readonly history: HistoryStore
  readonly cluster: ClusterMembership
  private readonly opts: SyncNodeOptions
  private readonly log: Logger
  private readonly clock: Clock
  private readonly life: Lifecycle
  private readonly detector: FailureDetector
  /** acknowledged intents: what peers said they hold of this device's feeds, and what they asked (held-acks.ts) */
  private readonly held = new HeldAcks()
  /** heard through peers: this device's questions and the devices' signed answers (alive-proofs.ts) */
  private readonly asks: AliveAsks
  /** questions this device forwarded for its peers to the devices it hears */
  private readonly relays = new AliveRelays()
  /** peers that relayed a proof whose signature did not verify (said once each) */
  private readonly badProofFrom = new Set<string>()
  /** a device not heard for this long is asked about, so that an answer is due by the time it would be suspected */
  private readonly askAfterMs: number
  /** the feeds peers' announcements made this device record that are not verified yet, within bounds (feed-admission.ts) */
  private readonly admission: FeedAdmission
  /** peers whose dropped announcements were logged, until they are asked for their list again */
  private readonly droppedSaid = new Set<string>()
  /** what auto-revival agents here act under: renewed by peers echoing this device's heartbeats (lease.ts) */
  private readonly lease: Lease
  /** the lease's monotonic clock: the injected clock in tests, else performance.now (a wall-clock jump moves nothing) */
  private readonly mono: () => number
  /** the lease's wall clock, which counts a suspend (the monotonic one stands still then) */
  private readonly wall: () => number
  /** per conversation: when its agents last read what peers sent since a lapse (waitForLease) */
  private readonly caughtUp = new Map<string, number>()
  private readonly sessions = new Set<SyncSession>()
  private readonly versions: ProtocolVersions
  /** what each peer's last hello said of its versions */
  private readonly peerVersions = new Map<string, ProtocolVersions | 'unreadable'>()
  private readonly attached = new WeakSet<NoiseSecretStream>()
  /** this device's feed list as announced (kept as the history changes: its digest costs nothing to read); built on first need */
  private mine_: FeedList | null = null
  /** this device's list as saved, until `mine` is first needed and built from the history against it */
  private savedList: Buffer | null = null
  /** what this device knows of each peer's list (peer-feeds.ts), saved in PEER_FEEDS_FILE */
  private readonly peerFeeds = new Map<string, PeerFeeds>()
  /** peers' saved states not read yet: each is decoded when its peer first needs it (peerFeedsOf), not at start */
  private readonly savedPeers = new Map<string, Buffer>()
  /** this device's list as saved, which saved peers are relative to (null once none is left, or when it is gone) */
  private savedMine: SavedMine | null = null
  private peerFeedsTimer: NodeJS.Timeout | null = null
  private peerFeedsSaving: Promise<void> = Promise.resolve()
  private swarm: Hyperswarm | null = null
  /** Hyperswarm and HyperDHT, loaded at open unless `swarm: false` */
  private net: { Hyperswarm: typeof Hyperswarm; DHT: typeof DHT } | null = null
  private joinedTopic: Buffer | null = null
  private discovery: Hyperswarm.Discovery | null = null
  private lookupTimer: ClockTimer | null = null
  private online = true
  private heartbeatTimer: ClockTimer | null = null
  /** a check at the detection deadline that falls before the next heartbeat tick */
  private deadlineTimer: ClockTimer | null = null
  /** at the next moment a device heard only through peers would no longer be (isDown may turn) */
  private lapseTimer: ClockTimer | null = null
  private announceTimer: ClockTimer | null = null
  private readonly changed = new Set<string>()
  private agents: RunningAgent[] = []
  /** when this node started: a device never heard from since then is down after the detection window */
  private startedAt = 0
  private readonly sessionHost: SessionHost
  /** how long a new connection to each device may stay silent (silent-connections.ts) */
  private readonly silence: SilenceDeadlines
  /** when each session's connection came (for how long its arbor channel took to open) */
  private readonly attachedAt = new WeakMap<SyncSession, number>()
  /** a feed was added, or this device can serve more of it: peers hear of it */
  private readonly onFeed = (rec: FeedRecord): void => {
    this.feedChanged(rec.key)
    if (!rec.own && rec.indexed > 0) this.askForFeeds(this.admission.verified(rec.key))
    if (!this.held.isWanted(rec.key)) return
    // Answered after the announcement of that length has gone to every peer (timers of one
    // delay fire in order): a device that may revive the writer's agent hears of the blocks
    // before the writer acts on the answer.
    const t = this.clock.setTimeout(() => { this.answerTimers.delete(t); this.answerHeld(rec.key) }, this.opts.announceDelayMs ?? 10)
    this.answerTimers.add(t)
  }
  private readonly answerTimers = new Set<ClockTimer>()

  constructor (opts: SyncNodeOptions) {
    super()
    this.opts = opts
    this.history = opts.history
    this.cluster = opts.cluster
    this.log = opts.log ?? consoleLogger('sync')
    this.clock = opts.clock ?? systemClock
    this.detector = new FailureDetector(opts.suspectAfterMs ?? DEFAULT_SUSPECT_AFTER_MS)
    this.admission = new FeedAdmission(opts.pendingFeeds?.perPeer ?? MAX_PENDING_PER_PEER, opts.pendingFeeds?.total ?? MAX_PENDING_TOTAL)
    const window = this.detector.suspectAfterMs
    // a look at the lease later than a tick and the margin means this device stalled
    this.lease = new Lease(window, leaseMargin(window), (opts.heartbeatMs ?? 1000) + leaseMargin(window))
    const allowance = relayAllowance(opts.heartbeatMs ?? 1000, window)
    this.asks = new AliveAsks(window + allowance, allowance)
    this.askAfterMs = Math.max(0, window - allowance)
    const clock = opts.clock
    this.mono = clock !== undefined ? () => clock.now() : () => performance.now()
    this.wall = opts.wallClock ?? (clock !== undefined ? () => clock.now() : () => Date.now())
    this.online = opts.online ?? true
    this.versions = opts.versions ?? thisVersion()
    this.life = new Lifecycle(() => this.open(), () => this.shut())
    this.sessionHost = this.makeSessionHost()
    this.silence = new SilenceDeadlines(SILENT_FLOOR_MS, this.sessionHost.openTimeoutMs)
  }

  ready (): Promise<void> { return this.life.ready() }
  close (): Promise<void> { return this.life.close() }

  private async open (): Promise<void> {
    this.startedAt = this.clock.now()
    await this.history.ready()
    await this.loadFeedLists()
    this.history.on('feed', this.onFeed)
    this.cluster.on('devices', this.onDevices)
    this.history.setPeers({ lack: (key, length) => this.peersLack(key, length), have: (key, length) => this.peersHave(key, length) })
    // Loaded only for a node with a network: one opened for a single CLI command has none.
    if (this.opts.swarm !== false) this.net = await loadNetwork()
    // Started offline, the swarm is made only when the network is turned on: a DHT node
    // contacts its bootstrap nodes as soon as it exists.
    if (this.online) this.makeSwarm()
    await this.refresh()
    this.tick()
  }

  private makeSwarm (): void {
    const net = this.net
    if (net === null || this.swarm !== null) return
    const bootstrap = this.opts.bootstrap
    // A private DHT on loopback must bind loopback, or connections time out (notes/holepunch.md).
    const loopback = bootstrap !== undefined && bootstrap.length > 0 && bootstrap.every(b => b.host === '127.0.0.1' || b.host === 'localhost')
    const dht = new net.DHT({ ...(bootstrap !== undefined ? { bootstrap } : {}), ...(loopback ? { host: '127.0.0.1' } : {}), keyPair: this.history.keyPair })
    this.swarm = new net.Hyperswarm({
      keyPair: this.history.keyPair,
      dht,
      // Only paired devices get past the firewall (true = reject).
      firewall: (remotePublicKey: Buffer) => !this.cluster.isTrusted(remotePublicKey.toString('hex')) && this.opts.pairingOpen?.() !== true
    })
    this.swarm.on('connection', (conn: NoiseSecretStream) => { this.attach(conn) })
  }

  private async shut (): Promise<void> {
    this.history.off('feed', this.onFeed)
    this.cluster.off('devices', this.onDevices)
    this.history.setPeers({ lack: () => false, have: () => false })
    if (this.heartbeatTimer !== null) this.clock.clearTimeout(this.heartbeatTimer)
    if (this.deadlineTimer !== null) this.clock.clearTimeout(this.deadlineTimer)
    if (this.lapseTimer !== null) this.clock.clearTimeout(this.lapseTimer)
    if (this.announceTimer !== null) this.clock.clearTimeout(this.announceTimer)
    if (this.lookupTimer !== null) this.clock.clearTimeout(this.lookupTimer)
    for (const t of this.answerTimers) this.clock.clearTimeout(t)
    for (const s of [...this.sessions]) s.close('this device is shutting down')
    if (this.swarm !== null) await this.swarm.destroy()
    if (this.peerFeedsTimer !== null) { clearTimeout(this.peerFeedsTimer); void this.savePeerFeeds() }
    await this.peerFeedsSaving
  }

  private get peerFeedsFile (): string { return path.join(this.history.dir, PEER_FEEDS_FILE) }

  /**
   * What this device knew of its lists when it last ran: the file is read, nothing more. Its
   * own list is built from the history when first needed (`mine`), each peer's state when that
   * peer first needs it (peerFeedsOf): a start pays neither. A file this version cannot read
   * costs one full exchange per peer.
   */
  private async loadFeedLists (): Promise<void> {
    const file = this.peerFeedsFile
    let saved: PeerFeedsFile | null = null
    try {
      saved = decodePeerFeedsFile(await fs.readFile(file))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.log.warn(`${file} is not read: ${(err as Error).message}; each peer sends its whole feed list again`)
    }
    this.savedList = saved?.mine ?? null
    for (const [device, block] of saved?.peers ?? []) this.savedPeers.set(device, block)
  }

  /** This device's feed list as it announces it: built from the history on first need. */
  private get mine (): FeedList {
    this.mine_ ??= this.buildMine()
    return this.mine_
  }

  /**
   * This device's list from the history, with the digest saved beside it: only the feeds that
   * changed since the save are hashed (with no save, none until a peer asks: FeedList.of).
   * The saved list is in the history's order as a rule, so the two are compared in step; a
   * feed out of step is looked up.
   */
  private buildMine (): FeedList {
    let saved: SavedListView | null = null
    try {
      if (this.savedList !== null) saved = decodeList(this.savedList)
    } catch (err) {
      this.log.warn(`this device's saved feed list is not read (${(err as Error).message}); each peer sends its whole feed list again`)
    }
    this.savedList = null
    // only feeds with a block to serve: one held here unverified is announced by whoever can serve it
    const feeds: FeedRecord[] = []
    const now: HeldFeed[] = []
    for (const f of this.history.feeds()) {
      const length = this.history.availableLength(f.key)
      if (length > 0) { feeds.push(f); now.push({ conversation: f.conversation, length }) }
    }
    if (saved === null) return FeedList.of(new Map(feeds.map((f, i) => [f.key, now[i] as HeldFeed])))
    const inStep: Array<number | undefined> = new Array(feeds.length)
    const outOfStep = new Map<string, number>()
    let j = 0
    for (let i = 0; i < saved.size; i++) {
      if (j < feeds.length && saved.keyIs(i, (feeds[j] as FeedRecord).key)) inStep[j++] = saved.lengths[i]
      else outOfStep.set(saved.key(i), saved.lengths[i] as number)
    }
    const map = new Map<string, HeldFeed>()
    const changed: number[] = []
    const diff = new Map<string, number | null>()
    let matched = j
    for (let i = 0; i < feeds.length; i++) {
      const f = feeds[i] as FeedRecord
      const cur = now[i] as HeldFeed
      let was = inStep[i]
      if (was === undefined && outOfStep.size > 0) {
        was = outOfStep.get(f.key)
        if (was !== undefined) matched++
      }
      if (was === undefined) { diff.set(f.key, null); changed.push(i); continue }
      map.set(f.key, was === cur.length ? cur : { conversation: cur.conversation, length: was })
      if (was !== cur.length) { diff.set(f.key, was); changed.push(i) }
    }
    // a saved feed the history does not hold (or one saved twice): the saved digest is not of a list this device can rebuild
    if (matched !== saved.size || map.size !== saved.size) {
      this.savedMine = null
      return FeedList.of(new Map(feeds.map((f, i) => [f.key, now[i] as HeldFeed])))
    }
    const mine = FeedList.restore(map, saved.digest)
    for (const i of changed) mine.set((feeds[i] as FeedRecord).key, now[i] as HeldFeed)
    this.savedMine = this.savedPeers.size > 0 ? { size: map.size, diff } : null
    return mine
  }

  /** Saves the peers' lists a few seconds after a change (and on close): one write for a burst. */
  private peerFeedsChanged (): void {
    if (this.peerFeedsTimer !== null || this.life.closed) return
    this.peerFeedsTimer = setTimeout(() => { void this.savePeerFeeds() }, PEER_FEEDS_SAVE_MS)
    this.peerFeedsTimer.unref()
  }

  private savePeerFeeds (): Promise<void> {
    this.peerFeedsTimer = null
    // The saved peers are relative to the list saved before: read them before it is replaced.
    for (const device of [...this.savedPeers.keys()]) this.peerFeedsOf(device)
    const bytes = (): Buffer => encodePeerFeedsFile({ digest: this.mine.digest, feeds: pairs(this.mine) }, [...this.peerFeeds].map(([d, p]) => [d, p.saved(this.mine)]))
    // Only a cache: a failed write costs the next reconnect a full exchange, nothing more.
    this.peerFeedsSaving = writeStateFile(this.peerFeedsFile, bytes)
      .then(() => fs.rm(path.join(this.history.dir, OLD_PEER_FEEDS_FILE), { force: true }))
      .catch((err: Error) => this.log.warn(`could not save what peers hold: ${err.message}`))
    return this.peerFeedsSaving
  }

  /** What this device knows of a peer's list: read from the save on first need, else new. */
  private peerFeedsOf (device: string): PeerFeeds {
    let p = this.peerFeeds.get(device)
    if (p !== undefined) return p
    const block = this.savedPeers.get(device)
    p = new PeerFeeds(device)
    if (block !== undefined) {
      const mine = this.mine // built against the saved list first: what saved peers are relative to
      this.savedPeers.delete(device)
      try {
        p = PeerFeeds.restore(device, decodePeer(block), key => this.history.feedRecord(key)?.conversation, this.savedMine, mine)
      } catch (err) {
        this.log.warn(`what was saved of ${device.slice(0, 12)}'s feeds is not read (${(err as Error).message}); it sends its whole list again`)
      }
      if (this.savedPeers.size === 0) this.savedMine = null
    }
    this.peerFeeds.set(device, p)
    return p
  }

  /** Joins the cluster's topic (again), e.g. after pairing gave this device a cluster. */
  async refresh (): Promise<void> {
    const swarm = this.swarm
    const topic = this.cluster.topic()
    if (swarm === null || !this.online || topic === null) return
    if (this.joinedTopic !== null && this.joinedTopic.equals(topic)) return
    if (this.joinedTopic !== null) await swarm.leave(this.joinedTopic)
    this.joinedTopic = topic
    const discovery = swarm.join(topic, { server: true, client: true })
    this.discovery = discovery
    // Announcing finishes in the background; local work never waits for the network.
    swarm.flush().catch((err: Error) => this.log.warn(`could not announce on the network: ${err.message}`))
    // The join's own lookup ran beside the announce: a device that announced at the same
    // moment (both turned the network on, or restarted together) is not in it. Once this
    // announce is in, look again at once; whichever of two devices looks later finds the other.
    discovery.flushed().then(() => { if (this.discovery === discovery) this.lookupSoon(0) }, () => undefined)
    this.lookupSoon(LOOKUP_FIRST_MS)
  }

  /**
   * While some paired device is not connected, look the topic up again, backing off to
   * LOOKUP_MAX_MS: two devices that announce at the same moment miss each other's first
   * lookup, and Hyperswarm's own refresh is minutes away. One topic among a few devices is
   * a few UDP queries, so a returning device is found within seconds, not half a minute.
   */
  private lookupSoon (delayMs: number): void {
    if (this.lookupTimer !== null) this.clock.clearTimeout(this.lookupTimer)
    const next = Math.min(LOOKUP_MAX_MS, Math.max(LOOKUP_FIRST_MS, delayMs * 2))
    this.lookupTimer = this.clock.setTimeout(() => {
      this.lookupTimer = null
      const d = this.discovery
      if (d === null || !this.online || this.life.closed) return
      const connected = new Set([...this.sessions].filter(s => s.opened).map(s => s.remoteDevice))
      const missing = this.cluster.devicesMessage().devices.some(dev => dev.key !== this.history.device && !connected.has(dev.key))
      if (!missing) return
      d.refresh({ client: true, server: true }).catch((err: Error) => this.log.info(`looking for paired devices failed: ${err.message}`))
      this.lookupSoon(next)
    }, delayMs)
  }

  /**
   * Takes this device off the network (false) and back (true) without stopping it: for
   * metered or untrusted networks, and for tests that partition real processes.
   */
  async setOnline (on: boolean): Promise<void> {
    if (on === this.online) return
    this.online = on
    const swarm = this.swarm
    try {
      if (!on) {
        if (swarm !== null && this.joinedTopic !== null) await swarm.leave(this.joinedTopic)
        this.joinedTopic = null
        this.discovery = null
        for (const s of [...this.sessions]) s.close('the network was turned off on this device')
        if (swarm !== null) await swarm.suspend()
      } else {
        if (swarm !== null) await swarm.resume()
        else if (!this.life.closed) this.makeSwarm()
        await this.refresh()
      }
    } finally {
      // Whoever flipped the switch (UI, CLI), every UI learns the state.
      this.emit('online', on)
    }
  }

  get isOnline (): boolean { return this.online }

  /** The private DHT's bootstrap nodes (`--bootstrap`); undefined: the public HyperDHT. */
  get bootstrap (): readonly BootstrapNode[] | undefined { return this.opts.bootstrap }

  /** The swarm (for pairing, which meets on its own topics), or null without a network (or before it was first turned on). */
  get hyperswarm (): Hyperswarm | null { return this.swarm }

  /** Runs the protocol on a connection (from the swarm, or from a test's in-process network). */
  attach (stream: NoiseSecretStream): SyncSession | null {
    const remote = stream.remotePublicKey?.toString('hex')
    if (remote !== undefined && !this.cluster.isTrusted(remote) && this.opts.pairingOpen?.() === true) {
      // A device that may be pairing: the connection is left to the pairing protocol;
      // no replication and no arbor channel, so it learns nothing.
      return null
    }
    if (!this.online || remote === undefined || !this.cluster.isTrusted(remote)) {
      stream.destroy()
      return null
    }
    this.attached.add(stream)
    const session = new SyncSession(stream, this.sessionHost)
    this.sessions.add(session)
    session.start()
    this.watchSilence(stream, session)
    return session
  }

  /**
   * Drops a connection on which nothing at all came from the peer within its wait, and dials
   * the device again at once. HyperDHT can hand one side a connection whose other end was
   * never made (the client's LAN shortcut connects while the server's holepuncher aborts and
   * destroys its raw stream): all sent on it is lost, the peer's own dials may be refused as
   * duplicates of it, and only the open timeout, then Hyperswarm's 1–5 s retry timer, ended
   * it — 5–15 s without sync. The wait (SilenceDeadlines) is short only where a ping of the
   * peer's address shows the link is fast; a slow link is not dropped while its first bytes
   * are legitimately on their way.
   */
  private watchSilence (stream: NoiseSecretStream, session: SyncSession): void {
    if (stream.destroyed) return
    const device = session.remoteDevice
    const started = this.clock.now()
    this.attachedAt.set(session, started)
    const timers: ClockTimer[] = []
    let settled = false
    const check = (waited: number, quick: boolean): void => {
      if (settled || stream.destroyed || this.life.closed || session.hello !== null) return
      if (heardFrom(stream)) { settled = true; return }
      settled = true
      this.silence.dropped(device, quick)
      // After Hyperswarm's own close handler (registered first), which frees the device for a new dial.
      stream.once('close', () => this.dialNow(device))
      session.close(`nothing came from the peer within ${waited} ms: its end of the connection was never made`)
    }
    // Checked after a turn of the event loop: what arrived while this process was busy is read
    // in the poll phase, which runs after due timers and before setImmediate callbacks.
    const checkAt = (ms: number, quick: boolean): void => {
      timers.push(this.clock.setTimeout(() => setImmediate(() => check(ms, quick)), ms - (this.clock.now() - started)))
    }
    checkAt(this.silence.wait(device), false)
    const to = peerAddress(stream)
    const dht = this.swarm?.dht
    if (to !== null && dht !== undefined) {
      // One UDP round trip to the address the connection's packets go to: the peer's DHT node
      // answers there on a LAN or loopback; behind a NAT it usually does not, and the ordinary wait stands.
      dht.ping(to).then(() => {
        const quick = this.silence.quickWait(device, this.clock.now() - started)
        if (quick !== null && !settled) checkAt(quick, true)
      }, () => undefined)
    }
    stream.once('close', () => { settled = true; for (const t of timers) this.clock.clearTimeout(t) })
  }

  /**
   * Dials a paired device now, not when Hyperswarm's retry timer (1–5 s, more after a few
   * attempts) comes round. joinPeer queues the dial; leavePeer at once, so the device stays
   * a peer of the topic rather than one Hyperswarm keeps re-dialling on its own for ever.
   */
  private dialNow (device: string): void {
    const swarm = this.swarm
    if (swarm === null || !this.online || this.life.closed || !this.cluster.isTrusted(device)) return
    if (this.openSessions().some(s => s.remoteDevice === device)) return
    const key = Buffer.from(device, 'hex')
    swarm.joinPeer(key)
    swarm.leavePeer(key)
  }

  /** Agents running on this device, announced to peers (presence). */
  setAgents (agents: RunningAgent[]): void {
    this.agents = agents
    for (const s of this.sessions) if (s.opened) s.sendPresence(agents)
  }

  /** Streams a live event (tokens, tool output) to the other devices' UIs. */
  broadcastLive (msg: LiveMessage): void {
    for (const s of this.sessions) if (s.opened) s.sendLive(msg)
  }

  /** Who is in the cluster changed (the cluster's `devices` event): peers hear it, a device gone is dropped, one new may connect. */
  private readonly onDevices = (): void => {
    for (const device of this.peerFeeds.keys()) if (!this.cluster.isTrusted(device)) { this.peerFeeds.delete(device); this.admission.forget(device) }
    // what a device gone had pending no longer counts: those it kept waiting may be asked now
    this.askForFeeds(this.admission.due())
    for (const device of this.savedPeers.keys()) if (!this.cluster.isTrusted(device)) this.savedPeers.delete(device)
    this.lease.retain(device => this.cluster.isTrusted(device))
    if (this.savedPeers.size === 0) this.savedMine = null
    for (const s of [...this.sessions]) {
      if (!this.cluster.isTrusted(s.remoteDevice)) s.close('the device was forgotten')
      else if (s.opened) s.sendDevices()
    }
    // The firewall bans a device it refused; one that is trusted now may connect again.
    for (const d of this.cluster.devicesMessage().devices) {
      const peer = (this.swarm as unknown as { peers?: Map<string, { ban (b: boolean): void }> } | null)?.peers?.get(d.key)
      peer?.ban(false)
    }
    this.attachPending()
    void this.refresh()
  }

  /** Starts syncing on swarm connections to trusted devices that have no session (paired after they connected). */
  private attachPending (): void {
    for (const conn of this.swarm?.connections ?? []) {
      const stream = conn as NoiseSecretStream
      if (stream.destroyed || this.attached.has(stream) || stream.remotePublicKey === null) continue
      if (this.cluster.isTrusted(stream.remotePublicKey.toString('hex'))) this.attach(stream)
    }
  }

  peers (): PeerState[] {
    const byDevice = new Map<string, SyncSession>()
    for (const s of this.sessions) if (s.opened) byDevice.set(s.remoteDevice, s)
    return this.cluster.devicesMessage().devices.filter(d => d.key !== this.history.device).map(d => {
      const s = byDevice.get(d.key)
      const last = this.detector.lastHeard(d.key)
      const p: PeerState = {
        device: d.key,
        // the name the cluster shows (self-signed, told apart from a look-alike), not what the peer says in hello
        name: d.name,
        connected: s !== undefined,
        suspected: this.detector.isSuspected(d.key),
        behind: s?.behind() ?? 0,
        agents: s?.remoteAgents ?? []
      }
      if (last !== undefined) p.lastHeard = last
      const since = this.detector.suspectedSince(d.key)
      if (since !== undefined) p.suspectedSince = since
      const v = this.peerVersions.get(d.key)
      if (v !== undefined) p.version = peerVersion(this.versions, v, d.name)
      return p
    })
  }

  /**
   * Whether a device is considered dead (placement's "suspected"): silent past the
   * detection window, its connection lost, or never heard from since this node started
   * longer than the window ago — and not heard through a peer either (its own signed answer
   * to a recent nonce of this device's, relayed: a device cut off from this one alone is not
   * dead; alive-proofs.ts). With its network off this device knows nothing of the
   * others: it is the one away, so none is taken for dead.
   */
  isDown (device: string): boolean {
    if (!this.online) return false
    if (this.hearing().includes(device)) return false
    const now = this.clock.now()
    // heard through a peer only by its own signature over a recent nonce of this device's, or
    // an answer may still be on its way; a peer's bare word (`hears`) counts for nothing here
    if (this.asks.heardThrough(device, now) || this.asks.answerDue(device, now)) return false
    if (this.detector.isSuspected(device)) return true
    return this.detector.lastHeard(device) === undefined && now - this.startedAt >= this.detector.suspectAfterMs
  }

  /** Now, on the lease's two clocks. */
  private instant (): Instant { return { mono: this.mono(), wall: this.wall() } }

  /** The devices this one hears right now: connected and not suspected. */
  private hearing (): string[] {
    const out = new Set<string>()
    for (const s of this.openSessions()) if (!this.detector.isSuspected(s.remoteDevice)) out.add(s.remoteDevice)
    return [...out]
  }

  /**
   * Whether auto-revival agents here may act now: they hold the lease, or nobody could revive
   * them (the network is off by choice, or no other device is paired). Each look also notes a
   * lapse (Lease.check): a stall on this side, or the lease no longer held.
   */
  holdsLease (): boolean {
    return this.lease.check(this.instant(), this.alone())
  }

  /** Whether nobody could revive this device's agents: its network is off by choice, or no other device is paired. */
  private alone (): boolean {
    return !this.online || !this.cluster.devicesMessage().devices.some(d => d.key !== this.history.device)
  }

  /** Whether a peer's Arbor relays and signs `alive` proofs (protocol 1.4 on). */
  private speaksAlive (device: string): boolean {
    const v = this.peerVersions.get(device)
    return v !== undefined && v !== 'unreadable' && (v.major > 1 || v.minor >= ALIVE_SINCE_MINOR)
  }

  /** Whether a peer's Arbor answers `held` questions (protocol 1.3 on). */
  private speaksHeld (device: string): boolean {
    const v = this.peerVersions.get(device)
    return v !== undefined && v !== 'unreadable' && (v.major > 1 || v.minor >= HELD_SINCE_MINOR)
  }

  /** The live peers (connected, not suspected) that said they hold this device's feed `key` through `length`. */
  heldBy (key: string, length: number): string[] {
    return this.held.heldBy(key, length, this.hearing())
  }

  /**
   * Resolves once a live peer holds this device's feed `key` through `length` (acknowledged
   * over arbor/1), at once when nobody could revive this device's agents (network off by
   * choice, no other device), or when `signal` aborts or `needed` turns false (auto-revival
   * turned off). Asks every connected peer that can answer, again on each new connection.
   * Past HELD_QUIET_MS without an answer it reports why (`onWait`), and null when it ends.
   */
  async waitForHeld (signal: AbortSignal, key: string, length: number, needed: () => boolean, onWait: (w: HeldWait | null) => void): Promise<void> {
    const done = (): boolean => this.alone() || this.heldBy(key, length).length > 0
    if (done()) return
    const asked = new WeakSet<SyncSession>()
    await this.waitSaying(signal, () => done() || !needed(), () => this.heldWait(), onWait, ['held', 'peer', 'online'], () => {
      for (const s of this.openSessions()) {
        if (asked.has(s) || !this.speaksHeld(s.remoteDevice)) continue
        asked.add(s)
        s.sendHeld({ want: [{ key, length }] })
      }
    })
  }

  /**
   * Waits until `over` (or the abort, or the node closing), re-checking on `events`, each
   * second and when `dueIn` says something changes; once it has waited HELD_QUIET_MS it says why (`why`, again when that changes) and
   * says it no longer waits at the end. A wait answered at once shows nothing.
   */
  private async waitSaying (signal: AbortSignal, over: () => boolean, why: () => HeldWait, onWait: (w: HeldWait | null) => void, events: ReadonlyArray<keyof SyncNodeEvents>, each: () => void = () => {}, dueIn: () => number = () => Number.POSITIVE_INFINITY): Promise<void> {
    const since = this.mono()
    let said: string | null = null
    try {
      while (!over() && !signal.aborted && !this.life.closed) {
        each()
        const waited = this.mono() - since
        if (waited >= HELD_QUIET_MS) {
          const w = why()
          const k = JSON.stringify(w)
          if (k !== said) { said = k; onWait(w) }
        }
        await this.nextEvent(signal, Math.max(1, Math.min(said === null ? HELD_QUIET_MS - waited : 1000, dueIn())), events)
      }
    } finally {
      if (said !== null) onWait(null)
    }
  }

  /** Why no live peer acknowledges yet. */
  private heldWait (): HeldWait {
    const live = this.hearing()
    if (live.length === 0) return { why: 'none-connected', older: [] }
    const older = live.filter(d => !this.speaksHeld(d))
    return { why: older.length === live.length ? 'older-only' : 'unanswered', older }
  }

  /** How much of a peer's feed this device holds: stored in its copy and indexed (its own feeds are not acknowledged). */
  private heldLength (key: string): number {
    const rec = this.history.feedRecord(key)
    return rec === undefined || rec.own ? 0 : rec.indexed
  }

  /** A feed's copy here grew: the questions about it that this answers. */
  private answerHeld (key: string): void {
    const have = this.heldLength(key)
    if (have === 0) return
    for (const device of this.held.grew(key, have)) {
      for (const s of this.openSessions()) if (s.remoteDevice === device) s.sendHeld({ held: [{ key, length: have }] })
    }
  }

  private onHeld (s: SyncSession, m: HeldMessage): void {
    let grew = false
    for (const f of m.held ?? []) if (this.held.ack(s.remoteDevice, f.key, f.length)) grew = true
    if (grew) this.emit('held')
    const now: Array<{ key: string; length: number }> = []
    for (const f of m.want ?? []) {
      const n = this.held.want(s.remoteDevice, f.key, f.length, this.heldLength(f.key))
      if (n !== null) now.push({ key: f.key, length: n })
    }
    if (now.length > 0) s.sendHeld({ held: now })
  }

  /**
   * Resolves once this device holds its lease (at once if it does and this conversation has
   * caught up since the last lapse), or when `signal` aborts. After a stall the lease has
   * expired: it waits for every peer the lease is owed to (Lease.owed) to echo a heartbeat sent
   * after the lapse, so what they sent before that echo (presence, a revival) has been read,
   * then for the blocks they announced.
   */
  async waitForLease (signal: AbortSignal, conversation: string, needed: () => boolean = () => true, onWait: (w: HeldWait | null) => void = () => {}): Promise<void> {
    // Held is not enough after a lapse: echoes may have renewed it before this agent looked
    // (a call returning after its device woke), while what its peers sent before them — a
    // revival — is still on its way. The agents of each conversation catch up once per lapse.
    const held = this.holdsLease()
    const lapse = this.lease.lapsedAt
    if (held && (lapse === null || (this.caughtUp.get(conversation) ?? Number.NEGATIVE_INFINITY) >= lapse)) return
    const since = this.mono()
    // Answers count from the lapse (or now): after a suspend the monotonic clock says nothing
    // of how long it lasted, and heartbeats sent before it read earlier than this moment.
    const from = lapse ?? since
    const end = this.lease.expiresAt(this.instant())
    const ago = Math.max(since - end.mono, this.wall() - end.wall)
    if (!held) this.log.warn(`auto-revival agents wait for the lease (${Number.isFinite(ago) ? `expired ${Math.round(ago)} ms ago` : 'no peer has echoed this device yet'}): until the peers answer`)
    this.beat() // a heartbeat sent since: its echoes are the answers
    const waiting = (): boolean => !signal.aborted && !this.life.closed && needed()
    // Held again, and every peer the lease is owed to (suspected or not: on waking all are, and
    // a suspicion raised then drops nobody) answered since; one soundly suspected is dead or cut
    // off and answers nothing. Bounded by the abort, the node closing and `needed` (auto-revival off).
    const answered = (): boolean => this.holdsLease() && (!this.online || this.lease.answeredSince(from, this.instant()))
    await this.waitSaying(signal, () => answered() || !needed(), () => ({ why: this.openSessions().length === 0 ? 'none-connected' : 'unanswered', older: [] }), onWait, ['lease', 'online', 'peer'], undefined, () => this.lease.soundIn(this.instant()))
    // Entries replicate beside the arbor channel: the blocks of this conversation that peers
    // announced before their echo (a revival among them) are read before the agent acts; those
    // that answered are heard, so not suspected (`unread`). At most two windows: a peer that
    // never serves them must not stall the agent for ever.
    const deadline = this.mono() + 2 * this.detector.suspectAfterMs
    while (this.unread(conversation) > 0 && waiting() && this.mono() < deadline) await this.nextEvent(signal, 50)
    // caught up with what came before `from`: a lapse during this wait calls for another look
    if (waiting() && this.holdsLease()) this.caughtUp.set(conversation, from)
    if (!held) this.log.warn(`auto-revival agents ${this.holdsLease() ? 'hold the lease again' : 'stopped waiting for the lease'} after ${Math.round(this.mono() - since)} ms`)
  }

  /** Resolves on one of `events` (default: a lease renewal, the network switched), the abort, or after `ms`. */
  private async nextEvent (signal: AbortSignal, ms: number, events: ReadonlyArray<keyof SyncNodeEvents> = ['lease', 'online']): Promise<void> {
    await new Promise<void>(resolve => {
      const done = (): void => {
        for (const e of events) this.off(e, done)
        signal.removeEventListener('abort', done)
        this.clock.clearTimeout(timer)
        resolve()
      }
      // on the injected clock: a paused device's wait does not end while it is paused
      const timer = this.clock.setTimeout(done, ms)
      for (const e of events) this.on(e, done)
      signal.addEventListener('abort', done)
    })
  }


  /** Heartbeats to every peer now (on every tick, and at once when who this device hears changes). */
  private beat (): void {
    const now = this.clock.now()
    const hears = this.hearing()
    this.lease.sentHeartbeat(now, this.instant())
    for (const s of this.sessions) if (s.opened) s.heartbeat(now, hears)
    this.askAlive(now, hears)
  }

  /**
   * With a fresh nonce, asks the live peers that relay (1.4 on) about every paired device this
   * one does not hear, or has not heard for `askAfterMs` (so that an answer is due by the time
   * it would be suspected): each forwards the question to the device if it hears it.
   */
  private askAlive (now: number, hears: string[]): void {
    const self = this.history.device
    const heard = new Set(hears)
    const about = this.cluster.devicesMessage().devices.map(d => d.key)
      .filter(d => d !== self && (!heard.has(d) || now - (this.detector.lastHeard(d) ?? now) >= this.askAfterMs))
      .slice(0, ALIVE_MAX)
    const asks: Array<[SyncSession, string[]]> = []
    if (about.length > 0) {
      for (const s of this.openSessions()) {
        const others = about.filter(d => d !== s.remoteDevice)
        if (others.length > 0 && heard.has(s.remoteDevice) && this.speaksAlive(s.remoteDevice)) asks.push([s, others])
      }
    }
    const n = asks.length === 0 ? null : crypto.randomBytes(32).toString('hex')
    this.asks.asked(n, about, now)
    if (n !== null) for (const [s, others] of asks) s.sendAlive({ ask: { n, about: others } })
    this.watchLapse(now)
  }

  /** Says so (`lapse`) when a device heard only through peers would be no longer: a revival is decided then, not at a later sweep. */
  private watchLapse (now: number): void {
    if (this.lapseTimer !== null) this.clock.clearTimeout(this.lapseTimer)
    this.lapseTimer = null
    const at = this.asks.nextLapse(now)
    if (at === undefined) return
    this.lapseTimer = this.clock.setTimeout(() => {
      this.lapseTimer = null
      this.emit('lapse')
      this.watchLapse(this.clock.now())
    }, at - now)
  }

  /**
   * Heard through a peer (alive-proofs.ts): a question is forwarded to each device asked about
   * that this one hears; a question relayed to this device is answered, signed, for askers of
   * its cluster; an answer to this device is counted once its signature verifies, and an answer
   * to a question this device forwarded goes on to its asker.
   */
  private onAlive (s: SyncSession, m: AliveMessage): void {
    const self = this.history.device
    const from = s.remoteDevice
    if (m.ask !== undefined) {
      for (const d of m.ask.about) {
        if (d === self || d === from) continue
        const to = this.openSessions().find(o => o.remoteDevice === d && !this.detector.isSuspected(d) && this.speaksAlive(d))
        if (to === undefined) continue
        this.relays.forward(d, from, m.ask.n)
        to.sendAlive({ relay: [{ asker: from, n: m.ask.n }] })
      }
    }
    if (m.relay !== undefined) {
      const proofs = m.relay.filter(r => r.asker !== self && this.cluster.isTrusted(r.asker))
        .map(r => ({ device: self, asker: r.asker, n: r.n, sig: signAlive(this.history.keyPair, r.asker, r.n) }))
      if (proofs.length > 0) s.sendAlive({ proofs })
    }
    const now = this.clock.now()
    for (const p of m.proofs ?? []) {
      if (p.asker === self) this.countProof(from, p, now)
      else if (p.device === from && this.relays.answered(from, p.asker, p.n)) {
        for (const o of this.openSessions()) if (o.remoteDevice === p.asker) o.sendAlive({ proofs: [p] })
      }
    }
  }

  /** A proof for this device, relayed by `relay`: counted once checked; a bad signature is said once per relay. */
  private countProof (relay: string, p: AliveProof, now: number): void {
    const outcome = this.asks.accept(relay, p, now)
    if (outcome === 'counted') this.watchLapse(now)
    if (outcome !== 'bad-signature' || this.badProofFrom.has(relay)) return
    this.badProofFrom.add(relay)
    this.log.warn(`ignored a proof that ${p.device.slice(0, 12)} is alive, relayed by ${relay.slice(0, 12)}: its signature does not verify (that device may run a modified Arbor; said once)`)
  }

  /** Connected devices, not suspected, whose announced feeds include the conversation. */
  holders (conversation: string): string[] {
    const out = new Set<string>()
    for (const s of this.openSessions()) {
      if (out.has(s.remoteDevice) || this.detector.isSuspected(s.remoteDevice)) continue
      for (const f of s.remoteFeeds.values()) if (f.conversation === conversation) { out.add(s.remoteDevice); break }
    }
    return [...out]
  }

  /**
   * Blocks of a conversation that live peers (connected, not suspected) announced and this
   * device has not indexed: a revival waits for them, the owner's last intent may be among
   * them. A suspected device's word does not count: the dead owner alone announcing blocks
   * nobody else holds means no peer acknowledged them, so no step of theirs started.
   */
  unread (conversation: string): number {
    let n = 0
    for (const s of this.openSessions()) if (!this.detector.isSuspected(s.remoteDevice)) n = Math.max(n, s.behind(conversation))
    return n
  }

  /** Agents that connected devices (not suspected) announce running for a conversation. */
  announced (conversation: string): RunningAgent[] {
    const out: RunningAgent[] = []
    for (const s of this.openSessions()) {
      if (this.detector.isSuspected(s.remoteDevice)) continue
      for (const a of s.remoteAgents) if (a.conversation === conversation && a.device === s.remoteDevice) out.push(a)
    }
    return out
  }

  /** Whether a connected peer lacks blocks of a feed below `length` (it will ask this device for them: SyncSession.lacks). */
  private peersLack (key: string, length: number): boolean {
    for (const s of this.sessions) if (s.lacks(key, length)) return true
    return false
  }

  /** Whether a connected peer announced more than `length` blocks of a feed (it can send them). */
  private peersHave (key: string, length: number): boolean {
    for (const s of this.sessions) if (s.opened && s.remoteHas(key, length)) return true
    return false
  }

  /**
   * The feeds of a peer's announcement this device takes its word on (feed-admission.ts): a
   * feed it holds a record of always; a new one only with blocks to fetch, and while the
   * peer's pending feeds and everyone's are within their bounds, or the peer is below its fair
   * share of the total (another peer's pending feed is then evicted for it). The rest are
   * dropped, said once for the peer.
   */
  private admitFeeds (device: string, feeds: FeedAnnouncement[]): FeedAnnouncement[] {
    const out: FeedAnnouncement[] = []
    let dropped = 0
    let evicted = false
    const busy = (key: string): boolean => this.history.checking(key)
    for (const f of feeds) {
      if (this.history.feedRecord(f.key) !== undefined) { out.push(f); continue }
      if (f.length === 0) continue
      const a = this.admission.admit(device, f.key, busy)
      if (!a.admitted) { dropped++; continue }
      out.push(f)
      if (a.evicted !== undefined) { this.evict(a.evicted); evicted = true }
    }
    if (dropped > 0) this.feedsDropped(device, dropped)
    if (!evicted) return out
    // A feed this message named that was evicted for a later one is neither held nor pending:
    // not taken, and the peer is owed a request for it, as for one dropped.
    const taken = out.filter(f => this.history.feedRecord(f.key) !== undefined || this.admission.isPending(f.key))
    if (taken.length < out.length) this.admission.owe(device)
    // the peers owed a request for an evicted feed are asked now if they may be
    this.askForFeeds(this.admission.due())
    return taken
  }

  /**
   * A pending feed was evicted to take another peer's (feed-admission.ts): it is forgotten here
   * as if never announced, and every peer that announced it is owed a request for its list, so
   * it comes again, from whoever holds it, once there is room.
   */
  private evict ({ key, device }: Eviction): void {
    if (!this.history.forgetUnverifiedFeed(key)) this.log.warn(`feed ${key.slice(0, 12)} was evicted from what peers made this device record, but is being read: kept`)
    for (const p of this.peerFeeds.values()) if (p.forget(key)) this.admission.owe(p.device)
    this.peerFeedsChanged()
    if (this.droppedSaid.has(device)) return
    this.droppedSaid.add(device)
    this.log.info(`${this.nameOf(device)} has more feeds waiting to arrive here than its share while others wait (${this.admission.pendingOf(device)} of its feeds wait, ${this.admission.inTotal} in all): its newest are forgotten for now, and asked for again as its others arrive`)
  }

  private nameOf (device: string): string {
    return this.cluster.devicesMessage().devices.find(d => d.key === device)?.name ?? device.slice(0, 12)
  }

  /** Some of a peer's announcements were dropped over the bounds: said once until it is asked again. */
  private feedsDropped (device: string, n: number): void {
    if (this.droppedSaid.has(device)) return
    this.droppedSaid.add(device)
    this.log.info(`${this.nameOf(device)} announced more new feeds than this device records before any of them arrives (${this.admission.pendingOf(device)} of its feeds wait to arrive, at most ${this.admission.perPeer} a device and ${this.admission.inTotal} in all): ${n} and any more it announces are left for now, and asked for again as those arrive`)
  }

  /** Asks these peers for their whole lists again: what was dropped over the bounds may be taken now. */
  private askForFeeds (devices: string[]): void {
    for (const device of devices) {
      this.droppedSaid.delete(device)
      for (const s of this.openSessions()) if (s.remoteDevice === device) s.askForFeeds()
    }
  }

  private openSessions (): SyncSession[] {
    return [...this.sessions].filter(s => s.opened)
  }

  /** Every feed known to have grown is announced together after a short delay. */
  private feedChanged (key: string): void {
    const rec = this.history.feedRecord(key)
    if (rec === undefined) return
    // Nobody can be sent blocks of a feed this device holds none of: it is not announced (or
    // passed on), so a peer's made-up feeds go no further than this device.
    const length = this.history.availableLength(key)
    if (length === 0) return
    // a list built just now has this change already (and, against the saved list, in savedMine)
    const built = this.mine_ === null
    const was = this.mine.get(key)
    const changed = this.mine.set(key, { conversation: rec.conversation, length })
    if (!changed && !built) return
    // peers not read yet are relative to the saved list: keep how it differs from this one
    if (changed && this.savedMine !== null && !this.savedMine.diff.has(key)) this.savedMine.diff.set(key, was?.length ?? null)
    // Every peer, connected or not, is owed this change: a reconnect sends it (FeedsSince).
    for (const p of this.peerFeeds.values()) p.localChanged(key, this.mine)
    this.peerFeedsChanged()
    this.changed.add(key)
    if (this.announceTimer !== null) return
    this.announceTimer = this.clock.setTimeout(() => {
      this.announceTimer = null
      const feeds = this.mine.list(this.changed)
      this.changed.clear()
      // Every peer hears every change, its own feeds included: its picture of this
      // device's list stays exact, so the next reconnect needs only the digest.
      for (const s of this.sessions) if (s.opened) s.sendFeeds(feeds)
    }, this.opts.announceDelayMs ?? 10)
  }

  private tick (): void {
    const every = this.opts.heartbeatMs ?? 1000
    this.heartbeatTimer = this.clock.setTimeout(() => {
      // a look on every tick (on waking, timers fire before sockets are read) and before every
      // echo: a lapse is seen even when echoes end it before any agent checks
      this.holdsLease()
      this.checkSilence()
      this.beat()
      // A connection can outlive its session (duplicate connections, pairing races): use it.
      if (this.online) this.attachPending()
      this.tick()
      // Suspect a silent device when its window ends, not up to a heartbeat later.
      if (this.deadlineTimer !== null) this.clock.clearTimeout(this.deadlineTimer)
      this.deadlineTimer = null
      const due = this.detector.nextDeadline()
      const now = this.clock.now()
      if (due !== undefined && due < now + every) {
        this.deadlineTimer = this.clock.setTimeout(() => { this.deadlineTimer = null; this.checkSilence() }, due - now)
      }
    }, every)
  }

  /** Suspects the devices silent for the whole detection window. */
  private checkSilence (): void {
    for (const device of this.detector.check(this.clock.now())) this.peerEvent({ device, state: 'suspected' })
  }

  private peerEvent (ev: PeerEvent): void {
    if (ev.state === 'suspected') {
      // the silence counts from the last word heard, as the peer counts this device's before it may revive
      const now = this.instant()
      const last = this.detector.lastHeard(ev.device)
      const silent = last === undefined ? 0 : Math.max(0, this.clock.now() - last)
      this.lease.suspected(ev.device, now, { mono: now.mono - silent, wall: now.wall - silent })
    }
    if (ev.state === 'recovered') this.lease.recovered(ev.device)
    // Peers learn at once that this device stopped (or started) hearing one: they may be cut off from it.
    if (ev.state !== 'disconnected') this.beat()
    this.emit('peer', ev)
  }

  private makeSessionHost (): SessionHost {
    const cluster = this.cluster
    // the host's `mine` reads the node's list, which a start replaces once it is loaded
    const mine = (): FeedList => this.mine
    return {
      history: this.history,
      get name () { return cluster.name },
      versions: this.versions,
      log: this.log,
      proof: (hh, init) => this.cluster.proof(hh, init),
      verify: (hh, remoteInit, proof) => this.cluster.verifyProof(hh, remoteInit, proof),
      devices: () => this.cluster.devicesMessage(),
      // what it changes comes back as the cluster's `devices` event (onDevices)
      mergeDevices: (msg, from) => { this.cluster.merge(msg, from) },
      presence: () => this.agents,
      openTimeoutMs: this.opts.openTimeoutMs ?? 3000,
      get mine () { return mine() },
      peerFeeds: device => this.peerFeedsOf(device),
      peerFeedsChanged: () => this.peerFeedsChanged(),
      admit: (device, feeds) => this.admitFeeds(device, feeds),
      onOpen: s => {
        const since = this.attachedAt.get(s)
        if (since !== undefined) this.silence.opened(s.remoteDevice, this.clock.now() - since)
        if (s.remoteVersions !== null) this.peerVersions.set(s.remoteDevice, s.remoteVersions)
        // Every 1.3 Arbor echoes (echo came without a bump, so an earlier minor may not): its
        // echoes are owed from its hello on, not only once one has arrived.
        this.lease.hello(s.remoteDevice, this.speaksHeld(s.remoteDevice))
        this.detector.heard(s.remoteDevice, this.clock.now())
        this.cluster.seen(s.remoteDevice, Date.now())
        this.peerEvent({ device: s.remoteDevice, state: 'connected' })
      },
      onIncompatible: s => {
        if (s.remoteVersions !== null) this.peerVersions.set(s.remoteDevice, s.remoteVersions)
        const name = this.cluster.devicesMessage().devices.find(d => d.key === s.remoteDevice)?.name ?? s.remoteDevice.slice(0, 12)
        this.log.warn(peerVersion(this.versions, s.remoteVersions ?? 'unreadable', name).advice ?? `${name} does not sync with this device`)
        this.emit('peer', { device: s.remoteDevice, state: 'incompatible' } satisfies PeerEvent)
      },
      onHeard: s => {
        if (this.detector.heard(s.remoteDevice, this.clock.now())) this.peerEvent({ device: s.remoteDevice, state: 'recovered' })
      },
      onPresence: (s, agents) => { this.emit('presence', { device: s.remoteDevice, agents }) },
      onHears: s => { this.emit('hears', { device: s.remoteDevice, hears: [...s.remoteHears] }) },
      onEcho: (s, t, hearsMe) => {
        this.holdsLease()
        if (this.lease.echoed(s.remoteDevice, t, hearsMe)) this.emit('lease')
      },
      onLive: (s, msg) => { this.emit('live', { device: s.remoteDevice, ...msg }) },
      onHeld: (s, msg) => { this.onHeld(s, msg) },
      onAlive: (s, msg) => { this.onAlive(s, msg) },
      onClose: s => {
        this.sessions.delete(s)
        if (s.hello === null || !s.compatible) return
        this.cluster.seen(s.remoteDevice, Date.now())
        const stillConnected = [...this.sessions].some(o => o.remoteDevice === s.remoteDevice && o.opened)
        if (stillConnected) return
        this.held.forgetWants(s.remoteDevice)
        this.relays.forget(s.remoteDevice)
        this.peerEvent({ device: s.remoteDevice, state: 'disconnected' })
        this.lookupSoon(LOOKUP_FIRST_MS)
        if (this.detector.lost(s.remoteDevice, this.clock.now())) this.peerEvent({ device: s.remoteDevice, state: 'suspected' })
      }
    }
  }
}

async function loadNetwork (): Promise<{ Hyperswarm: typeof Hyperswarm; DHT: typeof DHT }> {
  const [swarm, dht] = await Promise.all([import('hyperswarm'), import('hyperdht')])
  return { Hyperswarm: swarm.default, DHT: dht.default }
}
