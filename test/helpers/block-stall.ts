import type { HistoryStore } from '../../src/main/history/history-store'

/**
 * Holds the blocks of one feed on their way into one device, from every peer, as a link too
 * slow for them would (issue 13: the dead device's last intent relayed over a slow link),
 * while everything else flows: the arbor channel (announcements, heartbeats, presence,
 * acknowledgements) and every other feed. `release` delivers what was held, in order, and
 * lets the rest through. Works below the product, on Hypercore's replication peers (the
 * `data` messages of that core on that device's connections): no knob in Arbor itself.
 */
export interface BlockStall {
  /** data messages held so far */
  readonly held: number
  release (): void
}

interface PeerLike {
  core: { key: Buffer | null }
  stream: { publicKey: Buffer | null }
  removed: boolean
  ondata (data: unknown): Promise<void>
}

interface Stall { device: Buffer; key: string; queue: Array<{ peer: PeerLike; data: unknown }>; count: number }

const stalls = new Set<Stall>()
let patched: { proto: PeerLike; ondata: PeerLike['ondata'] } | null = null

export function stallBlocks (history: HistoryStore, feedKey: string): BlockStall {
  patch(history)
  const stall: Stall = { device: history.keyPair.publicKey, key: feedKey, queue: [], count: 0 }
  stalls.add(stall)
  return {
    get held () { return stall.count },
    release () {
      if (!stalls.delete(stall)) return
      const ondata = patched?.ondata
      if (stalls.size === 0) unpatch()
      // A peer gone meanwhile (its connection closed) takes nothing more, as Hypercore's own would.
      for (const { peer, data } of stall.queue) if (!peer.removed && ondata !== undefined) void ondata.call(peer, data)
      stall.queue.length = 0
    }
  }
}

/** Wraps Hypercore's (unexported) replication peer's `ondata`, found on a live peer of this device's store. */
function patch (history: HistoryStore): void {
  if (patched !== null) return
  let proto: PeerLike | null = null
  for (const core of (history.corestore as unknown as { cores: Iterable<{ replicator: { peers: PeerLike[] } }> }).cores) {
    const peer = core.replicator.peers[0]
    if (peer !== undefined) { proto = Object.getPrototypeOf(peer) as PeerLike; break }
  }
  if (proto === null) throw new Error('stallBlocks: this device replicates no core with any peer yet (connect it first)')
  const ondata = proto.ondata
  patched = { proto, ondata }
  proto.ondata = function (this: PeerLike, data: unknown): Promise<void> {
    const key = this.core.key?.toString('hex')
    for (const s of stalls) {
      if (s.key === key && this.stream.publicKey?.equals(s.device) === true) {
        s.queue.push({ peer: this, data })
        s.count++
        return Promise.resolve()
      }
    }
    return ondata.call(this, data)
  }
}

function unpatch (): void {
  if (patched === null) return
  patched.proto.ondata = patched.ondata
  patched = null
}
