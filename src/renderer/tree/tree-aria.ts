// ARIA positions for the tree view's lane layout. The rows are virtualised, so the browser
// cannot count sets itself: each row says where it sits. A row's ARIA parent is the nearest
// earlier row in a shallower lane (the fork it hangs under); its set is the rows under that
// parent in its lane. Lanes only step in at forks, so that parent is always one lane up.
import type { TreeNode } from './tree-layout'

export interface AriaPositions {
  /** 1-based position of each row in its set */
  pos: Uint32Array
  /** size of each row's set */
  size: Uint32Array
}

export function ariaPositions (rows: readonly Pick<TreeNode, 'lane'>[]): AriaPositions {
  const n = rows.length
  const pos = new Uint32Array(n)
  const size = new Uint32Array(n)
  const parentOf = new Int32Array(n)
  // counts per parent row; slot n is for the rows in lane 0 (no parent)
  const count = new Uint32Array(n + 1)
  const open: number[] = [] // rows that may still be parents, lanes increasing
  for (let i = 0; i < n; i++) {
    const lane = (rows[i] as Pick<TreeNode, 'lane'>).lane
    while (open.length > 0 && (rows[open[open.length - 1] as number] as Pick<TreeNode, 'lane'>).lane >= lane) open.pop()
    const parent = open.length > 0 ? open[open.length - 1] as number : n
    parentOf[i] = parent
    const at = (count[parent] as number) + 1
    count[parent] = at
    pos[i] = at
    open.push(i)
  }
  for (let i = 0; i < n; i++) size[i] = count[parentOf[i] as number] as number
  return { pos, size }
}
