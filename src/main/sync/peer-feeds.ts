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
  heard = new FeedList()
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

  /**
   * What is saved. A peer that holds what this device holds (the usual case) is saved as this
   * device's list (`was`, saved beside it) and the few feeds where the two differ, so a start
   * reads and checks only those; any other peer as its whole list.
   */
  toJSON (mine: FeedList): PersistedPeer {
    const unsent = this.unsent === 'all' ? 'all' as const : [...this.unsent]
    const differ: Array<[string, number]> = []
    let same = true
    for (const [key, f] of this.heard.feeds) {
      const m = mine.get(key)
      if (m === undefined || m.conversation !== f.conversation) { same = false; break }
      if (m.length !== f.length) differ.push([key, f.length])
    }
    const absent: string[] = []
    if (same) for (const key of mine.feeds.keys()) if (this.heard.get(key) === undefined) absent.push(key)
    if (same && differ.length + absent.length < this.heard.size) return { digest: this.heard.digest, like: { differ, absent }, unsent }
    return { digest: this.heard.digest, heard: pairs(this.heard), unsent }
  }

  /**
   * The state saved before. `was`: this device's list as saved beside it (what a `like` state
   * is relative to); `mine`: its list now. A feed whose conversation this device no longer knows
   * is left out, and the digest then recomputed: it differs from the peer's, and the peer's
   * whole list comes again, as it would with nothing saved.
   */
  static restore (device: string, p: PersistedPeer, conversationOf: (key: string) => string | undefined, was: FeedList | null, mine: FeedList): PeerFeeds {
    const s = new PeerFeeds(device)
    s.unsent = p.unsent === 'all' ? 'all' : new Set(p.unsent)
    if (p.like !== undefined) {
      if (was === null) return s // relative to a list that is gone: as if nothing were saved
      const heard = new Map(was.feeds)
      for (const key of p.like.absent) heard.delete(key)
      const differ = withConversations(p.like.differ, conversationOf)
      for (const [key, f] of differ) heard.set(key, f)
      if (differ.length !== p.like.differ.length || heard.size !== was.size - p.like.absent.length) return s
      s.heard = FeedList.restore(heard, p.digest)
      // where the two differ: the saved exceptions, and this device's feeds that changed since
      for (const [key] of differ) s.checkLag(key, mine)
      for (const [key, f] of mine.feeds) if (was.get(key)?.length !== f.length) s.checkLag(key, mine)
      return s
    }
    const entries = withConversations(p.heard ?? [], conversationOf)
    if (entries.length === (p.heard ?? []).length) {
      s.heard = FeedList.restore(entries, p.digest)
      for (const [key] of entries) s.checkLag(key, mine)
    } else {
      for (const [key, f] of entries) s.heardFeed(key, f, mine)
    }
    return s
  }
}

/** A list as saved: [key, length] pairs (the conversation is the history's). */
export function pairs (l: FeedList): Array<[string, number]> {
  return [...l.feeds].map(([key, f]) => [key, f.length])
}

/** Saved pairs with their conversations from the history; those it does not know are left out. */
export function withConversations (saved: Array<[string, number]>, conversationOf: (key: string) => string | undefined): Array<[string, HeldFeed]> {
  const out: Array<[string, HeldFeed]> = []
  for (const [key, length] of saved) {
    const conversation = conversationOf(key)
    if (conversation !== undefined) out.push([key, { conversation, length }])
  }
  return out
}

const HEX32 = /^[0-9a-f]{64}$/
const Hex32 = z.string().regex(HEX32)
/** Checked by a loop, not a schema per element: the lists hold a pair per feed, and a start reads them all. */
const Pairs = z.custom<Array<[string, number]>>(v => Array.isArray(v) && v.every(p => Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && HEX32.test(p[0]) && Number.isSafeInteger(p[1]) && (p[1] as number) >= 0), 'a list of [feed key, length]')
const PersistedPeer = z.object({
  /** the heard list's digest, as computed when it was saved */
  digest: Hex32,
  /** the heard list whole, or `like`: this device's saved list but for the feeds the peer holds at another length, and those it lacks */
  heard: Pairs.optional(),
  like: z.object({ differ: Pairs, absent: z.array(Hex32) }).optional(),
  unsent: z.union([z.literal('all'), z.array(Hex32)])
})
type PersistedPeer = z.infer<typeof PersistedPeer>

/**
 * The file of what this device knows of its peers' lists (`sync-peers.json` in the history's
 * directory), and its own list with its digest as they were (a start then hashes only the feeds
 * that changed since). A cache: losing it costs one full exchange per peer.
 */
export const PeerFeedsFile = z.object({
  v: z.literal(1),
  mine: z.object({ digest: Hex32, feeds: Pairs }).optional(),
  peers: z.record(Hex32, PersistedPeer)
})
export type PeerFeedsFile = z.infer<typeof PeerFeedsFile>
