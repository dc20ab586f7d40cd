import type { Entry, EntryOf } from '../entry/entry'
import { compareHlc, hlcDue, honestHlc, maxHlc, tickHlc, type Hlc } from '../entry/hlc'

/** Sibling order: oldest first by wall time, then id, so every device draws the same tree. */
export function compareEntries (a: Entry, b: Entry): number {
  if (a.ts !== b.ts) return a.ts - b.ts
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0
}

/** A canonical description of a DAG's state, equal for equal DAGs whatever the arrival order. */
export interface DagSnapshot {
  entries: string[]
  joined: string[]
  heads: string[]
  children: Record<string, string[]>
}

export interface DagOptions {
  /** the reader's clock, against which peers' hybrid-clock timestamps are bounded (default Date.now) */
  now?: () => number
  /**
   * Ids taken as joined without being held: a window of a larger conversation (the end of a
   * branch sent by conversation.open with `tail`) whose ancestors the node holds. An entry
   * naming one as its parent joins; walks up the branch stop there.
   */
  assumed?: Iterable<string>
}

/**
 * The entries of one conversation as a tree (a DAG, since an entry may have several
 * parents). Pure and in memory: the union of any set of entries in any order.
 * An entry whose parents have not all arrived is kept but *waiting*; it joins the tree
 * as soon as its last missing ancestor arrives.
 */
export class ConversationDag {
  readonly conversation: string
  private readonly all = new Map<string, Entry>()
  // Entries kept but not joined, the few, rather than the joined, the many: an entry that joins
  // costs no set of its own. Every entry of `all` not here is joined.
  private readonly waitingIds = new Set<string>()
  // A parent's children: the entry itself while it is the only one (most are), else a list
  private readonly kids = new Map<string, Entry | Entry[]>()
  private readonly headSet = new Set<string>()
  private readonly waitingOn = new Map<string, Set<string>>()
  /** Per key, the joined `meta` entries whose clock is honest (names their author), oldest first by (HLC, id). */
  private readonly metaByKey = new Map<string, Array<EntryOf<'meta'>>>()
  private lastTs = 0
  private readonly clock: () => number
  private assumedIds: Set<string> | undefined

  constructor (conversation: string, entries: Iterable<Entry> = [], opts: DagOptions = {}) {
    this.conversation = conversation
    this.clock = opts.now ?? Date.now
    if (opts.assumed !== undefined) this.assumedIds = new Set(opts.assumed)
    for (const e of entries) this.add(e)
  }

  /** Whether some ancestors are only assumed (a window): see DagOptions.assumed. */
  get windowed (): boolean { return this.assumedIds !== undefined && this.assumedIds.size > 0 }

  /** Drops the assumed ids once their entries were added (the whole conversation arrived). */
  forgetAssumed (): void { this.assumedIds = undefined }

  get size (): number { return this.all.size }
  get joinedSize (): number { return this.all.size - this.waitingIds.size }
  /** Wall time of the newest entry, for display. */
  get updatedAt (): number { return this.lastTs }
  get root (): Entry | undefined {
    const r = this.all.get(this.conversation)
    return r !== undefined && !this.waitingIds.has(r.id) ? r : undefined
  }

  has (id: string): boolean { return this.all.has(id) }
  get (id: string): Entry | undefined { return this.all.get(id) }
  isJoined (id: string): boolean { return this.all.has(id) ? !this.waitingIds.has(id) : this.assumedIds?.has(id) === true }
  entries (): IterableIterator<Entry> { return this.all.values() }

  /**
   * Adds an entry (idempotent). Returns the entries that joined the tree because of it,
   * parents before children: the entry itself and any waiting descendants it completed.
   */
  add (entry: Entry): Entry[] {
    if (entry.conversation !== this.conversation) {
      throw new Error(`entry ${entry.id.slice(0, 12)} belongs to conversation ${entry.conversation.slice(0, 12)}, not ${this.conversation.slice(0, 12)}`)
    }
    if (this.all.has(entry.id)) return []
    this.all.set(entry.id, entry)
    if (entry.ts > this.lastTs) this.lastTs = entry.ts
    // The common case, parents already here and nobody waiting on this entry: no work list.
    if (!this.waitingOn.has(entry.id) && this.parentsJoined(entry)) {
      this.join(entry)
      return [entry]
    }
    this.waitingIds.add(entry.id)
    const joined: Entry[] = []
    const stack: Entry[] = [entry]
    while (stack.length > 0) {
      const e = stack.pop() as Entry
      if (!this.waitingIds.has(e.id) || !this.ready(e)) continue
      this.waitingIds.delete(e.id)
      this.join(e)
      joined.push(e)
      const waiters = this.waitingOn.get(e.id)
      if (waiters === undefined) continue
      this.waitingOn.delete(e.id)
      for (const w of waiters) stack.push(this.all.get(w) as Entry)
    }
    return joined
  }

