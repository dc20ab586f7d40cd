import { Duplex } from 'node:stream'
import NoiseSecretStream from '@hyperswarm/secret-stream'
import type { SyncNode } from '../../src/main/sync/sync-node'

interface KeyPair { publicKey: Buffer; secretKey: Buffer }

/**
 * An in-process network of SyncNodes whose links a test can cut, delay and heal
 * (DESIGN.md, "Sync and trust": "an in-process network whose links a test can cut and heal").
 *
 * Every pair of nodes may have one link: two raw duplex streams joined in memory, each
 * wrapped in a real NoiseSecretStream (a real Noise handshake with the nodes' device key
 * pairs, so remotePublicKey and handshakeHash are the real thing), handed to the nodes
 * with attach() once the handshake is done, as Hyperswarm would.
 *
 * Chunks are delivered asynchronously and in order, after the link's delay if it has one.
 * Cutting a link destroys both raw ends with an error, dropping whatever is in flight, as a
 * network failure would; either end being destroyed (a node closing a session) tears the
 * whole link down too, as a closed TCP connection would.
 */
export class InProcessNetwork {
  private readonly nodes = new Map<string, SyncNode>()
  /** the link of each pair, and its handing over to the nodes */
  private readonly links = new Map<string, { link: MemoryLink; attached: Promise<void>; a: string; b: string }>()
  private readonly delays = new Map<string, number>()
  /** nodes whose sending (out) or receiving (in) is frozen (pause) */
  private readonly frozen = { out: new Set<string>(), in: new Set<string>() }
  private closed = false
  /** links made so far (a heal counts as a new one) */
  connections = 0

  /** Adds a node (ready, or at least with a ready history store). */
  add (name: string, node: SyncNode): this {
    if (this.nodes.has(name)) throw new Error(`node ${name} is already on the network`)
    this.nodes.set(name, node)
    return this
  }

  /** Takes a node off the network (its links are cut): before closing it, e.g. to restart it. */
  remove (name: string): void {
    this.isolate(name)
    this.nodes.delete(name)
  }

  node (name: string): SyncNode {
    const n = this.nodes.get(name)
    if (n === undefined) throw new Error(`no node ${name} on the network`)
    return n
  }

  get names (): string[] { return [...this.nodes.keys()] }

  /** Whether a and b have a live link (it may still be handshaking). */
  isConnected (a: string, b: string): boolean {
    const l = this.links.get(pairKey(a, b))
    return l !== undefined && !l.link.down
  }

  /**
   * Links a and b (a is the Noise initiator) unless they are linked already. Resolves once
   * both nodes have been handed their end (or the link failed or was cut meanwhile).
   */
  async connect (a: string, b: string): Promise<void> {
    if (this.closed) throw new Error('the network is closed')
    if (a === b) throw new Error(`cannot link ${a} to itself`)
    const key = pairKey(a, b)
    const existing = this.links.get(key)
    if (existing !== undefined && !existing.link.down) return existing.attached
    const nodeA = this.node(a)
    const nodeB = this.node(b)
    const link: MemoryLink = new MemoryLink(nodeA.history.keyPair, nodeB.history.keyPair, {
      delayMs: this.delays.get(key) ?? 0,
      onDown: () => { if (this.links.get(key)?.link === link) this.links.delete(key) }
    })
    const attached = (async () => {
      if (!await link.opened()) return
      nodeA.attach(link.a)
      nodeB.attach(link.b)
    })()
    // a link made while a node is paused waits for it, from its handshake on
    for (const way of WAYS) {
      link.freeze('a', way, this.frozen[way].has(a))
      link.freeze('b', way, this.frozen[way].has(b))
    }
    this.links.set(key, { link, attached, a, b })
    this.connections++
    return attached
  }

  /**
   * Freezes a node's network in both directions, as SIGSTOP would (pause) or lets it go again
   * (thaw): what it sent before stays on its way; what it sends and what comes for it while
   * frozen is held and delivered after the thaw, in order. Its links stay up. `ways`: what
   * is frozen or let go (default both: a thaw may let its input go later than its output).
   */
  freeze (name: string, on: boolean, ways: readonly Way[] = WAYS): void {
    this.node(name)
    for (const way of ways) {
      if (on) this.frozen[way].add(name)
      else this.frozen[way].delete(name)
      for (const l of this.links.values()) {
        if (l.a === name) l.link.freeze('a', way, on)
        if (l.b === name) l.link.freeze('b', way, on)
      }
    }
  }

  /** Destroys the link between a and b, as a network failure would. */
  cut (a: string, b: string): void {
    this.links.get(pairKey(a, b))?.link.destroy(new Error(`link ${a}–${b} was cut`))
  }

