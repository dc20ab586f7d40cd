// The whole conversation as a tree of turns, for the tree view. Pure: a DAG in, rows out.
// A turn is a user entry and the agent's entries after it (up to the next user entries on
// each path); the root (and anything before the first user message) is the first turn.
// Entries hang under their first parent, as in ConversationDag.pathTo. Iterative throughout:
// a chain of 10,000 entries must not use 10,000 stack frames.
import { branchName, branchNameKey } from '../../shared/conversation/branch-name'
import type { ConversationDag } from '../../shared/conversation/conversation-dag'
import type { Entry } from '../../shared/entry/entry'

export interface TreeNode {
  /** the turn's first entry (user message, or the root): the row's key */
  id: string
  /** index of the parent turn in the row list (-1 for the root) */
  parent: number
  /** turns from the root (the root is 0) */
  depth: number
  /** indentation: one more than the parent's when the parent forks, else the parent's */
  lane: number
  /**
   * What each lane column draws before the row, as `arbor tree` does: '├' / '└' where the row
   * hangs from a fork (a later sibling follows / it is the last), '│' where a fork above still
   * has siblings to come, ' ' where it had none. One character per lane.
   */
  guide: string
  /** children of this turn (more than one: a branch point) */
  childCount: number
  /** position among the parent's children (0-based) and how many there are */
  siblingIndex: number
  siblingCount: number
  /** the device that wrote the turn's first entry (the user message's author; the root's) */
  device: string
  /** the device of the turn's first agent entry, if another one answered */
  agentDevice?: string
  /** entries in the turn */
  entries: number
  /** the first words of the user message (the title for the root) */
  label: string
  /** whether the turn is on the branch shown for the selection */
  onBranch: boolean
  /**
   * The entry to select when the row is picked: the turn's user entry (the root for the first
   * turn). ConversationDag.branch extends a selection through the newest children, so the
   * branch shown runs through this turn and then follows its newest continuation; selecting
   * the user entry (not the turn's last entry) keeps that well defined when the agent's
   * entries inside the turn fork themselves.
   */
  select: string
  /** the turn's newest last entry (where "continue from here" would attach a message) */
  last: string
  /** rows in this turn's subtree, itself left out: they follow it in the list (pre-order) */
  span: number
  /** entries in the turns of its subtree, itself left out */
  subtreeEntries: number
  /** branch tips (turns without children) in its subtree, itself counted if it is one */
  subtreeTips: number
  /** the name given to the branch starting at this turn (`branch.name:<id>` meta, LWW), if any */
  name?: string
  /** the `compaction` entries in the turn: how many entries each folded, oldest first */
  compactions?: number[]
}

export interface TreeLayout {
  rows: TreeNode[]
  /** index of the deepest row on the shown branch (-1 when empty) */
  current: number
}

const LABEL_WORDS = 8
const LABEL_CHARS = 60

/** The first words of a message, on one line. */
export function shortLabel (text: string): string {
  // the first LABEL_WORDS + 1 words only (one more tells whether there are more): a message may be pages long
  const words: string[] = []
  const re = /\S+/g
  for (let m = re.exec(text); m !== null && words.length <= LABEL_WORDS; m = re.exec(text)) words.push(m[0])
  let out = words.slice(0, LABEL_WORDS).join(' ')
  if (out.length > LABEL_CHARS) out = out.slice(0, LABEL_CHARS - 1).trimEnd() + '…'
  else if (words.length > LABEL_WORDS) out += ' …'
  return out
}

