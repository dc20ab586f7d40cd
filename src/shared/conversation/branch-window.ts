// The end of a branch as a self-contained window of a conversation (conversation.open with
// `tail`): what a view draws first, without every entry of a long history. Pure.
import type { ConversationDag } from './conversation-dag'
import type { Entry } from '../entry/entry'

export interface BranchWindow {
  /** the root, the branch's last entries (from a user message) with their siblings, every `meta` entry; parents first */
  entries: Entry[]
  /** ids the entries name as parents that the window leaves out (ConversationDag's `assumed`) */
  assumed: string[]
  /** the branch's last entry: the window shows the branch through it */
  tip: string
}

/**
 * At least `tail` entries of the end of the branch shown for `selected` (ConversationDag.branch),
 * from the user message that begins the turn they start in; the siblings of each, so forks
 * along it show; the root and every `meta` entry that counts (title, settings). The branch is
 * the window's from its tip. Walks only the window (up from the tip), not the whole branch.
 * Undefined when there is no branch (the root has not arrived).
 */
export function branchWindow (dag: ConversationDag, selected: string | undefined, tail: number): BranchWindow | undefined {
  const newest = dag.heads().at(-1)
  const tip = selected !== undefined && dag.has(selected) && dag.isJoined(selected) ? dag.tipFrom(selected) : newest
  const root = dag.root
  if (tip === undefined || root === undefined) return undefined
  // the branch's end, tip first: `tail` entries, then on up to a user message (or the root's child)
  const end: Entry[] = []
  for (let e: Entry | undefined = tip; e !== undefined && e.id !== root.id;) {
    end.push(e)
    if (end.length >= tail && e.kind === 'user') break
    const p: string | undefined = e.parents[0]
    e = p === undefined ? undefined : dag.get(p)
  }
  const held = new Set<string>()
  const entries: Entry[] = []
  const put = (e: Entry): void => { if (!held.has(e.id)) { held.add(e.id); entries.push(e) } }
  put(root)
  for (let i = end.length - 1; i >= 0; i--) put(end[i] as Entry)
  for (const m of dag.metaEntries()) put(m)
  // held meta entries just above the window are on the branch too: the path held goes on up through them
  const path = [...end].reverse()
  for (let p: string | undefined = path[0]?.parents[0]; p !== undefined && held.has(p) && p !== root.id;) {
    const e = dag.get(p) as Entry
    path.unshift(e)
    p = e.parents[0]
  }
  if (path[0]?.parents[0] === root.id) path.unshift(root)
  // the siblings of every branch entry held with its parent
  for (let i = 1; i < path.length; i++) {
    const e = path[i] as Entry
    const parent = path[i - 1] as Entry
    for (const sibling of dag.children(parent.id)) if (sibling.id !== e.id) put(sibling)
  }
  const ordered = parentsFirst(entries, held)
  const assumed = new Set<string>()
  for (const e of ordered) for (const p of e.parents) if (!held.has(p)) assumed.add(p)
  return { entries: ordered, assumed: [...assumed], tip: tip.id }
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
