import { FeedList, type HeldFeed, type ListedFeed } from './feed-list'
import type { SavedPairs, SavedPeer } from './peer-feeds-file'

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

  /**
   * A feed the peer announced was forgotten here before any of it arrived (evicted over the
   * bound on what peers make this device record): what the peer said of it is dropped too, so
   * the two lists' digests differ and the peer's whole list comes again. True if it was heard.
   */
  forget (key: string): boolean {
    this.lag.delete(key)
    return this.heard.delete(key)
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
   * device's list (saved beside it) and the few feeds where the two differ, so a start reads
   * and checks only those; any other peer as its whole list.
   */
  saved (mine: FeedList): SavedPeer {
    const unsent = this.unsent === 'all' ? 'all' as const : [...this.unsent]
    const differ: SavedPairs = []
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
   * is relative to), given as how it differs from `mine`, this device's list now; null when it
   * cannot be rebuilt. A feed whose conversation this device no longer knows is left out, and
   * the digest then recomputed: it differs from the peer's, and the peer's whole list comes
   * again, as it would with nothing saved. This device's feeds that changed since the save are
   * owed to the peer (unsent): it may not have been told of them.
   */
  static restore (device: string, p: SavedPeer, conversationOf: (key: string) => string | undefined, was: SavedMine | null, mine: FeedList): PeerFeeds {
    const s = new PeerFeeds(device)
    s.unsent = p.unsent === 'all' ? 'all' : new Set(p.unsent)
    if (was !== null && s.unsent !== 'all') for (const key of was.diff.keys()) s.unsent.add(key)
    if (p.like !== undefined) {
      if (was === null) return s // relative to a list that is gone: as if nothing were saved
      const heard = new Map(mine.feeds)
      for (const [key, length] of was.diff) {
        const m = mine.get(key)
        if (length === null) heard.delete(key)
        else if (m !== undefined) heard.set(key, { conversation: m.conversation, length })
      }
      if (heard.size !== was.size) return s
      for (const key of p.like.absent) heard.delete(key)
      const differ = withConversations(p.like.differ, conversationOf)
      for (const [key, f] of differ) heard.set(key, f)
      if (differ.length !== p.like.differ.length || heard.size !== was.size - p.like.absent.length) return s
      s.heard = FeedList.restore(heard, p.digest)
      // where the two differ: the saved exceptions, and this device's feeds that changed since
      for (const [key] of differ) s.checkLag(key, mine)
      for (const key of was.diff.keys()) s.checkLag(key, mine)
      return s
    }
    const entries = withConversations(p.heard ?? [], conversationOf)
    if (entries.length === (p.heard ?? []).length) {
      s.heard = FeedList.restore(new Map(entries), p.digest)
      if (s.heard.size !== entries.length) s.heard = FeedList.of(new Map(entries)) // a key twice: the saved digest is not this list's
      for (const [key] of entries) s.checkLag(key, mine)
    } else {
      for (const [key, f] of entries) s.heardFeed(key, f, mine)
    }
    return s
  }
}

/**
 * This device's list as it was saved, told by how it differs from its list now: for each feed
 * that changed since (or is new), its saved length, or null if the saved list lacked it.
 * Kept up to date as the list changes, until every saved peer has been restored.
 */
export interface SavedMine {
  /** how many feeds the saved list held */
  size: number
  diff: Map<string, number | null>
}

/** A list as saved: [key, length] pairs (the conversation is the history's). */
export function pairs (l: FeedList): SavedPairs {
  return [...l.feeds].map(([key, f]) => [key, f.length])
}

/** Saved pairs with their conversations from the history; those it does not know are left out. */
export function withConversations (saved: SavedPairs, conversationOf: (key: string) => string | undefined): Array<[string, HeldFeed]> {
  const out: Array<[string, HeldFeed]> = []
  for (const [key, length] of saved) {
    const conversation = conversationOf(key)
    if (conversation !== undefined) out.push([key, { conversation, length }])
  }
  return out
}
