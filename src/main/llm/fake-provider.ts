// A deterministic, scripted model: for demos and offline use from the CLI (`--provider fake
// --script file.json`), and for tests of everything above the provider.
import { readFileSync } from 'node:fs'
import { z } from 'zod'
import type { IrFinish, IrMessage, IrResult, IrStreamEvent, IrToolCall, IrUsage } from '../../shared/llm-ir'
import { MessageDigests, type MessagesDigest } from './message-digest'
import { LlmError, type ChatRequest, type LlmErrorCode, type LlmProvider } from './provider'

const ERROR_CODES = ['auth', 'model-not-found', 'unreachable', 'rate-limit', 'server', 'timeout', 'cancelled', 'bad-request', 'context-length', 'bad-response', 'scripted'] as const satisfies readonly LlmErrorCode[]
// Compile-time check that the list names every code.
const _allCodes: Record<LlmErrorCode, true> = Object.fromEntries(ERROR_CODES.map(c => [c, true])) as Record<(typeof ERROR_CODES)[number], true>
void _allCodes

const turnSchema = z.strictObject({
  /** The answer's text. `{{lastUser}}`, `{{lastToolOutput}}` and `{{model}}` are replaced from the request. */
  text: z.string().optional(),
  toolCalls: z.array(z.strictObject({ name: z.string().min(1), args: z.unknown().optional() })).optional(),
  reasoning: z.string().optional(),
  /** Default: a deterministic estimate (characters / 4). */
  usage: z.strictObject({ input: z.number().int().min(0), output: z.number().int().min(0), reasoning: z.number().int().min(0).optional() }).optional(),
  /** Pause before each streamed chunk: a slow model. */
  delayMsPerChunk: z.number().min(0).optional(),
  /** Characters per streamed text chunk (default 8). */
  chunkSize: z.number().int().min(1).optional(),
  /** Fail with LlmError(code ?? 'scripted', message); after streaming the turn's reasoning and text, if any. */
  fail: z.strictObject({ code: z.enum(ERROR_CODES).optional(), message: z.string() }).optional(),
  /** Default: tool_calls when there are tool calls, else stop. */
  finish: z.enum(['stop', 'tool_calls', 'length', 'content_filter', 'other']).optional()
})

const ruleSchema = z.strictObject({
  /** A regular expression tested against the last user message. */
  match: z.string(),
  flags: z.string().optional(),
  /** One turn, or the turns answering successive model calls after that user message. */
  reply: z.union([turnSchema, z.array(turnSchema).min(1)])
})

const scriptSchema = z.union([
  z.array(turnSchema),
  z.strictObject({
    turns: z.array(turnSchema).optional(),
    rules: z.array(ruleSchema).optional(),
    default: turnSchema.optional(),
    /** The answer to a compaction's summary request; default: a deterministic digest of what it was asked to summarise. */
    summary: turnSchema.optional(),
    /** The context window it reports (default 1,000,000 tokens: a scripted model has no real limit). */
    contextWindow: z.number().int().positive().optional(),
    /** The model name results carry when the request names none. */
    model: z.string().optional()
  })
])

export type FakeTurn = z.infer<typeof turnSchema>
export type FakeRule = z.infer<typeof ruleSchema>
export type FakeScript = z.infer<typeof scriptSchema>

export const ECHO_TURN: FakeTurn = { text: 'You said: {{lastUser}}' }

interface CompiledRule { re: RegExp; replies: FakeTurn[] }

/**
 * Which turn answers a request is a pure function of the request:
 *
 * - `turns[k]`, where k = the number of assistant messages in the conversation (the k-th
 *   model call of this conversation path);
 * - else the first rule whose `match` finds the last user message, `reply[j]` with j = the
 *   number of assistant messages since that user message (a rule can script "call a tool,
 *   then answer");
 * - else `default`, else an echo of the last user message.
 *
 * There is deliberately no internal counter. An agent that crashes and is restarted, or is
 * revived on another device, replays the conversation from its history and asks again; a
 * counter would have moved on (or, in a new process, started over) and given a different
 * answer than the one the history implies. Deciding from the request gives the same answer
 * for the same conversation, in any process, on any device, any number of times. For the
 * same reason tool call ids are hashes of the conversation so far and the call's position.
 */
