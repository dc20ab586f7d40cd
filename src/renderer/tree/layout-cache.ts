// The tree's layout of a conversation, kept while the conversation stays as it was: opening the
// tree again (or after the chat laid it out in idle time, warmTreeLayout) costs no layout walk.
import type { ConversationDag } from '../../shared/conversation/conversation-dag'
import { layoutTree, type TreeLayout } from './tree-layout'

interface Kept { size: number; selected: string | undefined; layout: TreeLayout }

// keyed by the DAG object: a conversation opened again is a new DAG, and the old one's entry goes with it
const kept = new WeakMap<ConversationDag, Kept>()

/** layoutTree(dag, selected), laid out again only when the DAG's size (it only grows) or the selection changed. */
export function treeLayoutOf (dag: ConversationDag, size: number, selected: string | undefined): TreeLayout {
  const k = kept.get(dag)
  if (k !== undefined && k.size === size && k.selected === selected) return k.layout
  const layout = layoutTree(dag, selected)
  kept.set(dag, { size, selected, layout })
  return layout
}

/**
 * Lays the tree out when the page is idle (a conversation loaded whole, its selection settled),
 * so a click on Tree draws at once: at the first idle moment for a conversation just opened, else
 * once it has stayed as it is for a second — an agent's steady stream of entries puts it off
 * rather than laying the tree out after each. Cancelled by
 * the returned function. The layout of a 10,000-entry conversation is ~30 ms of script: in idle
 * time, not between the click and the frame.
 */
export function warmTreeLayout (dag: ConversationDag, size: number, selected: string | undefined): () => void {
  const w = globalThis as { requestIdleCallback?: (fn: () => void) => number; cancelIdleCallback?: (h: number) => void }
  const request = w.requestIdleCallback
  const cancelIdle = w.cancelIdleCallback
  if (request === undefined || cancelIdle === undefined) return () => undefined
  let idle: number | undefined
  const settled = setTimeout(() => { idle = request(() => { treeLayoutOf(dag, size, selected) }) }, kept.has(dag) ? WARM_AFTER_MS : 0)
  return () => {
    clearTimeout(settled)
    if (idle !== undefined) cancelIdle(idle)
  }
}

const WARM_AFTER_MS = 1000
