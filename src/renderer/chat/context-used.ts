// How much of the model's context the shown branch fills: what its latest model step was sent
// and answered (the conversation's total over every branch says what it cost, not this).
import type { Entry } from '../../shared/entry/entry'

/**
 * Tokens of the branch's context at its latest model step (after a compaction with no step
 * since: the summary's); undefined before any step reported usage.
 */
export function contextUsed (branch: readonly Entry[]): number | undefined {
  for (let i = branch.length - 1; i >= 0; i--) {
    const e = branch[i] as Entry
    if (e.kind === 'assistant' && e.body.usage !== undefined) return e.body.usage.input + e.body.usage.output
    if (e.kind === 'compaction') return e.body.tokens
  }
  return undefined
}
