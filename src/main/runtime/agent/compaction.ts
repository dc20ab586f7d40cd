// Compaction, decided from the branch alone (no I/O): whether the context a model step would
// send still fits the model's window, and if not, which older part of the branch a summary
// stands for from now on. The entries stay in the DAG; only what the model is shown changes.
import type { Entry, EntryOf } from '../../../shared/entry/entry'
import type { IrMessage } from '../../../shared/llm-ir'

/** What a model step may use of the window. */
export interface ContextBudget {
  /** the model's context window, in tokens */
  window: number
  /** kept free for the reply */
  reserve: number
  /** what every request carries besides the branch (the system prompt, the tool specs), in tokens */
  overhead: number
}

export type CompactionPlan =
  | { kind: 'fits'; tokens: number }
  /**
   * fold `folded` (and the previous summary, if any) into a new summary; `kept` is told as it is.
   * `keep`: the latest user message, when the turn it starts was folded too (it did not fit): one of
   * `folded`, told verbatim after the summary, before `kept`.
   */
  | { kind: 'compact'; tokens: number; from: string; to: string; previous?: EntryOf<'compaction'>; folded: Entry[]; kept: Entry[]; keep?: EntryOf<'user'> }
  /** it does not fit (or a compaction was asked for) but there is nothing older than the latest user message to fold */
  | { kind: 'nothing'; tokens: number; reason: string }

/** ~4 characters a token: the estimate for what no server has counted yet. */
export function textTokens (chars: number): number {
  return Math.ceil(chars / 4)
}

/** Per message, what the wire format adds to its text (role, separators). */
const MESSAGE_TOKENS = 4

/** The estimated tokens of what the model is shown of an entry (toIrMessages' view of it). */
export function entryTokens (e: Entry): number {
  switch (e.kind) {
    case 'user': return MESSAGE_TOKENS + textTokens(e.body.text.length)
    case 'note': return MESSAGE_TOKENS + textTokens(e.body.text.length)
    case 'assistant': return MESSAGE_TOKENS + textTokens(e.body.text.length + (e.body.toolCalls === undefined ? 0 : JSON.stringify(e.body.toolCalls).length))
    case 'tool.result': return MESSAGE_TOKENS + textTokens(e.body.output.length + e.body.callId.length + 16)
    default: return 0
  }
}

/** The summary as the model is told it: right after the system prompt, in place of what it folded. */
export function summaryMessage (c: EntryOf<'compaction'>): IrMessage {
  return { role: 'user', text: `${SUMMARY_HEADER}\n\n${c.body.summary}` }
}

export const SUMMARY_HEADER = '[The earlier part of this conversation was compacted to save context. This is a summary of it; the full history is kept.]'

/** The tokens of the summary message of a compaction. */
export function summaryTokens (c: EntryOf<'compaction'>): number {
  return MESSAGE_TOKENS + textTokens(SUMMARY_HEADER.length + 2 + c.body.summary.length)
}

/**
 * What the model sees of a branch: the latest compaction on it whose folded range ends on the
 * branch before it (one that does not, from a peer, is looked past), the user message it keeps
 * (`keep`: a user entry of the folded range, the latest one, when its turn was folded), and the
 * entries after that range, compaction entries left out. Without one, the whole branch.
 */
export function contextView (branch: readonly Entry[]): { compaction?: EntryOf<'compaction'>; at: number; entries: Entry[] } {
  for (let i = branch.length - 1; i >= 0; i--) {
    const c = branch[i] as Entry
    if (c.kind !== 'compaction') continue
    let to = -1
    for (let j = i - 1; j >= 0; j--) if ((branch[j] as Entry).id === c.body.folded.to) { to = j; break }
    if (to < 0) continue
    const after = branch.slice(to + 1).filter(e => e.kind !== 'compaction')
    const keep = keptMessage(branch, to, c.body.keep)
    return { compaction: c, at: i, entries: keep === undefined ? after : [keep, ...after] }
  }
  return { at: -1, entries: branch.filter(e => e.kind !== 'compaction') }
}

/**
 * The user entry a compaction keeps: the latest user message at or before `to` on the branch, if
 * that is the one it names (one that names another entry, from a peer, keeps nothing). Read back
 * from `to`: the message starts the turn the range ends in.
 */
function keptMessage (branch: readonly Entry[], to: number, keep: string | undefined): EntryOf<'user'> | undefined {
  if (keep === undefined) return undefined
  for (let j = to; j >= 0; j--) {
    const e = branch[j] as Entry
    if (e.kind === 'user') return e.id === keep ? e : undefined
  }
  return undefined
}

