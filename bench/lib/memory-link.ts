// An in-memory connection for the sync benchmark: two raw duplex ends joined in memory,
// each wrapped in a real NoiseSecretStream (a real Noise handshake with the given key pairs),
// as Hyperswarm would hand them over. A small local cousin of test/helpers/in-process-network.ts.
import { Duplex } from 'node:stream'
import NoiseSecretStream from '@hyperswarm/secret-stream'
import crypto from 'hypercore-crypto'
import type { DevicesMessage } from '../../src/main/sync/arbor-messages'
import type { ClusterMembership } from '../../src/main/sync/sync-node'

interface KeyPair { publicKey: Buffer; secretKey: Buffer }

export class MemoryLink {
  readonly a: NoiseSecretStream
  readonly b: NoiseSecretStream
  /** bytes carried so far, both directions (ciphertext) */
  bytes = 0
  /** performance.now() of the last chunk delivered */
  lastChunkAt = performance.now()
  down = false
  private readonly rawA: RawEnd
  private readonly rawB: RawEnd

  /** a is the Noise initiator. */
  constructor (keyA: KeyPair, keyB: KeyPair) {
    this.rawA = new RawEnd(this)
    this.rawB = new RawEnd(this)
    this.rawA.peer = this.rawB
    this.rawB.peer = this.rawA
    this.a = new NoiseSecretStream(true, this.rawA, { keyPair: keyA })
    this.b = new NoiseSecretStream(false, this.rawB, { keyPair: keyB })
    // A cut is not an error worth reporting here; the sessions log it.
    this.a.on('error', () => undefined)
    this.b.on('error', () => undefined)
  }

  /** Resolves once both Noise handshakes are done (false if either failed). */
  async opened (): Promise<boolean> {
    const [x, y] = await Promise.all([this.a.opened, this.b.opened])
    return x && y && !this.down
  }

  /** Tears the connection down (both ends), as a network failure would; resolves once both streams closed. */
  async cut (): Promise<void> {
    const closed = [this.a, this.b].map(s => new Promise<void>(resolve => {
      if (s.destroyed) { resolve(); return }
      s.once('close', () => resolve())
    }))
    this.destroy()
    await Promise.all(closed)
  }

  destroy (): void {
    if (this.down) return
    this.down = true
    this.rawA.destroy(new Error('link cut'))
    this.rawB.destroy(new Error('link cut'))
    this.a.destroy()
    this.b.destroy()
  }
}

/** One raw end: what it is written is pushed, in order and asynchronously, into its peer. */
class RawEnd extends Duplex {
  peer!: RawEnd
  private queue: Array<Buffer | null> = []
  private scheduled = false

  constructor (private readonly link: MemoryLink) {
    super({ allowHalfOpen: true })
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
    this.queue = []
    if (!this.link.down) this.link.destroy()
    cb(err)
  }

  private send (chunk: Buffer | null): void {
    if (this.link.down) return
    this.queue.push(chunk)
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      const q = this.queue
      this.queue = []
      for (const c of q) {
        if (this.link.down) return
        if (c !== null) this.link.bytes += c.byteLength
        this.peer.push(c)
      }
      this.link.lastChunkAt = performance.now()
    })
  }
}

/**
 * The idea of test/helpers/test-cluster.ts: every device given is trusted, and the
 * proofs are real hashes over a shared secret.
 */
export class BenchCluster implements ClusterMembership {
  readonly name = 'bench'
  constructor (readonly secret: Buffer, private readonly devices: string[]) {}

  isTrusted (device: string): boolean { return this.devices.includes(device) }
  devicesMessage (): DevicesMessage {
    return { devices: this.devices.map(key => ({ key, name: key.slice(0, 6), addedAt: 0 })), forgotten: [] }
  }

  merge (): boolean { return false }
  seen (): void {}
  topic (): Buffer { return crypto.hash([Buffer.from('bench-topic'), this.secret]) }
  proof (hh: Buffer, isInitiator: boolean): Buffer {
    return crypto.hash([Buffer.from(isInitiator ? 'i' : 'r'), this.secret, hh])
  }

  verifyProof (hh: Buffer, isInitiator: boolean, proof: Buffer): boolean {
    return this.proof(hh, isInitiator).equals(proof)
  }
}
