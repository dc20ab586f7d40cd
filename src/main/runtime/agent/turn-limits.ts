// Limits against runaway turns, decided from the entries alone (no I/O): how many model steps the
// current turn has taken, how many tokens this device's runs of the conversation used, and whether
// the next model step would pass this device's limits. The loop checks them at a step boundary
// only (before a model step), so a stop never falls between a call and its result.
import type { Entry } from '../../../shared/entry/entry'

/** The limits this device's agent of a conversation runs under (its settings, never a peer's). */
export interface TurnLimits {
  /** model steps per turn */
  maxSteps: number
  /** input + output tokens of this device's model steps over the whole conversation (all branches) */
  tokenBudget?: number
}

export const DEFAULT_MAX_STEPS = 50

/** What agent.stopped{limit} names: the limit reached. */
export type LimitKind = 'steps' | 'tokens'

/**
 * The model steps the turn ending the branch has taken: its assistant entries after the latest
 * user message and after this device's latest stop at a step limit (a resume after that stop
 * gets a fresh count, as a new message does). Another device's stop does not reset it: a peer's
 * entry cannot buy this device's agent more steps.
 */
export function stepsInTurn (branch: readonly Entry[], device: string): number {
  let n = 0
  for (let i = branch.length - 1; i >= 0; i--) {
    const e = branch[i] as Entry
    if (e.kind === 'user') break
    if (e.kind === 'agent.stopped' && e.body.limit === 'steps' && e.author.device === device) break
    if (e.kind === 'assistant') n++
  }
  return n
}

/**
 * The tokens (input + output, as the server reported them) of the model steps this device's agents
 * wrote in the conversation, on every branch: what this device paid for. A peer's entries do not
 * count: their numbers are the peer's to say, and would let it spend this device's budget.
 */
export function tokensSpent (entries: Iterable<Entry>, device: string): number {
  let n = 0
  for (const e of entries) {
    if (e.kind === 'assistant' && e.author.device === device && e.body.usage !== undefined) n += e.body.usage.input + e.body.usage.output
  }
  return n
}

/** The limit the next model step would pass, and what the stop says (which limit, how to go on); else undefined. */
export function limitReached (limits: TurnLimits, steps: number, tokens: number): { limit: LimitKind; message: string } | undefined {
  if (limits.tokenBudget !== undefined && tokens >= limits.tokenBudget) {
    return { limit: 'tokens', message: `stopped: the conversation used ${tokens} tokens of its ${limits.tokenBudget}-token budget on this device. To go on, raise the budget (Limits in the conversation's header, or \`arbor chat <conv> --token-budget N\`; 0 for none) and send a message or resume` }
  }
  if (steps >= limits.maxSteps) {
    return { limit: 'steps', message: `stopped after ${steps} model steps in this turn (this device's limit is ${limits.maxSteps}). Send a message, or resume, to go on with a fresh count; the limit is set in Settings, in the conversation's Limits or with \`arbor chat <conv> --max-steps N\`` }
  }
  return undefined
}