/**
 * The tokens a model step on this branch would send: the prompt tokens the server reported for
 * the latest model step since the latest compaction, plus its reply, plus ~chars/4 of what was
 * added since; where no step was counted since, ~chars/4 of the whole view and the overhead.
 */
export function estimateContext (branch: readonly Entry[], overhead: number): number {
  const view = contextView(branch)
  let added = 0
  for (let i = branch.length - 1; i > view.at; i--) {
    const e = branch[i] as Entry
    if (e.kind === 'assistant' && e.body.usage !== undefined) return e.body.usage.input + e.body.usage.output + added
    added += entryTokens(e)
  }
  let total = overhead + (view.compaction === undefined ? 0 : summaryTokens(view.compaction))
  for (const e of view.entries) total += entryTokens(e)
  return total
}

export interface PlanOptions {
  /** compact even if it fits (`/compact`, or the server said the context was too long) */
  force?: boolean
  /** room left for the summary that will replace the folded part */
  summaryTokens?: number
}

/** The room a summary may take: an eighth of the window, at most 2048 tokens. */
export function summaryBudget (window: number): number {
  return Math.max(64, Math.min(2048, Math.floor(window / 8)))
}

/** The room kept for a reply: a quarter of the window, at most 4096 tokens. */
export function replyReserve (window: number): number {
  return Math.max(64, Math.min(4096, Math.floor(window / 4)))
}

/**
 * Whether to compact the branch and where to cut. The kept suffix starts at a user or assistant
 * entry, never between a tool call (its assistant entry) and the call's intent or result; it keeps
 * as much as fits in half of what the window leaves after the reserve, the overhead and the
 * summary, so the conversation can grow again before the next compaction (forced, as little as it
 * may). It is cut before the latest user message unless what follows that message alone does not
 * fit: then inside the turn, after a completed step, the message itself kept verbatim (`keep`).
 * Starts from the latest compaction on the branch: its summary is folded into the next one, and the
 * new range starts where the old one did.
 */
export function planCompaction (branch: readonly Entry[], budget: ContextBudget, opts: PlanOptions = {}): CompactionPlan {
  const tokens = estimateContext(branch, budget.overhead)
  const limit = budget.window - budget.reserve
  if (opts.force !== true && tokens <= limit) return { kind: 'fits', tokens }
  const view = contextView(branch)
  const v = view.entries
  let lastUser = -1
  for (let i = v.length - 1; i >= 0; i--) if ((v[i] as Entry).kind === 'user') { lastUser = i; break }
  const cuts = safeCuts(v)
  // The suffix from each candidate cut, counted from the end.
  const suffix: number[] = new Array<number>(v.length + 1).fill(0)
  for (let i = v.length - 1; i >= 0; i--) suffix[i] = (suffix[i + 1] as number) + entryTokens(v[i] as Entry)
  const room = limit - budget.overhead - (opts.summaryTokens ?? summaryBudget(budget.window))
  // Forced (asked for, or the server refused the context), it folds all it may.
  const keep = opts.force === true ? -1 : Math.floor(room / 2)
  // The view's first entry may be the message the last compaction kept, which sits before the
  // range it folded: a cut must fold something after it, so the new range ends in branch order.
  const first = view.compaction?.body.keep !== undefined && v[0]?.kind === 'user' && v[0].id === view.compaction.body.keep ? 2 : 1
  let cut = -1
  for (let k = first; k <= lastUser; k++) {
    if (!cuts[k]) continue
    if (cut < 0 || (suffix[cut] as number) > keep) cut = k // the latest safe cut, unless an earlier one keeps within `keep`
    if ((suffix[k] as number) <= keep) break
  }
  // The latest message and what followed it alone do not fit: cut inside its turn, after a
  // completed step (a cut just after the message would fold nothing of the turn).
  let inTurn = false
  if (lastUser >= 0 && (suffix[lastUser] as number) > room) {
    const message = entryTokens(v[lastUser] as Entry)
    let within = -1
    for (let k = Math.max(first, lastUser + 2); k < v.length; k++) {
      if (!cuts[k]) continue
      if (within < 0 || message + (suffix[within] as number) > keep) within = k
      if (message + (suffix[k] as number) <= keep) break
    }
    if (within >= 0) { cut = within; inTurn = true }
  }
  // Nothing new to fold (only a summary and the latest turn): a new summary would say the same.
  if (cut < 0) return { kind: 'nothing', tokens, reason: lastUser < 0 ? 'there is no message to keep yet' : 'there is nothing before the latest message to compact' }
  const folded = v.slice(0, cut)
  if (view.compaction === undefined && !folded.some(e => entryTokens(e) > 0)) return { kind: 'nothing', tokens, reason: 'there is nothing before the latest message to compact' }
  const from = view.compaction?.body.folded.from ?? (folded[0] as Entry).id
  const plan: CompactionPlan = { kind: 'compact', tokens, from, to: (folded.at(-1) as Entry).id, folded, kept: v.slice(cut) }
  if (view.compaction !== undefined) plan.previous = view.compaction
  if (inTurn) plan.keep = v[lastUser] as EntryOf<'user'>
  return plan
}