/** Lays the DAG out as rows in a pre-order walk (oldest child first, as siblings sort). */
export function layoutTree (dag: ConversationDag, selected?: string): TreeLayout {
  const root = dag.root
  if (root === undefined) return { rows: [], current: -1 }
  const shown = new Set<string>()
  for (const e of dag.branch(selected)) shown.add(e.id)
  const title = root.kind === 'conversation' ? root.body.title : ''
  const rows: TreeNode[] = []
  const newNode = (e: Entry, parent: number, label: string): number => {
    const p = rows[parent]
    rows.push({
      id: e.id,
      parent,
      depth: p === undefined ? 0 : p.depth + 1,
      lane: 0,
      guide: '',
      childCount: 0,
      siblingIndex: p === undefined ? 0 : p.childCount,
      siblingCount: 1,
      device: e.author.device,
      entries: 1,
      label,
      onBranch: shown.has(e.id),
      select: e.id,
      last: e.id,
      span: 0,
      subtreeEntries: 0,
      subtreeTips: 0
    })
    if (p !== undefined) p.childCount++
    return rows.length - 1
  }
  newNode(root, -1, title === '' ? 'Start' : shortLabel(title))
  // entry pre-order walk: a turn is created when its user entry is reached, so turns come
  // out in pre-order too (a turn's subtree is walked before its later siblings)
  // the walk's stack as two parallel arrays (an object per entry was most of its garbage)
  const stackE: Entry[] = []
  const stackOwner: number[] = []
  const stackDepth: number[] = []
  // the entries from the root to the one being walked (path[d] at depth d): a compaction's range is
  // found on it natively (lastIndexOf), so even a peer's pile of compactions costs no walks
  const path: string[] = [root.id]
  /** per row, the wall time of its `last` entry */
  const lastTs: number[] = [root.ts]
  const pushKids = (e: Entry, owner: number, depth: number): void => {
    const kids = dag.children(e.id)
    for (let i = kids.length - 1; i >= 0; i--) {
      const k = kids[i] as Entry
      if (k.parents[0] === e.id) { stackE.push(k); stackOwner.push(owner); stackDepth.push(depth + 1) }
    }
  }
  pushKids(root, 0, 0)
  while (stackE.length > 0) {
    const e = stackE.pop() as Entry
    const owner = stackOwner.pop() as number
    const depth = stackDepth.pop() as number
    path[depth] = e.id
    if (e.kind === 'user') {
      const at = newNode(e, owner, shortLabel(e.body.text) || '(empty message)')
      lastTs[at] = e.ts
      pushKids(e, at, depth)
      continue
    }
    const node = rows[owner] as TreeNode
    node.entries++
    if (e.kind === 'compaction') {
      // its folded range, counted on its path (it ends on the branch before it); 0 when the range is not there
      const to = depth > 0 ? path.lastIndexOf(e.body.folded.to, depth - 1) : -1
      const from = to >= 0 ? path.lastIndexOf(e.body.folded.from, to) : -1
      ;(node.compactions ??= []).push(from >= 0 ? to - from + 1 : 0)
    }
    if (node.agentDevice === undefined && e.author.agent !== undefined && e.author.device !== node.device) node.agentDevice = e.author.device
    // the newest last entry: entries come oldest-first within a turn's walk, so keep the latest
    if ((lastTs[owner] as number) <= e.ts) { node.last = e.id; lastTs[owner] = e.ts }
    pushKids(e, owner, depth)
  }
  // parents come before children, so one forward pass sets lanes, guides and sibling counts;
  // carry[i]: what row i's descendants draw in the lanes up to row i's own
  const carry: string[] = new Array<string>(rows.length)
  let current = -1
  for (let i = 0; i < rows.length; i++) {
    const n = rows[i] as TreeNode
    const p = rows[n.parent]
    carry[i] = ''
    if (p !== undefined) {
      n.siblingCount = p.childCount
      n.lane = p.childCount > 1 ? p.lane + 1 : p.lane
      const above = carry[n.parent] as string
      if (p.childCount > 1) {
        const last = n.siblingIndex === p.childCount - 1
        n.guide = above + (last ? '└' : '├')
        carry[i] = above + (last ? ' ' : '│')
      } else {
        n.guide = above
        carry[i] = above
      }
    }
    if (n.onBranch && (current === -1 || n.depth > (rows[current] as TreeNode).depth)) current = i
  }
  // children come after their parents, so one backward pass sums each subtree into its root
  for (let i = rows.length - 1; i >= 0; i--) {
    const n = rows[i] as TreeNode
    if (n.childCount === 0) n.subtreeTips++
    const name = branchName(dag.meta(branchNameKey(n.id))?.value)
    if (name !== undefined) n.name = name
    const p = rows[n.parent]
    if (p === undefined) continue
    p.span += n.span + 1
    p.subtreeEntries += n.subtreeEntries + n.entries
    p.subtreeTips += n.subtreeTips
  }
  return { rows, current }
}

/** Colours for device dots: distinct, and at least 3:1 against light and dark backgrounds. */
export const DEVICE_COLOURS = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#b8860b', '#3b8fd9', '#8f6bc8', '#c2410c'] as const

/** The same colour for a device on every run and every device (FNV-1a of its key). */
export function deviceColour (device: string): string {
  let h = 0x811c9dc5
  for (let i = 0; i < device.length; i++) {
    h ^= device.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return DEVICE_COLOURS[h % DEVICE_COLOURS.length] as string
}

/** The rows [start, end) to draw for a scroll position, with `overscan` rows either side. */
/** A row's connector lanes as runs to draw: a run of │ or blank lanes is one element, ├ and └ one each (first `max` lanes). */
export function laneRuns (guide: string, lanes: number, max = 40): Array<{ at: number; glyph: string; count: number }> {
  const depth = Math.min(lanes, max)
  const out: Array<{ at: number; glyph: string; count: number }> = []
  for (let l = 0; l < depth;) {
    const glyph = guide[l] ?? ' '
    let count = 1
    if (glyph === '│' || glyph === ' ') while (l + count < depth && (guide[l + count] ?? ' ') === glyph) count++
    out.push({ at: l, glyph, count })
    l += count
  }
  return out
}

export function visibleWindow (count: number, rowHeight: number, scrollTop: number, height: number, overscan = 8): { start: number; end: number } {
  const start = Math.min(count, Math.max(0, Math.floor(scrollTop / rowHeight) - overscan))
  const end = Math.min(count, Math.ceil((scrollTop + Math.max(height, rowHeight)) / rowHeight) + overscan)
  return { start, end: Math.max(start, end) }
}