export class FakeProvider implements LlmProvider {
  readonly name = 'fake'
  private readonly turns: FakeTurn[]
  private readonly rules: CompiledRule[]
  private readonly fallback: FakeTurn
  private readonly summary: FakeTurn | undefined
  private readonly contextWindow: number
  /** the hash and size of a request's messages, extended from the previous request's (the same answers, not O(conversation) a call) */
  private readonly digests = new MessageDigests()
  readonly model: string

  constructor (script: FakeScript = {}) {
    const parsed = scriptSchema.safeParse(script)
    if (!parsed.success) throw new Error(`invalid fake provider script: ${z.prettifyError(parsed.error)}`)
    const s: Exclude<FakeScript, unknown[]> = Array.isArray(parsed.data) ? { turns: parsed.data } : parsed.data
    this.turns = s.turns ?? []
    this.rules = (s.rules ?? []).map((r, i) => {
      let re: RegExp
      try {
        re = new RegExp(r.match, r.flags)
      } catch (e) {
        throw new Error(`invalid fake provider script: rules[${i}].match is not a valid regular expression: ${(e as Error).message}`, { cause: e })
      }
      return { re, replies: Array.isArray(r.reply) ? r.reply : [r.reply] }
    })
    this.fallback = s.default ?? ECHO_TURN
    this.summary = s.summary
    this.contextWindow = s.contextWindow ?? 1_000_000
    this.model = s.model ?? 'fake'
  }

  async reportedContextWindow (): Promise<number> {
    return this.contextWindow
  }

  /** Loads a script (JSON: a list of turns, or { turns?, rules?, default?, model? }). Synchronous: read once at startup. */
  static fromFile (path: string): FakeProvider {
    let text: string
    try {
      text = readFileSync(path, 'utf8')
    } catch (e) {
      throw new Error(`cannot read the fake provider script ${path}: ${(e as Error).message}`, { cause: e })
    }
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (e) {
      throw new Error(`the fake provider script ${path} is not valid JSON: ${(e as Error).message}`, { cause: e })
    }
    try {
      return new FakeProvider(json as FakeScript)
    } catch (e) {
      throw new Error(`${path}: ${(e as Error).message}`, { cause: e })
    }
  }

  /** The turn that answers this conversation (see the class comment). */
  pick (messages: readonly IrMessage[]): FakeTurn {
    // Counted only where a script has turns, and since the last user message only (not the whole conversation per call).
    const fromTurns = this.turns.length === 0 ? undefined : this.turns[messages.filter(m => m.role === 'assistant').length]
    if (fromTurns) return fromTurns
    const lastUserAt = findLastIndex(messages, m => m.role === 'user')
    const lastUser = lastUserAt >= 0 ? (messages[lastUserAt] as { text: string }).text : ''
    let sinceUser = 0
    for (let i = lastUserAt + 1; i < messages.length; i++) if ((messages[i] as IrMessage).role === 'assistant') sinceUser++
    for (const rule of this.rules) {
      rule.re.lastIndex = 0
      if (rule.re.test(lastUser)) {
        const r = rule.replies[sinceUser]
        if (r) return r
        break
      }
    }
    return this.fallback
  }