  private parentsJoined (e: Entry): boolean {
    if (e.parents.length === 0) return false // a root: the general path decides
    for (const p of e.parents) if (!this.isJoined(p)) return false
    return true
  }

  /** Every parent joined (or, for the root, nothing to wait for); else registers the wait. */
  private ready (e: Entry): boolean {
    if (e.parents.length === 0) return e.id === this.conversation
    let ok = true
    for (const p of e.parents) {
      if (this.isJoined(p)) continue
      ok = false
      let set = this.waitingOn.get(p)
      if (set === undefined) this.waitingOn.set(p, set = new Set())
      set.add(e.id)
    }
    return ok
  }

  private join (e: Entry): void {
    // an assumed entry arriving after its children is no head
    if (!this.kids.has(e.id)) this.headSet.add(e.id)
    // A clock naming another device than the entry's author never counts (it would steal the tie-break).
    if (e.kind === 'meta' && honestHlc(e.body.hlc, e.author.device)) {
      let list = this.metaByKey.get(e.body.key)
      if (list === undefined) this.metaByKey.set(e.body.key, list = [])
      insertSorted(list, e, compareMeta)
    }
    for (const p of e.parents) {
      this.headSet.delete(p)
      const kids = this.kids.get(p)
      if (kids === undefined) this.kids.set(p, e)
      else if (Array.isArray(kids)) insertSorted(kids, e)
      else this.kids.set(p, compareEntries(kids, e) < 0 ? [kids, e] : [e, kids])
    }
  }

  /** The joined `meta` entries whose clock counts (names their author), without a walk of every entry. */
  metaEntries (): Array<EntryOf<'meta'>> {
    const out: Array<EntryOf<'meta'>> = []
    for (const list of this.metaByKey.values()) out.push(...list)
    return out
  }

  /** The branch's tip from `start` on down through the newest child (branch's descent, without the walk from the root). */
  tipFrom (start: string): Entry | undefined {
    let tip = this.isJoined(start) ? this.all.get(start) : undefined
    for (let next = tip; next !== undefined;) {
      tip = next
      const kids = this.kids.get(next.id)
      next = kids === undefined || !Array.isArray(kids) ? kids : kids[kids.length - 1]
    }
    return tip
  }

  /** Ids of the heads, in no particular order (cheap: for counts and summaries). */
  headIds (): string[] {
    return [...this.headSet]
  }

  /** Joined entries without joined children: the tips of the branches, oldest first. */
  heads (): Entry[] {
    return [...this.headSet].map(id => this.all.get(id) as Entry).sort(compareEntries)
  }

  children (id: string): readonly Entry[] {
    const kids = this.kids.get(id)
    return kids === undefined ? [] : Array.isArray(kids) ? kids : [kids]
  }

  /** Entries kept but not yet in the tree, because an ancestor has not arrived. */
  waiting (): Entry[] {
    const out: Entry[] = []
    for (const id of this.waitingIds) out.push(this.all.get(id) as Entry)
    return out.sort(compareEntries)
  }

  /** Ids that waiting entries name as parents but that nobody has delivered. */
  missing (): string[] {
    return [...this.waitingOn.keys()].filter(id => !this.all.has(id)).sort()
  }

  /** root → id, following each entry's first parent (in a window: from the first held one). Empty if id is not in the tree. */
  pathTo (id: string): Entry[] {
    if (!this.all.has(id) || !this.isJoined(id)) return []
    const path: Entry[] = []
    let cur = this.all.get(id)
    while (cur !== undefined) {
      path.push(cur)
      const p = cur.parents[0]
      cur = p === undefined ? undefined : this.all.get(p)
    }
    return path.reverse()
  }

  /**
   * The branch shown for a selection: root → selected, then on down through the newest
   * child to a head, so a selection follows the conversation as it grows.
   * Without a selection (or a selection not in the tree) it shows the newest head.
   */
  branch (selected?: string): Entry[] {
    let start = selected !== undefined && this.all.has(selected) && this.isJoined(selected) ? selected : undefined
    if (start === undefined) {
      const heads = this.heads()
      const newest = heads[heads.length - 1]
      if (newest === undefined) return []
      start = newest.id
    }
    const path = this.pathTo(start)
    let tip = path[path.length - 1]
    while (tip !== undefined) {
      const kids = this.kids.get(tip.id)
      tip = kids === undefined || !Array.isArray(kids) ? kids : kids[kids.length - 1]
      if (tip !== undefined) path.push(tip)
    }
    return path
  }

