import { createHash } from 'node:crypto'

/** What a device holds of one feed, as announced on `arbor/1`. */
export interface HeldFeed { conversation: string; length: number }

/** One feed of a list as it goes on the wire. */
export interface ListedFeed extends HeldFeed { key: string }

const ZERO = Buffer.alloc(32)

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
  private readonly map = new Map<string, HeldFeed>()
  private readonly acc = Buffer.alloc(32)
  /** the 1.0 digest of this list (sorted, hashed whole), kept until the list changes */
  private sortedDigest: string | null = null

  /**
   * A list as this device saved it, with the digest saved beside it: nothing is hashed, so a
   * start costs no hash per feed. Only for what this device wrote itself (writeStateFile: the
   * list and its digest, whole or not at all); entries that changed since are then set().
   */
  static restore (entries: Iterable<[string, HeldFeed]>, digest: string): FeedList {
    const l = new FeedList()
    for (const [key, f] of entries) l.map.set(key, { conversation: f.conversation, length: f.length })
    Buffer.from(digest, 'hex').copy(l.acc)
    return l
  }

  get feeds (): ReadonlyMap<string, HeldFeed> { return this.map }
  get size (): number { return this.map.size }
  get digest (): string { return this.acc.toString('hex') }
  get (key: string): HeldFeed | undefined { return this.map.get(key) }

  /** Sets a feed's entry; true if that changed the list. */
  set (key: string, f: HeldFeed): boolean {
    const old = this.map.get(key)
    if (old !== undefined && old.conversation === f.conversation && old.length === f.length) return false
    if (old !== undefined) xorInto(this.acc, term(key, old))
    const held = { conversation: f.conversation, length: f.length }
    this.map.set(key, held)
    xorInto(this.acc, term(key, held))
    this.sortedDigest = null
    return true
  }

  clear (): void {
    this.map.clear()
    ZERO.copy(this.acc)
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