  async chat (req: ChatRequest): Promise<IrResult> {
    const { signal } = req
    if (signal.aborted) throw cancelled()
    const digest = this.digests.of(req.messages)
    const turn = req.purpose === 'summary' ? this.summary ?? summaryTurn(req.messages, digest) : this.pick(req.messages)
    const model = req.model || this.model
    const text = fill(turn.text ?? '', req.messages, model)
    const position = digest.hash
    const toolCalls: IrToolCall[] = (turn.toolCalls ?? []).map((c, i) => ({
      id: `call_${position}_${i}`,
      name: c.name,
      args: c.args === undefined ? {} : structuredClone(c.args)
    }))
    const emit = (e: IrStreamEvent): void => { req.onEvent?.(e) }
    const delay = turn.delayMsPerChunk ?? 0
    const size = turn.chunkSize ?? 8
    const step = async (): Promise<void> => {
      if (delay > 0) await sleep(delay, signal)
      else if (signal.aborted) throw cancelled()
    }
    for (const piece of pieces(turn.reasoning ?? '', size)) { await step(); emit({ type: 'reasoning', delta: piece }) }
    for (const piece of pieces(text, size)) { await step(); emit({ type: 'text', delta: piece }) }
    if (turn.fail) throw new LlmError(turn.fail.code ?? 'scripted', turn.fail.message)
    for (const [index, call] of toolCalls.entries()) {
      await step()
      emit({ type: 'tool-call', index, id: call.id, name: call.name })
      for (const piece of pieces(JSON.stringify(call.args), size)) { await step(); emit({ type: 'tool-call', index, argsDelta: piece }) }
    }
    if (signal.aborted) throw cancelled()
    const finish: IrFinish = turn.finish ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop')
    const result: IrResult = {
      text,
      toolCalls,
      finish,
      model,
      usage: turn.usage ? { ...turn.usage } : estimateUsage(digest, text, toolCalls, turn.reasoning)
    }
    if (turn.reasoning) result.reasoning = turn.reasoning
    return result
  }
}

/**
 * A summary that is a pure function of what it summarises: its length and hash, and the start
 * of its last message, so a test can tell which summary a model was later shown.
 */
function summaryTurn (messages: readonly IrMessage[], digest: MessagesDigest): FakeTurn {
  const asked = messages.at(-1)
  const text = asked?.role === 'user' ? asked.text : ''
  return { text: `Summary ${digest.hash} of ${text.length} characters: ${text.replace(/\s+/g, ' ').slice(0, 160)}` }
}

function cancelled (): LlmError {
  return new LlmError('cancelled', 'the model call was cancelled')
}

function findLastIndex<T> (xs: readonly T[], p: (x: T) => boolean): number {
  for (let i = xs.length - 1; i >= 0; i--) if (p(xs[i] as T)) return i
  return -1
}

function fill (template: string, messages: readonly IrMessage[], model: string): string {
  if (!template.includes('{{')) return template
  const lastUser = [...messages].reverse().find(m => m.role === 'user')
  const lastTool = [...messages].reverse().find(m => m.role === 'tool')
  return template
    .replaceAll('{{lastUser}}', lastUser?.role === 'user' ? lastUser.text : '')
    .replaceAll('{{lastToolOutput}}', lastTool?.role === 'tool' ? lastTool.output : '')
    .replaceAll('{{model}}', model)
}

/** Cuts on code points, so a chunk never ends inside a surrogate pair. */
function pieces (s: string, size: number): string[] {
  const cps = Array.from(s)
  const out: string[] = []
  for (let i = 0; i < cps.length; i += size) out.push(cps.slice(i, i + size).join(''))
  return out
}

function estimateUsage (messages: MessagesDigest, text: string, calls: IrToolCall[], reasoning?: string): IrUsage {
  const input = messages.chars
  const output = text.length + calls.reduce((n, c) => n + c.name.length + JSON.stringify(c.args).length, 0)
  const usage: IrUsage = { input: Math.ceil(input / 4), output: Math.ceil(output / 4) }
  if (reasoning) usage.reasoning = Math.ceil(reasoning.length / 4)
  return usage
}

/** Resolves after ms; rejects with LlmError 'cancelled' at once when the signal fires. */
function sleep (ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) { reject(cancelled()); return }
    const onAbort = (): void => { clearTimeout(t); reject(cancelled()) }
    const t = setTimeout(() => { signal.removeEventListener('abort', onAbort); resolve() }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}
