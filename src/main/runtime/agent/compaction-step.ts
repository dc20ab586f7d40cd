// The model step that writes a compaction: plans it (compaction.ts), asks the model for the
// summary and returns the entry's body. The agent loop appends it to its journal before a
// model step; `conversation.compact` appends it at the branch a person shows.
import type { BodyOf, Entry } from '../../../shared/entry/entry'
import type { IrToolSpec } from '../../../shared/llm-ir'
import { LlmError, type LlmProvider } from '../../llm/provider'
import { planCompaction, replyReserve, summaryBudget, summaryRequest, textTokens, type CompactionPlan } from './compaction'

export interface SummariseOptions {
  provider: LlmProvider
  model: string
  /** the agent's system prompt and tool specs: what every request carries besides the branch */
  system: string
  tools: readonly IrToolSpec[]
  /** root → tip */
  branch: readonly Entry[]
  window: number
  /** compact even if it fits */
  force?: boolean
  focus?: string
  signal: AbortSignal
}

export type Summarised =
  | { kind: 'compaction'; body: BodyOf<'compaction'> }
  | Exclude<CompactionPlan, { kind: 'compact' }>

/** The tokens every request of an agent carries besides the branch. */
export function requestOverhead (system: string, tools: readonly IrToolSpec[]): number {
  return textTokens(system.length + JSON.stringify(tools).length)
}

/**
 * The compaction a branch needs (or, forced, allows): the summary of its older part, asked of
 * the model, as the body of a `compaction` entry; else why there is none. A model call only:
 * nothing changes until the caller appends it, so a crash before that simply asks again.
 */
export async function summarise (o: SummariseOptions): Promise<Summarised> {
  const budget = { window: o.window, reserve: replyReserve(o.window), overhead: requestOverhead(o.system, o.tools) }
  const plan = planCompaction(o.branch, budget, o.force === true ? { force: true } : {})
  if (plan.kind !== 'compact') return plan
  const room = summaryBudget(o.window)
  const focus = o.focus?.trim()
  const result = await o.provider.chat({
    model: o.model,
    messages: summaryRequest(plan, o.window - room, focus),
    tools: [],
    signal: o.signal,
    maxTokens: room,
    purpose: 'summary'
  })
  const text = result.text.trim()
  if (text === '') throw new LlmError('bad-response', `model "${result.model}" answered the request to summarise the conversation with nothing`)
  // A summary longer than asked for would eat the room the kept part was given.
  const summary = text.length > room * 4 ? text.slice(0, room * 4) + ' […]' : text
  const body: BodyOf<'compaction'> = { summary, folded: { from: plan.from, to: plan.to }, model: result.model, tokens: plan.tokens }
  if (focus !== undefined && focus !== '') body.focus = focus
  if (plan.keep !== undefined) body.keep = plan.keep.id
  return { kind: 'compaction', body }
}
