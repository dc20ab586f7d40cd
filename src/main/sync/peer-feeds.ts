import { z } from 'zod'
import { FeedList, type HeldFeed, type ListedFeed } from './feed-list'

/**
 * What this device knows of one paired device's feed list, kept across connections and
 * restarts (docs/ARCHITECTURE.md, "Reconnecting"): what it heard the peer hold, which of its
 * own feeds changed since it last told the peer, and where the two lengths differ. A
 * reconnect then sends only what changed, and the digest of the whole list says whether the
 * two sides agree (FeedsSince).
 */
export class PeerFeeds {
  /** what the peer said it holds: feed key → conversation, length */
  readonly heard = new FeedList()
  /** this device's feeds that changed since the peer was last told of them; 'all': it was never sent the whole list */
  private unsent: Set<string> | 'all' = 'all'
  /** feeds whose length here differs from the peer's: one of the two still needs blocks of the other */
  readonly lag = new Set<string>()

  constructor (readonly device: string) {}

  /** The peer says it holds `f` of `key`; `mine`: this device's list. True if that is news. */
  heardFeed (key: string, f: HeldFeed, mine: FeedList): boolean {
    const changed = this.heard.set(key, f)
    this.checkLag(key, mine)
    return changed
  }

  /** The peer sends its whole list now: what it said before is void. */
  heardNothing (): void {
    this.heard.clear()
    this.lag.clear()
  }

  /** This device's entry for `key` changed (mine holds the new one). */
  localChanged (key: string, mine: FeedList): void {
    if (this.unsent !== 'all') this.unsent.add(key)
    this.checkLag(key, mine)
  }

  /** The peer was sent these feeds as `mine` has them now. */
  told (keys: Iterable<string>): void {
    if (this.unsent === 'all') return
    for (const k of keys) this.unsent.delete(k)
  }

  toldAll (): void { this.unsent = new Set() }

  /** What to send the peer on connect: what changed since it was last told, or the whole list. */
  pending (mine: FeedList): { full: boolean; feeds: ListedFeed[] } {
    return this.unsent === 'all' ? { full: true, feeds: mine.list() } : { full: false, feeds: mine.list(this.unsent) }
  }

  private checkLag (key: string, mine: FeedList): void {
    const h = this.heard.get(key)
    if (h !== undefined && h.length !== (mine.get(key)?.length ?? 0)) this.lag.add(key)
    else this.lag.delete(key)
  }

  toJSON (): PersistedPeer {
    return {
      heard: [...this.heard.feeds].map(([key, f]) => [key, f.length]),
      unsent: this.unsent === 'all' ? 'all' : [...this.unsent]
    }
  }

  /**
   * The state saved before, against this device's list now. A feed whose conversation this
   * device no longer knows is left out: the digests then differ and the peer's whole list
   * comes again, as it would with nothing saved.
   */
  static restore (device: string, p: PersistedPeer, conversationOf: (key: string) => string | undefined, mine: FeedList): PeerFeeds {
    const s = new PeerFeeds(device)
    for (const [key, length] of p.heard) {
      const conversation = conversationOf(key)
      if (conversation !== undefined) s.heardFeed(key, { conversation, length }, mine)
    }
    s.unsent = p.unsent === 'all' ? 'all' : new Set(p.unsent)
    return s
  }
}

const Hex32 = z.string().regex(/^[0-9a-f]{64}$/)
const PersistedPeer = z.object({
  heard: z.array(z.tuple([Hex32, z.number().int().nonnegative()])),
  unsent: z.union([z.literal('all'), z.array(Hex32)])
})
type PersistedPeer = z.infer<typeof PersistedPeer>

/** The file of every peer's PeerFeeds (`sync-peers.json` in the history's directory): a cache; losing it costs one full exchange per peer. */
export const PeerFeedsFile = z.object({ v: z.literal(1), peers: z.record(Hex32, PersistedPeer) })
export type PeerFeedsFile = z.infer<typeof PeerFeedsFile>