  /**
   * Last-writer-wins (by hybrid logical clock) over `meta` entries with this key, for state
   * every device shares (titles, auto-revival). Counts only honest clocks (hlcDue, honestHlc:
   * naming the entry's author, not more than MAX_CLOCK_SKEW_MS ahead of this reader's clock),
   * so the choice depends on the entries and the clock alone. Equal clocks fall back to the
   * larger entry id, so every device picks the same value whatever the arrival order.
   */
  meta (key: string): { value: unknown; hlc: Hlc } | undefined {
    const list = this.metaByKey.get(key)
    if (list === undefined) return undefined
    // Sorted by wall first, the entries that count now are a prefix: the last of it wins
    // (a binary search, so a peer's pile of far-future entries costs nothing here).
    const now = this.clock()
    let lo = 0
    let hi = list.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (hlcDue((list[mid] as EntryOf<'meta'>).body.hlc, now)) lo = mid + 1
      else hi = mid
    }
    const best = list[lo - 1]
    return best === undefined ? undefined : { value: best.body.value, hlc: best.body.hlc }
  }

  /**
   * Last-writer-wins over the `meta` entries with this key that `device` wrote: a setting
   * that device keeps for itself (sandbox, model server). What other devices write under the
   * key is not looked at, so a peer can neither set nor pin it.
   */
  metaOf (key: string, device: string): { value: unknown; hlc: Hlc } | undefined {
    const list = this.metaByKey.get(key) ?? []
    for (let i = list.length - 1; i >= 0; i--) {
      const e = list[i] as EntryOf<'meta'>
      if (e.author.device === device) return { value: e.body.value, hlc: e.body.hlc }
    }
    return undefined
  }

  /**
   * The working directory `device` gave the conversation: its last `cwd` setting (`arbor chat
   * --cwd`), else the root's if it wrote the root. A directory a peer named is never this one.
   */
  cwdOf (device: string): string | undefined {
    const set = this.metaOf('cwd', device)?.value
    if (typeof set === 'string' && set !== '') return set
    return this.rootBy(device)?.body.cwd
  }

  /** The root entry if `device` wrote it (its directory and model are that device's choice), else undefined. */
  rootBy (device: string): EntryOf<'conversation'> | undefined {
    const r = this.root
    return r?.kind === 'conversation' && r.author.device === device ? r : undefined
  }

  /**
   * The clock for a new `meta` entry of `key` written by `device`: after every clock that
   * counts now, and after that device's own earlier writes of the key (so its new value wins
   * over them in metaOf even if its clock went back). A clock too far ahead is not folded
   * in: a peer's far-future timestamp does not drag every later write there.
   */
  nextMetaHlc (key: string, device: string): Hlc {
    const now = this.clock()
    let last: Hlc | null = null
    for (const [k, list] of this.metaByKey) {
      for (const e of list) {
        if (hlcDue(e.body.hlc, now) || (k === key && e.author.device === device)) last = maxHlc(last, e.body.hlc)
      }
    }
    return tickHlc(last, now, device)
  }

  title (): string {
    const m = this.meta('title')
    if (m !== undefined && typeof m.value === 'string') return m.value
    const root = this.all.get(this.conversation)
    return root?.kind === 'conversation' ? root.body.title : ''
  }

  snapshot (): DagSnapshot {
    const children: Record<string, string[]> = {}
    for (const [id, kids] of [...this.kids].sort((a, b) => a[0] < b[0] ? -1 : 1)) children[id] = Array.isArray(kids) ? kids.map(e => e.id) : [kids.id]
    return {
      entries: [...this.all.keys()].sort(),
      joined: [...this.all.keys()].filter(id => !this.waitingIds.has(id)).sort(),
      heads: [...this.headSet].sort(),
      children
    }
  }

  /** A new DAG holding the entries of both. */
  static union (a: ConversationDag, b: ConversationDag): ConversationDag {
    if (a.conversation !== b.conversation) throw new Error('cannot unite two different conversations')
    const out = new ConversationDag(a.conversation, a.all.values(), { now: a.clock })
    for (const e of b.all.values()) out.add(e)
    return out
  }
}

/** Meta entries by clock, then id (the tie-break every device computes alike). */
function compareMeta (a: EntryOf<'meta'>, b: EntryOf<'meta'>): number {
  return compareHlc(a.body.hlc, b.body.hlc) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
}

function insertSorted<T extends Entry> (list: T[], e: T, compare: (a: T, b: T) => number = compareEntries): void {
  const last = list[list.length - 1]
  if (last === undefined || compare(last, e) < 0) { list.push(e); return } // arrivals are mostly in order
  let lo = 0
  let hi = list.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (compare(list[mid] as T, e) < 0) lo = mid + 1
    else hi = mid
  }
  list.splice(lo, 0, e)
}