/**
 * cuts[k]: whether the view may be cut before entry k — it is a user or assistant entry, and no
 * tool call of an assistant entry before k has its intent or result at k or after.
 */
export function safeCuts (v: readonly Entry[]): boolean[] {
  const callAt = new Map<string, number>()
  const crossing: number[] = new Array<number>(v.length + 1).fill(0) // +1 from a call's entry + 1, -1 after its last step
  const lastStep = new Map<string, number>()
  v.forEach((e, i) => {
    if (e.kind === 'assistant') for (const c of e.body.toolCalls ?? []) callAt.set(c.id, i)
    else if (e.kind === 'tool.intent' || e.kind === 'tool.result') {
      if (callAt.has(e.body.callId)) lastStep.set(e.body.callId, i)
    }
  })
  for (const [id, end] of lastStep) {
    const start = callAt.get(id) as number
    crossing[start + 1] = (crossing[start + 1] as number) + 1
    crossing[end + 1] = (crossing[end + 1] as number) - 1
  }
  const out: boolean[] = []
  let open = 0
  v.forEach((e, k) => {
    open += crossing[k] as number
    out.push(open === 0 && (e.kind === 'user' || e.kind === 'assistant'))
  })
  return out
}

export const SUMMARISER_PROMPT = 'You summarise conversations between a user and an AI agent that uses tools, so that the agent can continue the work from the summary alone. Write what the user asked for and decided, what was done (files, commands, results that matter), what is still open, and anything the agent must keep in mind. Be concise and factual; do not address the user.'

/** One line of the transcript a summariser is shown: at most this many characters. */
const LINE_CHARS = 4000

/**
 * The request that writes the summary of a plan: the summariser's instructions, then one user
 * message holding the previous summary and the folded entries as a transcript (one message, so
 * no call can be left without its result), the oldest lines left out when it would not fit in
 * `room` tokens.
 */
export function summaryRequest (plan: Extract<CompactionPlan, { kind: 'compact' }>, room: number, focus?: string): IrMessage[] {
  const lines: string[] = []
  for (const e of plan.folded) {
    const line = transcriptLine(e)
    if (line !== undefined) lines.push(line.length > LINE_CHARS ? line.slice(0, LINE_CHARS) + ' […]' : line)
  }
  const head = plan.previous === undefined ? '' : `Summary of what came before:\n${plan.previous.body.summary}\n\n`
  const turn = plan.keep === undefined ? '' : ' The user\'s latest message is told to the agent again, as it is, after your summary: say what has been done for it so far, what was found and what is left.'
  const ask = `Summarise the conversation above in at most a few hundred words${focus !== undefined && focus.trim() !== '' ? `, focusing on: ${focus.trim()}` : ''}.${turn}`
  let left = room * 4 - SUMMARISER_PROMPT.length - head.length - ask.length - 200
  const kept: string[] = []
  for (let i = lines.length - 1; i >= 0 && left > 0; i--) {
    const line = lines[i] as string
    if (line.length + 1 > left) break
    kept.unshift(line)
    left -= line.length + 1
  }
  const omitted = lines.length - kept.length
  const body = (omitted > 0 ? `[${omitted} earlier messages left out]\n` : '') + kept.join('\n')
  return [
    { role: 'system', text: SUMMARISER_PROMPT },
    { role: 'user', text: `${head}The conversation to summarise:\n${body}\n\n${ask}` }
  ]
}

function transcriptLine (e: Entry): string | undefined {
  switch (e.kind) {
    case 'user': return `User: ${e.body.text}`
    case 'assistant': {
      const calls = (e.body.toolCalls ?? []).map(c => `${c.name}(${JSON.stringify(c.args)})`)
      return `Assistant: ${e.body.text}${calls.length > 0 ? ` [calls ${calls.join(', ')}]` : ''}`
    }
    case 'tool.result': return `Tool result (${e.body.status}): ${e.body.output}`
    case 'note': return `Note: ${e.body.text}`
    default: return undefined
  }
}
