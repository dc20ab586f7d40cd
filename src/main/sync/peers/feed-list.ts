import { createHash } from 'node:crypto'

/** What a device holds of one feed, as announced on `arbor/1`. */
export interface HeldFeed { conversation: string; length: number }

/** One feed of a list as it goes on the wire. */
export interface ListedFeed extends HeldFeed { key: string }

/** A feed's term in a list's digest. */
function term (key: string, f: HeldFeed): Buffer {
  return createHash('sha256').update(`${key}:${f.conversation}:${f.length}\n`).digest()
}

function xorInto (acc: Buffer, t: Buffer): void {
  for (let i = 0; i < 32; i++) acc[i] = (acc[i] as number) ^ (t[i] as number)
}

/**
 * A list of feeds (key → conversation, length) with a digest kept up to date on every change:
 * the XOR of one hash per feed, so a change costs one hash and reading the digest costs
 * nothing, whatever the list's size. Feed keys are unique, so no two terms cancel by chance;
 * a peer can craft lists with equal digests, but a list is only ever compared with what that
 * same peer said, so a forged match only misinforms this device about the forger's own feeds.
 */
export class FeedList {
  private map = new Map<string, HeldFeed>()
  /** the digest so far; null: not computed yet (a list built whole hashes its feeds when first asked) */
  private acc: Buffer | null = Buffer.alloc(32)
  /** the 1.0 digest of this list (sorted, hashed whole), kept until the list changes */
  private sortedDigest: string | null = null

  /**
   * A list built whole (a start without a usable save): nothing is hashed until its digest is
   * first read, so a start pays a hash per feed only if and when a peer connects. Takes `map`.
   */
  static of (map: Map<string, HeldFeed>): FeedList {
    const l = new FeedList()
    l.map = map
    l.acc = null
    return l
  }

  /**
   * A list as this device saved it, with the digest saved beside it: nothing is hashed, so a
   * start costs no hash per feed. Only for what this device wrote itself (the list and its
   * digest, whole or not at all); entries that changed since are then set(). Takes `map`.
   */
  static restore (map: Map<string, HeldFeed>, digest: string): FeedList {
    const l = new FeedList()
    l.map = map
    Buffer.from(digest, 'hex').copy(l.acc as Buffer)
    return l
  }

  get feeds (): ReadonlyMap<string, HeldFeed> { return this.map }
  get size (): number { return this.map.size }
  get digest (): string {
    if (this.acc === null) {
      const acc = Buffer.alloc(32)
      for (const [key, f] of this.map) xorInto(acc, term(key, f))
      this.acc = acc
    }
    return this.acc.toString('hex')
  }

  get (key: string): HeldFeed | undefined { return this.map.get(key) }

  /** Sets a feed's entry; true if that changed the list. */
  set (key: string, f: HeldFeed): boolean {
    const old = this.map.get(key)
    if (old !== undefined && old.conversation === f.conversation && old.length === f.length) return false
    const held = { conversation: f.conversation, length: f.length }
    this.map.set(key, held)
    this.sortedDigest = null
    if (this.acc === null) return true
    if (old !== undefined) xorInto(this.acc, term(key, old))
    xorInto(this.acc, term(key, held))
    return true
  }

  /** Takes a feed out of the list; true if it was in it. */
  delete (key: string): boolean {
    const old = this.map.get(key)
    if (old === undefined) return false
    this.map.delete(key)
    this.sortedDigest = null
    if (this.acc !== null) xorInto(this.acc, term(key, old))
    return true
  }

  clear (): void {
    this.map.clear()
    this.acc = Buffer.alloc(32)
    this.sortedDigest = null
  }

  list (keys: Iterable<string> = this.map.keys()): ListedFeed[] {
    const out: ListedFeed[] = []
    for (const key of keys) {
      const f = this.map.get(key)
      if (f !== undefined) out.push({ key, conversation: f.conversation, length: f.length })
    }
    return out
  }

  /** The digest protocol 1.0 sends and compares (feedsDigest): computed once per change of the list, for 1.0 peers only. */
  sorted (): string {
    this.sortedDigest ??= feedsDigest(this.list())
    return this.sortedDigest
  }
}

/** A digest of a feeds list, independent of its order: the one protocol 1.0 (and 1.1) send in a FeedsDigest. */
export function feedsDigest (feeds: ListedFeed[]): string {
  const h = createHash('sha256')
  for (const f of [...feeds].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) h.update(`${f.key}:${f.conversation}:${f.length}\n`)
  return h.digest('hex')
}
