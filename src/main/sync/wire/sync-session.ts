import c from 'compact-encoding'
import Protomux from 'protomux'
import type NoiseSecretStream from '@hyperswarm/secret-stream'
import type { HistoryStore } from '../../history/history-store'
import type { Logger } from '../../../shared/logger'
import {
  ARBOR_MESSAGES, arborMessages, helloVersions,
  type ArborMessage, type ArborMessageName, type Decoded, type DevicesMessage, type FeedAnnouncement, type FeedsDigest, type FeedsMessage, type FeedsSince,
  type AliveMessage, type HeartbeatMessage, type HeldMessage, type Hello, type LiveMessage, type RunningAgent
} from './arbor-messages'
import { compareVersions, speaksFeedsSince, type Compat, type ProtocolVersions } from '../../../shared/protocol-version'
import type { FeedList, HeldFeed } from '../peers/feed-list'
import type { PeerFeeds } from '../peers/peer-feeds'

/** What a session needs from its node. */
export interface SessionHost {
  history: HistoryStore
  name: string
  /** the versions this device says it speaks in its hello */
  versions: ProtocolVersions
  log: Logger
  /** our capability proof for this connection, or null when this device is in no cluster */
  proof (handshakeHash: Buffer, isInitiator: boolean): Buffer | null
  /** whether the remote's proof shows it holds the cluster secret */
  verify (handshakeHash: Buffer, remoteIsInitiator: boolean, proof: Buffer): boolean
  devices (): DevicesMessage
  mergeDevices (msg: DevicesMessage, from: string): void
  presence (): RunningAgent[]
  onOpen (s: SyncSession): void
  /** the peer said hello, but its protocol and this one's do not overlap: nothing more is read from it */
  onIncompatible (s: SyncSession): void
  onHeard (s: SyncSession): void
  onPresence (s: SyncSession, agents: RunningAgent[]): void
  /** the devices the peer hears changed (remoteHears) */
  onHears (s: SyncSession): void
  /** the peer's heartbeat echoed `t`, a heartbeat time this device sent it; `hearsMe`: it says it hears this device */
  onEcho (s: SyncSession, t: number, hearsMe: boolean): void
  onLive (s: SyncSession, msg: LiveMessage): void
  /** acknowledged intents: the peer asks what this device holds of a feed, or says what it holds (held-acks.ts) */
  onHeld (s: SyncSession, msg: HeldMessage): void
  /** heard through a peer: a question, one to relay, or answers (alive-proofs.ts) */
  onAlive (s: SyncSession, msg: AliveMessage): void
  onClose (s: SyncSession): void
  /** how long a new connection may take to open the arbor channel before it is dropped */
  openTimeoutMs: number
  /** this device's feed list, as it announces it (kept by the node as the history changes) */
  mine: FeedList
  /** what this device knows of a peer's feed list, kept across connections and restarts */
  peerFeeds (device: string): PeerFeeds
  /** a PeerFeeds changed: it is saved soon */
  peerFeedsChanged (): void
  /**
   * The feeds of one message whose announcement this device takes the peer's word on: those it
   * holds a record of, and those it may record (within the bounds on what peers make it record:
   * feed-admission.ts). A feed not taken is neither recorded nor kept as the peer's; the peer
   * is asked for its list again later.
   */
  admit (device: string, feeds: FeedAnnouncement[]): FeedAnnouncement[]
}

const NO_FEEDS: ReadonlyMap<string, HeldFeed> = new Map()

/** What a session does with each message once it is read and checked. */
type Handlers = { [K in ArborMessageName]: (m: ArborMessage<K>) => void }
/** The channel's message handles, by name (as hypercore's replicator keeps its wire* handles). */
type Wire = { [K in ArborMessageName]: { send (m: ArborMessage<K>): boolean } }

/** 'feedsDigest' → 'feeds digest', as the warnings name it. */
const label = (name: ArborMessageName): string => name.replace(/[A-Z]/g, x => ` ${x.toLowerCase()}`)

/**
 * Every version opens this channel and says hello on it, whatever protocol it speaks: it is
 * where two devices learn whether they sync (shared/protocol-version.ts).
 */
export const PROTOCOL = 'arbor/1'

/**
 * One connection to a paired device: Corestore replication plus the `arbor/1` Protomux
 * channel (hello, feeds, devices, presence, heartbeats, live events). The channel's
 * handshake proves cluster membership; a peer that cannot prove it is disconnected
 * before it learns anything. Messages of a type this version does not know are ignored
 * (Protomux drops types past the registered ones); nothing but the hello is read before the
 * hello, nor after a hello whose protocol does not overlap this one's.
 */