  /** Reconnects a and b (a no-op if they are linked). */
  heal (a: string, b: string): Promise<void> {
    return this.connect(a, b)
  }

  /** Cuts every link of a node. */
  isolate (a: string): void {
    this.node(a)
    for (const other of this.nodes.keys()) if (other !== a) this.cut(a, other)
  }

  /** Cuts every link. */
  cutAll (): void {
    for (const l of [...this.links.values()]) l.link.destroy(new Error('every link was cut'))
  }

  /** Links every pair of nodes that is not linked (the earlier-added node initiates). */
  async healAll (): Promise<void> {
    const names = this.names
    const pending: Array<Promise<void>> = []
    for (let i = 0; i < names.length; i++) {
      for (let j = i + 1; j < names.length; j++) pending.push(this.connect(names[i] as string, names[j] as string))
    }
    await Promise.all(pending)
  }

  /**
   * Delays every chunk between a and b by ms, in both directions, keeping order (0: no
   * delay). Applies to the current link and to later ones.
   */
  delay (a: string, b: string, ms: number): void {
    const key = pairKey(a, b)
    this.delays.set(key, ms)
    const l = this.links.get(key)
    if (l !== undefined) l.link.delayMs = ms
  }

  /** When the current link between a and b was made (Date.now()), if they are linked. */
  linkedSince (a: string, b: string): number | undefined {
    const l = this.links.get(pairKey(a, b))
    return l === undefined || l.link.down ? undefined : l.link.createdAt
  }

  /** Bytes delivered so far over the current link between a and b (both directions). */
  bytes (a: string, b: string): number {
    return this.links.get(pairKey(a, b))?.link.bytes ?? 0
  }

  /** Tears every link down and leaves no timer behind. The nodes are the caller's to close. */
  async close (): Promise<void> {
    this.closed = true
    const links = [...this.links.values()]
    for (const l of links) l.link.destroy(new Error('the network was closed'))
    await Promise.allSettled(links.map(l => l.attached))
    await Promise.all(links.map(l => l.link.closed()))
  }
}

/** A direction of a node's traffic: what it sends, what it receives. */
export type Way = 'out' | 'in'
const WAYS: readonly Way[] = ['out', 'in']

function pairKey (a: string, b: string): string {
  return a < b ? `${a}\u0000${b}` : `${b}\u0000${a}`
}

function waitClosed (s: Duplex): Promise<void> {
  if (s.destroyed && (s as { closed?: boolean }).closed !== false) return Promise.resolve()
  return new Promise(resolve => {
    s.once('close', () => resolve())
    // Streams that never opened still close; this is only a guard against waiting forever.
    const t = setTimeout(resolve, 1000)
    s.once('close', () => clearTimeout(t))
  })
}

/**
 * One connection: two raw duplex ends joined in memory through two ordered, optionally
 * delayed queues, each wrapped in a real NoiseSecretStream (`a` the initiator), as Hyperswarm
 * would hand them over. InProcessNetwork's links; bench/sync's too, with raw Corestore
 * replication over it as well as SyncNodes.
 */
export class MemoryLink {
  readonly a: NoiseSecretStream
  readonly b: NoiseSecretStream
  down = false
  /** bytes delivered so far, both directions (ciphertext) */
  bytes = 0
  /** performance.now() of the last delivery */
  lastChunkAt = performance.now()
  /** added to every chunk's delivery (0: none) */
  delayMs: number
  private readonly endA: RawEnd
  private readonly endB: RawEnd
  private readonly onDown: () => void

  /** Date.now() when it was made */
  readonly createdAt = Date.now()
  /** per side: its node is paused, what it sends (out) or what comes for it (in) held (freeze) */
  readonly frozen = { a: { out: false, in: false }, b: { out: false, in: false } }

  constructor (keyA: KeyPair, keyB: KeyPair, o: { delayMs?: number; onDown?: () => void } = {}) {
    this.delayMs = o.delayMs ?? 0
    this.onDown = o.onDown ?? (() => {})
    this.endA = new RawEnd(this, 'a')
    this.endB = new RawEnd(this, 'b')
    this.endA.peer = this.endB
    this.endB.peer = this.endA
    this.a = new NoiseSecretStream(true, this.endA, { keyPair: keyA })
    this.b = new NoiseSecretStream(false, this.endB, { keyPair: keyB })
    // Whoever holds these streams, a cut must not be an unhandled error.
    this.a.on('error', () => {})
    this.b.on('error', () => {})
  }

