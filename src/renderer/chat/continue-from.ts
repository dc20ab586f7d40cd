// "Continue from here": where a message sent from an earlier turn attaches, and how the
// composer names it. Pure: turns (or a tree row) in, points out. Sending is the same
// `message.send` with a `parent` that edit-and-resend uses.
import type { TreeNode } from '../tree/tree-layout'
import { shortLabel } from '../tree/tree-layout'
import type { Turn } from '../transcript/transcript-items'

export interface ContinuePoint {
  /** the entry the next message becomes a child of */
  entry: string
  /** the turn, in a few words (the user message it answers) */
  label: string
}

/**
 * Agent turns of the shown branch that a later user message follows, mapped to where a
 * message continuing from them attaches: the entry just before that later message (its
 * parent), so hidden entries at the end of the turn (agent stopped, notes) stay in the new
 * branch's history. The last turn has none: continuing from it is just sending.
 */
export function continuePoints (turns: readonly Turn[]): Map<string, ContinuePoint> {
  const points = new Map<string, ContinuePoint>()
  let asked = ''
  turns.forEach((turn, k) => {
    const first = turn.items[0]
    if (turn.role === 'user') {
      asked = first?.kind === 'user' ? first.text : ''
      return
    }
    const next = turns[k + 1]?.items[0]
    if (next?.kind !== 'user' || next.parent === undefined) return
    points.set(turn.id, { entry: next.parent, label: asked === '' ? 'the start' : shortLabel(asked) || '(empty message)' })
  })
  return points
}

/** The point for a tree row: after the turn's newest last entry. */
export function continuePointOf (row: Pick<TreeNode, 'last' | 'label'>): ContinuePoint {
  return { entry: row.last, label: row.label }
}
