import type { Entry } from './entry'
import { compareHlc, type Hlc } from './hlc'

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

/**
 * The entries of one conversation as a tree (a DAG, since an entry may have several
 * parents). Pure and in memory: the union of any set of entries in any order.
 * An entry whose parents have not all arrived is kept but *waiting*; it joins the tree
 * as soon as its last missing ancestor arrives.
 */
export class ConversationDag {
  readonly conversation: string
  private readonly all = new Map<string, Entry>()
  private readonly joinedIds = new Set<string>()
  private readonly kids = new Map<string, Entry[]>()
  private readonly headSet = new Set<string>()
  private readonly waitingOn = new Map<string, Set<string>>()
  /** The winning joined `meta` entry per key, kept as entries join. */
  private readonly metaBest = new Map<string, Entry>()
  private lastTs = 0

  constructor (conversation: string, entries: Iterable<Entry> = []) {
    this.conversation = conversation
    for (const e of entries) this.add(e)
  }

  get size (): number { return this.all.size }
  get joinedSize (): number { return this.joinedIds.size }
  /** Wall time of the newest entry, for display. */
  get updatedAt (): number { return this.lastTs }
  get root (): Entry | undefined {
    const r = this.all.get(this.conversation)
    return r !== undefined && this.joinedIds.has(r.id) ? r : undefined
  }

  has (id: string): boolean { return this.all.has(id) }
  get (id: string): Entry | undefined { return this.all.get(id) }
  isJoined (id: string): boolean { return this.joinedIds.has(id) }
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
    if (!this.waitingOn.has(entry.id) && entry.parents.length > 0 && entry.parents.every(p => this.joinedIds.has(p))) {
      this.join(entry)
      return [entry]
    }
    const joined: Entry[] = []
    const stack: Entry[] = [entry]
    while (stack.length > 0) {
      const e = stack.pop() as Entry
      if (this.joinedIds.has(e.id) || !this.ready(e)) continue
      this.join(e)
      joined.push(e)
      const waiters = this.waitingOn.get(e.id)
      if (waiters === undefined) continue
      this.waitingOn.delete(e.id)
      for (const w of waiters) stack.push(this.all.get(w) as Entry)
    }
    return joined
  }

  /** Every parent joined (or, for the root, nothing to wait for); else registers the wait. */
  private ready (e: Entry): boolean {
    if (e.parents.length === 0) return e.id === this.conversation
    let ok = true
    for (const p of e.parents) {
      if (this.joinedIds.has(p)) continue
      ok = false
      let set = this.waitingOn.get(p)
      if (set === undefined) this.waitingOn.set(p, set = new Set())
      set.add(e.id)
    }
    return ok
  }

  private join (e: Entry): void {
    this.joinedIds.add(e.id)
    this.headSet.add(e.id)
    if (e.kind === 'meta') {
      const best = this.metaBest.get(e.body.key)
      const c = best?.kind === 'meta' ? compareHlc(e.body.hlc, best.body.hlc) : 1
      if (best === undefined || c > 0 || (c === 0 && e.id > best.id)) this.metaBest.set(e.body.key, e)
    }
    for (const p of e.parents) {
      this.headSet.delete(p)
      let list = this.kids.get(p)
      if (list === undefined) this.kids.set(p, list = [])
      insertSorted(list, e)
    }
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
    return this.kids.get(id) ?? []
  }

  /** Entries kept but not yet in the tree, because an ancestor has not arrived. */
  waiting (): Entry[] {
    const out: Entry[] = []
    for (const e of this.all.values()) if (!this.joinedIds.has(e.id)) out.push(e)
    return out.sort(compareEntries)
  }

  /** Ids that waiting entries name as parents but that nobody has delivered. */
  missing (): string[] {
    return [...this.waitingOn.keys()].filter(id => !this.all.has(id)).sort()
  }

  /** root → id, following each entry's first parent. Empty if id is not in the tree. */
  pathTo (id: string): Entry[] {
    if (!this.joinedIds.has(id)) return []
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
    let start = selected !== undefined && this.joinedIds.has(selected) ? selected : undefined
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
      tip = kids === undefined ? undefined : kids[kids.length - 1]
      if (tip !== undefined) path.push(tip)
    }
    return path
  }

  /**
   * Last-writer-wins (by hybrid logical clock) over `meta` entries with this key.
   * Equal clocks (a device reusing one, or naming another's device) fall back to the
   * larger entry id, so every device picks the same value whatever the arrival order.
   */
  meta (key: string): { value: unknown; hlc: Hlc } | undefined {
    const best = this.metaBest.get(key)
    return best === undefined || best.kind !== 'meta' ? undefined : { value: best.body.value, hlc: best.body.hlc }
  }

  title (): string {
    const m = this.meta('title')
    if (m !== undefined && typeof m.value === 'string') return m.value
    const root = this.all.get(this.conversation)
    return root?.kind === 'conversation' ? root.body.title : ''
  }

  snapshot (): DagSnapshot {
    const children: Record<string, string[]> = {}
    for (const [id, list] of [...this.kids].sort((a, b) => a[0] < b[0] ? -1 : 1)) children[id] = list.map(e => e.id)
    return {
      entries: [...this.all.keys()].sort(),
      joined: [...this.joinedIds].sort(),
      heads: [...this.headSet].sort(),
      children
    }
  }

  /** A new DAG holding the entries of both. */
  static union (a: ConversationDag, b: ConversationDag): ConversationDag {
    if (a.conversation !== b.conversation) throw new Error('cannot unite two different conversations')
    const out = new ConversationDag(a.conversation, a.all.values())
    for (const e of b.all.values()) out.add(e)
    return out
  }
}

function insertSorted (list: Entry[], e: Entry): void {
  const last = list[list.length - 1]
  if (last === undefined || compareEntries(last, e) < 0) { list.push(e); return } // arrivals are mostly in order
  let lo = 0
  let hi = list.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (compareEntries(list[mid] as Entry, e) < 0) lo = mid + 1
    else hi = mid
  }
  list.splice(lo, 0, e)
}