export class SyncSession {
  readonly remoteDevice: string
  hello: Hello | null = null
  /** what the peer's hello says of its versions (null before the hello) */
  remoteVersions: ProtocolVersions | 'unreadable' | null = null
  /** how the peer's versions compare with this device's (null before the hello) */
  compat: Compat | null = null
  /** whether this device knows the peer's whole feed list on this connection (remoteFeeds is empty until then) */
  private feedsKnown = false
  remoteAgents: RunningAgent[] = []
  /** the devices the peer said it hears, in its latest heartbeat (its word only: it counts for this device's lease, never for who is down) */
  remoteHears: ReadonlySet<string> = new Set()
  /** the `t` of the peer's latest heartbeat, echoed in ours */
  private remoteT: number | undefined
  private channel: Protomux.Channel | null = null
  private wire: Wire | null = null
  private closed = false
  private openTimer: NodeJS.Timeout | null = null

  constructor (readonly stream: NoiseSecretStream, private readonly host: SessionHost) {
    this.remoteDevice = (stream.remotePublicKey as Buffer).toString('hex')
  }

  /** what the peer holds: feed key → conversation, length (once its list is known on this connection) */
  get remoteFeeds (): ReadonlyMap<string, HeldFeed> { return this.feedsKnown ? this.known.heard.feeds : NO_FEEDS }
  private get known (): PeerFeeds { return this.host.peerFeeds(this.remoteDevice) }

  /** the hello came, and the two devices sync */
  get opened (): boolean { return this.hello !== null && this.compatible && !this.closed }
  get compatible (): boolean { return this.compat !== null && this.compat !== 'too-old' && this.compat !== 'too-new' }

  start (): void {
    const { stream, host } = this
    const proof = host.proof(stream.handshakeHash as Buffer, stream.isInitiator)
    if (proof === null) { this.close('this device is in no cluster yet'); return }
    stream.once('close', () => this.onClosed())
    // A connection can be dead before the channel opens (see SyncNodeOptions.openTimeoutMs):
    // drop it, so the swarm connects again instead of waiting on it.
    this.openTimer = setTimeout(() => { if (this.hello === null) this.close(`the arbor channel did not open within ${host.openTimeoutMs} ms`) }, host.openTimeoutMs)
    this.openTimer.unref()
    stream.on('error', (err: Error) => host.log.info(`connection to ${this.remoteDevice.slice(0, 12)} failed: ${err.message}`))
    host.history.replicate(stream)
    const mux = Protomux.from(stream)
    const handlers: Handlers = {
      hello: m => this.onHello(m),
      feeds: m => this.onFeeds(m),
      devices: m => host.mergeDevices(m, this.remoteDevice),
      presence: m => { this.remoteAgents = m.agents; host.onPresence(this, m.agents) },
      heartbeat: m => this.onHeartbeat(m),
      live: m => host.onLive(this, m),
      feedsDigest: m => this.onDigest(m),
      wantFeeds: () => this.sendAllFeeds(),
      feedsSince: m => this.onFeedsSince(m),
      held: m => host.onHeld(this, m),
      alive: m => host.onAlive(this, m)
    }
    const slot = <K extends ArborMessageName>(name: K): { encoding: unknown; onmessage: (d: unknown) => void } => ({
      encoding: arborMessages[name],
      onmessage: d => this.received(name, d as Decoded<ArborMessage<K>>, handlers[name])
    })
    const channel = mux.createChannel({
      protocol: PROTOCOL,
      handshake: c.fixed32,
      messages: ARBOR_MESSAGES.map(slot),
      onopen: (remoteProof: unknown) => this.onOpen(remoteProof as Buffer),
      onclose: () => this.close('the peer closed the arbor channel')
    })
    if (channel === null) { this.close('duplicate arbor channel'); return }
    this.channel = channel
    this.wire = Object.fromEntries(ARBOR_MESSAGES.map((name, i) => [name, channel.messages[i]])) as unknown as Wire
    channel.open(proof)
  }

  /** A message as its codec read it. Synchronous on purpose: a returned promise would cork the whole connection. */
  private received<K extends ArborMessageName> (name: K, d: Decoded<ArborMessage<K>>, handle: (m: ArborMessage<K>) => void): void {
    // before a hello that says the two sync, nothing but the hello is read
    if (name !== 'hello' && !this.opened) return
    if (!d.ok) {
      this.host.log.warn(`ignored a malformed ${label(name)} message from ${this.remoteDevice.slice(0, 12)}: ${d.error}`)
      return
    }
    if (name !== 'hello') this.host.onHeard(this)
    handle(d.value)
  }

