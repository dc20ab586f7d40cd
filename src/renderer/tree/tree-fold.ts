// Folded subtrees of the tree view: which rows show when some forks are folded. Pure: the full
// layout and the folded turns in, the rows to draw out. Folds are this device's view state (a
// set of turn ids), never history. Rows are in pre-order, so a turn's subtree is the `span`
// rows after it: folding skips them in one step, and the rows left keep their connectors
// (each row's guide comes from its ancestors, which a fold never hides).
import type { TreeNode } from './tree-layout'

/** Whether a row can fold: a fork (its children are its ARIA children, one lane in). */
export const canFold = (n: Pick<TreeNode, 'childCount'>): boolean => n.childCount > 1

/** The rows to draw: the full layout without the subtrees of the folded forks. */
export function foldRows (rows: readonly TreeNode[], folded: ReadonlySet<string>): TreeNode[] {
  if (folded.size === 0) return rows as TreeNode[]
  const out: TreeNode[] = []
  for (let i = 0; i < rows.length; i++) {
    const n = rows[i] as TreeNode
    out.push(n)
    if (canFold(n) && folded.has(n.id)) i += n.span
  }
  return out
}

/**
 * The folds without those hiding row `at` (the shown branch's last turn, when the tree opens):
 * the tree always opens with the shown branch in view, whatever was folded last time.
 */
export function unfoldPathTo (rows: readonly TreeNode[], at: number, folded: ReadonlySet<string>): Set<string> {
  const out = new Set(folded)
  for (let p = rows[at]?.parent ?? -1; p >= 0; p = (rows[p] as TreeNode).parent) out.delete((rows[p] as TreeNode).id)
  return out
}

/**
 * Index in `shown` of full-layout row `i`, or of its nearest shown ancestor (a fold hides it);
 * -1 for none. A scan of the shown rows per step: it serves a fold or a key press, not a frame.
 */
export function shownIndexOf (rows: readonly TreeNode[], shown: readonly TreeNode[], i: number): number {
  for (let at = i; at >= 0; at = (rows[at] as TreeNode).parent) {
    const j = shown.indexOf(rows[at] as TreeNode)
    if (j >= 0) return j
  }
  return -1
}

/** The ARIA parent of shown row `i` (the fork it hangs under, one lane up), or -1 at the top. */
export function ariaParent (shown: readonly Pick<TreeNode, 'lane'>[], i: number): number {
  const lane = shown[i]?.lane ?? 0
  for (let j = i - 1; j >= 0; j--) if ((shown[j] as Pick<TreeNode, 'lane'>).lane < lane) return j
  return -1
}

/** What a folded row says it hides. */
export function hiddenText (n: Pick<TreeNode, 'span' | 'subtreeEntries' | 'subtreeTips'>): string {
  return `${n.subtreeEntries} entr${n.subtreeEntries === 1 ? 'y' : 'ies'}, ${n.subtreeTips} branch${n.subtreeTips === 1 ? '' : 'es'} folded`
}
