// The end of a branch as a self-contained window of a conversation (conversation.open with
// `tail`): what a view draws first, without every entry of a long history. Pure.
import type { ConversationDag } from './conversation-dag'
import type { Entry } from './entry'

export interface BranchWindow {
  /** the root, the branch's last entries (from a user message) with their siblings, every `meta` entry; parents first */
  entries: Entry[]
  /** ids the entries name as parents that the window leaves out (ConversationDag's `assumed`) */
  assumed: string[]
  /** the branch's last entry: the window shows the branch through it */
  tip: string
}

/**
 * At least `tail` entries of `branch`'s end (root first, as ConversationDag.branch gives it),
 * from the user message that begins the turn they start in; the siblings of each, so forks
 * along it show; the root and every joined `meta` entry (title, settings). The branch is the
 * window's from its tip (the last entry).
 */
export function branchWindow (dag: ConversationDag, branch: readonly Entry[], tail: number): BranchWindow {
  if (branch.length === 0) throw new Error('a window of an empty branch')
  let start = Math.max(1, branch.length - tail)
  while (start > 1 && (branch[start] as Entry).kind !== 'user') start--
  const held = new Set<string>()
  const entries: Entry[] = []
  const put = (e: Entry): void => { if (!held.has(e.id)) { held.add(e.id); entries.push(e) } }
  const root = branch[0]
  if (root !== undefined) put(root)
  for (let i = start; i < branch.length; i++) put(branch[i] as Entry)
  for (const e of dag.entries()) if (e.kind === 'meta' && dag.isJoined(e.id)) put(e)
  // the siblings of every branch entry held with its parent (a meta entry may join the tail to more of the branch)
  for (let i = 1; i < branch.length; i++) {
    const e = branch[i] as Entry
    const parent = branch[i - 1] as Entry
    if (!held.has(e.id) || !held.has(parent.id)) continue
    for (const sibling of dag.children(parent.id)) if (sibling.id !== e.id) put(sibling)
  }
  // a meta entry above may name a parent put after it: parents first, by a stable topological pass
  const ordered = parentsFirst(entries, held)
  const assumed = new Set<string>()
  for (const e of ordered) for (const p of e.parents) if (!held.has(p)) assumed.add(p)
  return { entries: ordered, assumed: [...assumed], tip: (branch[branch.length - 1] as Entry).id }
}

/** The entries with each after those of its parents that are among them (input order otherwise). */
function parentsFirst (entries: readonly Entry[], held: ReadonlySet<string>): Entry[] {
  const placed = new Set<string>()
  const out: Entry[] = []
  const byId = new Map(entries.map(e => [e.id, e]))
  const place = (e: Entry, depth: number): void => {
    if (placed.has(e.id)) return
    placed.add(e.id)
    // bounded by the window's size: each entry is placed once
    if (depth < entries.length) for (const p of e.parents) { const pe = held.has(p) ? byId.get(p) : undefined; if (pe !== undefined) place(pe, depth + 1) }
    out.push(e)
  }
  for (const e of entries) place(e, 0)
  return out
}