  private onOpen (remoteProof: Buffer): void {
    const { stream, host } = this
    if (!host.verify(stream.handshakeHash as Buffer, !stream.isInitiator, remoteProof)) {
      host.log.warn(`device ${this.remoteDevice.slice(0, 12)} could not prove it belongs to this cluster; disconnected`)
      this.close('failed the cluster handshake')
      return
    }
    this.channel?.cork()
    const { schema, app, ...protocol } = host.versions
    this.send('hello', { v: 1, device: host.history.device, name: host.name, manifest: host.history.manifestKey.toString('hex'), protocol, schema, ...(app !== undefined ? { app } : {}) })
    this.send('devices', host.devices())
    // What changed since the peer was last told, and the digest of the whole list: a reconnect
    // costs what changed. An older peer ignores it; it is sent a FeedsDigest after its hello.
    const known = this.known
    const { full, feeds } = known.pending(host.mine)
    this.send('feedsSince', { full, digest: host.mine.digest, count: host.mine.size, feeds: newestFirst(host.history, feeds) })
    if (full) known.toldAll()
    else known.told(feeds.map(f => f.key))
    if (full || feeds.length > 0) host.peerFeedsChanged()
    this.send('presence', { agents: host.presence() })
    this.channel?.uncork()
  }

  private onHello (m: Hello): void {
    if (m.device !== this.remoteDevice) {
      this.host.log.warn(`device ${this.remoteDevice.slice(0, 12)} said hello as ${m.device.slice(0, 12)}; disconnected`)
      this.close('hello names another device')
      return
    }
    if (this.hello !== null) return // one hello per channel
    this.hello = m
    this.remoteVersions = helloVersions(m)
    this.compat = this.remoteVersions === 'unreadable' ? 'too-new' : compareVersions(this.host.versions, this.remoteVersions)
    this.clearOpenTimer()
    // Kept open, not synced with: its Devices row says what to do, and a reconnect would only say it again.
    if (!this.compatible) { this.host.onIncompatible(this); return }
    // A peer before 1.2 reads only the 1.0 digest; the list itself if it lacks it (WantFeeds).
    if (this.remoteVersions !== 'unreadable' && !speaksFeedsSince(this.remoteVersions)) this.send('feedsDigest', { digest: this.host.mine.sorted(), count: this.host.mine.size })
    // What changed after this side's FeedsSince went out and before this hello came was
    // announced while the session was not open yet: it goes now, or this connection misses it.
    const { full, feeds } = this.known.pending(this.host.mine)
    if (!full) this.sendFeeds(feeds)
    this.host.onHeard(this)
    this.host.onOpen(this)
  }

  private onHeartbeat (m: HeartbeatMessage): void {
    const hears = new Set(m.hears ?? [])
    const changed = hears.size !== this.remoteHears.size || [...hears].some(d => !this.remoteHears.has(d))
    this.remoteHears = hears
    this.remoteT = m.t
    if (changed) this.host.onHears(this)
    if (m.echo !== undefined) this.host.onEcho(this, m.echo, hears.has(this.host.history.device))
  }

  /** A 1.0 or 1.1 peer's digest of its whole list: if it is the list this device holds of it, nothing more is needed. */
  private onDigest (m: FeedsDigest): void {
    const heard = this.known.heard
    if (heard.size === m.count && heard.sorted() === m.digest) this.listKnown([])
    else this.send('wantFeeds', {})
  }

  /**
   * A 1.2 peer's changes since it last told this device, and the digest of its whole list.
   * The changes are what the peer says it holds, true or not, so they are kept whatever the
   * digest says; a digest this device's copy does not reach means a change was lost (a cut
   * mid-message, a crash before a save, either side's saved state gone): the whole list then.
   */
  private onFeedsSince (m: FeedsSince): void {
    const known = this.known
    if (m.full) known.heardNothing()
    const taken = this.taken(m.feeds)
    for (const f of taken) known.heardFeed(f.key, f, this.host.mine)
    if (m.full || m.feeds.length > 0) this.host.peerFeedsChanged()
    // a feed not taken leaves the digests apart: the whole list comes, and again once more may be taken
    if (known.heard.size === m.count && known.heard.digest === m.digest) this.listKnown(taken)
    else this.send('wantFeeds', {})
  }

  private onFeeds (m: FeedsMessage): void {
    const known = this.known
    if (m.full) known.heardNothing()
    const taken = this.taken(m.feeds)
    for (const f of taken) known.heardFeed(f.key, f, this.host.mine)
    this.host.peerFeedsChanged()
    if (m.full) this.feedsKnown = true
    for (const f of taken) this.follow(f.key, f)
  }

  /** The announcements this device takes the peer's word on (SessionHost.admit). */
  private taken (feeds: FeedAnnouncement[]): FeedAnnouncement[] {
    return this.host.admit(this.remoteDevice, feeds)
  }

  /** Asks the peer for its whole list (feeds dropped over the bounds may be taken now). */
  askForFeeds (): void { this.send('wantFeeds', {}) }