  /** Resolves once both Noise handshakes are done (false if either failed or the link went down). */
  async opened (): Promise<boolean> {
    const [okA, okB] = await Promise.all([this.a.opened, this.b.opened])
    return okA && okB && !this.down
  }

  /** Destroys both raw ends, dropping whatever is in flight, as a network failure would. */
  destroy (err: Error = new Error('link cut')): void {
    if (this.down) return
    this.down = true
    this.onDown()
    this.endA.discard()
    this.endB.discard()
    this.endA.destroy(err)
    this.endB.destroy(err)
  }

  /**
   * Holds (or lets go) one side's traffic, as if its process were stopped: chunks it sends from
   * now on and chunks for it wait; chunks it sent before are delivered.
   */
  freeze (side: 'a' | 'b', way: Way, on: boolean): void {
    if (this.frozen[side][way] === on) return
    this.frozen[side][way] = on
    const mine = side === 'a' ? this.endA : this.endB
    if (!on && way === 'out') mine.release()
    this.endA.kick()
    this.endB.kick()
  }

  /** Resolves once both Noise streams have closed. */
  async closed (): Promise<void> {
    await Promise.all([waitClosed(this.a), waitClosed(this.b)])
  }

  /** destroy(), then closed(). */
  async cut (): Promise<void> {
    this.destroy()
    await this.closed()
  }
}

/** held: sent while its sender was paused (waits for the thaw) */
type Queued = { at: number; chunk: Buffer | null; held: boolean }

/** A raw end: what one side writes is pushed, in order, into the readable side of its peer. */
class RawEnd extends Duplex {
  peer!: RawEnd
  private readonly queue: Queued[] = []
  private lastAt = 0
  private timer: NodeJS.Timeout | null = null
  private immediate: NodeJS.Immediate | null = null

  constructor (private readonly link: MemoryLink, private readonly side: 'a' | 'b') {
    super({ allowHalfOpen: true })
  }

  /** whether its peer's node is paused: nothing is delivered to it */
  private get receiverFrozen (): boolean { return this.link.frozen[this.side === 'a' ? 'b' : 'a'].in }

  /** The sender was thawed: what it sent while paused may go. */
  release (): void {
    for (const q of this.queue) q.held = false
  }

  /** Delivers what may go now (after a freeze ended). */
  kick (): void {
    if (!this.link.down) this.schedule()
  }

  override _read (): void {}

  override _write (chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.send(chunk)
    cb()
  }

  override _writev (chunks: Array<{ chunk: Buffer }>, cb: (err?: Error | null) => void): void {
    for (const c of chunks) this.send(c.chunk)
    cb()
  }

  override _final (cb: (err?: Error | null) => void): void {
    this.send(null)
    cb()
  }

  override _destroy (err: Error | null, cb: (err?: Error | null) => void): void {
    this.discard()
    // Either end going away takes the connection down, as a reset would.
    this.link.destroy(err ?? new Error('the other end closed the connection'))
    cb(err)
  }

  /** Forgets whatever is in flight from this end and its timers. */
  discard (): void {
    this.queue.length = 0
    if (this.timer !== null) clearTimeout(this.timer)
    if (this.immediate !== null) clearImmediate(this.immediate)
    this.timer = null
    this.immediate = null
  }

  private send (chunk: Buffer | null): void {
    if (this.link.down) return
    // Never before an earlier chunk: a delay added later must not reorder the stream.
    const at = Math.max(Date.now() + this.link.delayMs, this.lastAt)
    this.lastAt = at
    this.queue.push({ at, chunk: chunk === null ? null : Buffer.from(chunk), held: this.link.frozen[this.side].out })
    this.schedule()
  }

  private schedule (): void {
    if (this.timer !== null || this.immediate !== null) return
    const head = this.queue[0]
    if (head === undefined || head.held || this.receiverFrozen) return
    const wait = head.at - Date.now()
    if (wait <= 0) this.immediate = setImmediate(() => { this.immediate = null; this.deliver() })
    else this.timer = setTimeout(() => { this.timer = null; this.deliver() }, wait)
  }

  private deliver (): void {
    const now = Date.now()
    // by index, then one splice: shift() per chunk is quadratic in a long burst
    let i = 0
    while (i < this.queue.length && (this.queue[i] as Queued).at <= now && !(this.queue[i] as Queued).held && !this.receiverFrozen && !this.link.down) {
      const { chunk } = this.queue[i++] as Queued
      if (chunk !== null) this.link.bytes += chunk.byteLength
      this.peer.push(chunk)
    }
    this.queue.splice(0, i)
    this.link.lastChunkAt = performance.now()
    if (!this.link.down) this.schedule()
  }
}