  /**
   * The peer's whole list is known on this connection. Where the two devices' lengths differ,
   * one still needs blocks of the other (updateFeed follows, or keeps the feed open to serve
   * them): those, and the feeds that just changed, and nothing else: no feed is opened here.
   */
  private listKnown (changed: FeedAnnouncement[]): void {
    this.feedsKnown = true
    const known = this.known
    for (const f of changed) this.follow(f.key, f)
    // a set, not a scan of `changed` per feed: at a first sync both hold every feed (13,904² comparisons)
    const followed = new Set(changed.map(f => f.key))
    for (const key of known.lag) {
      const f = known.heard.get(key)
      if (f !== undefined && !followed.has(key)) this.follow(key, f)
    }
  }

  private sendAllFeeds (): void {
    this.send('feeds', { full: true, feeds: newestFirst(this.host.history, this.host.mine.list()) })
    this.known.toldAll()
    this.host.peerFeedsChanged()
  }

  /** Tells the history what the peer holds of a feed (it follows the feed, or keeps it open for the peer). */
  private follow (key: string, f: HeldFeed): void {
    this.host.history.updateFeed(f.conversation, key, f.length).catch((err: Error) => {
      this.host.log.warn(`could not follow feed ${key.slice(0, 12)} from ${this.remoteDevice.slice(0, 12)}: ${err.message}`)
    })
  }

  /** Tells the peer of feeds that changed here (as the node's list has them now). */
  sendFeeds (feeds: FeedAnnouncement[]): void {
    if (feeds.length === 0 || !this.opened) return
    this.send('feeds', { full: false, feeds })
    this.known.told(feeds.map(f => f.key))
  }
  sendDevices (): void { this.send('devices', this.host.devices()) }
  sendPresence (agents: RunningAgent[]): void { this.send('presence', { agents }) }
  heartbeat (t: number, hears: string[]): void {
    this.send('heartbeat', this.remoteT !== undefined ? { t, hears, echo: this.remoteT } : { t, hears })
  }
  sendLive (msg: LiveMessage): void { this.send('live', msg) }
  sendHeld (msg: HeldMessage): void { this.send('held', msg) }
  sendAlive (msg: AliveMessage): void { this.send('alive', msg) }

  /**
   * Whether the peer said it holds more than `length` blocks of a feed, on this connection or
   * when last heard (what it says in `feeds since` updates it as the session opens).
   */
  remoteHas (key: string, length: number): boolean {
    return (this.known.heard.get(key)?.length ?? 0) > length
  }

  /**
   * Whether the peer lacks blocks of a feed below `length`: it announced fewer, or none (its
   * list names every feed it holds), or its list is not known yet (the connection replicates
   * meanwhile: a core held for it must not be closed before it has said what it holds).
   */
  lacks (key: string, length: number): boolean {
    if (this.closed || (this.hello !== null && !this.compatible)) return false
    if (!this.feedsKnown) return true
    return (this.known.heard.get(key)?.length ?? 0) < length
  }

  /** Blocks of this peer's feeds (as it announced them) that this device has not indexed. */
  behind (conversation?: string): number {
    let n = 0
    const mine = new Map(this.host.history.feeds().map(f => [f.key, f.indexed]))
    for (const [key, f] of this.remoteFeeds) if (conversation === undefined || f.conversation === conversation) n += Math.max(0, f.length - (mine.get(key) ?? 0))
    return n
  }

  private send<K extends ArborMessageName> (name: K, m: ArborMessage<K>): void {
    if (this.closed || this.wire === null || this.channel?.closed !== false) return
    this.wire[name].send(m)
  }

  close (why: string): void {
    if (this.closed) return
    this.host.log.info(`closing the connection to ${this.remoteDevice.slice(0, 12)}: ${why}`)
    this.stream.destroy()
    this.onClosed()
  }

  private clearOpenTimer (): void {
    if (this.openTimer !== null) clearTimeout(this.openTimer)
    this.openTimer = null
  }

  private onClosed (): void {
    if (this.closed) return
    this.closed = true
    this.clearOpenTimer()
    this.host.onClose(this)
  }
}

/**
 * Feeds in the order a peer should fetch them: the most recently updated conversations
 * first (a peer follows them in the order it hears them), unknown ones last, as listed.
 */
export function newestFirst<F extends { conversation: string }> (history: HistoryStore, feeds: F[]): F[] {
  const at = (f: F): number => history.summary(f.conversation)?.updatedAt ?? -Infinity
  return feeds.map((f, i) => ({ f, i, t: at(f) })).sort((a, b) => b.t - a.t || a.i - b.i).map(x => x.f)
}

/** Every feed this device can serve blocks of, with how many: what it announces (a feed it holds none of is nobody's to pass on). */
export function localFeeds (history: HistoryStore): FeedAnnouncement[] {
  const out: FeedAnnouncement[] = []
  for (const f of history.feeds()) {
    const length = history.availableLength(f.key)
    if (length > 0) out.push({ conversation: f.conversation, key: f.key, length })
  }
  return out
}
