// Pure mapping between the provider-neutral IR (src/shared/llm-ir.ts) and the OpenAI Chat
// Completions wire format, as any OpenAI-compatible server (OpenAI, Ollama, llama.cpp, vLLM,
// LM Studio, OpenRouter, DeepSeek ...) speaks it. No I/O here: the provider does the HTTP.
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam
} from 'openai/resources/chat/completions'
import type { IrFinish, IrMessage, IrResult, IrStreamEvent, IrToolCall, IrToolSpec, IrUsage } from '../../shared/llm-ir'
import { MAX_ARGS_DEPTH } from '../../shared/entry/entry'
import { nestsDeeperThan } from '../../shared/entry/json-depth'

/**
 * What a tool message says before its output when the tool did not simply succeed. OpenAI's
 * tool message has no status field, so the model learns it from the text.
 */
export const TOOL_STATUS_PREFIX: Record<'error' | 'unknown' | 'cancelled', string> = {
  error: '[the tool failed]\n',
  unknown: '[outcome unknown: the tool was interrupted before its result was recorded; it may or may not have taken effect]\n',
  cancelled: '[the tool call was cancelled]\n'
}

/** IR conversation -> Chat Completions messages. Reasoning is not sent back (servers reject or ignore it). */
export function toOpenAIMessages (messages: readonly IrMessage[]): ChatCompletionMessageParam[] {
  return messages.map((m): ChatCompletionMessageParam => {
    switch (m.role) {
      case 'system': return { role: 'system', content: m.text }
      case 'user': return { role: 'user', content: m.text }
      case 'assistant': {
        const calls = m.toolCalls ?? []
        if (calls.length === 0) return { role: 'assistant', content: m.text }
        return {
          role: 'assistant',
          // OpenAI's own shape for a reply that is only tool calls.
          content: m.text === '' ? null : m.text,
          tool_calls: calls.map(c => ({
            id: c.id,
            type: 'function' as const,
            // Always valid JSON, even for `{ _unparsed }`: some servers (llama.cpp's chat
            // templates) parse the arguments of past calls and fail on invalid JSON.
            function: { name: c.name, arguments: stringifyArgs(c.args) }
          }))
        }
      }
      case 'tool': {
        const prefix = m.status === 'ok' ? '' : TOOL_STATUS_PREFIX[m.status]
        return { role: 'tool', tool_call_id: m.callId, content: prefix + m.output }
      }
      default: {
        const never: never = m
        throw new TypeError(`unknown IR message role in ${JSON.stringify(never)}`)
      }
    }
  })
}

export function toOpenAITools (tools: readonly IrToolSpec[]): ChatCompletionFunctionTool[] {
  return tools.map(t => ({
    type: 'function',
    function: { name: t.name, description: t.description, parameters: t.parameters }
  }))
}

function stringifyArgs (args: unknown): string {
  return args === undefined ? '{}' : JSON.stringify(args)
}

/**
 * A tool call's argument text -> its IR args: parsed JSON, `{}` for empty, `{ _unparsed }` when
 * invalid or nesting deeper than an entry can hold them (the model is untrusted: a walk of what it
 * nests must not overflow the stack, and the call fails with a result that says why, tool-args.ts).
 */
export function parseToolArgs (raw: string): unknown {
  if (raw.trim() === '') return {}
  if (nestsDeeperThan(raw, MAX_ARGS_DEPTH)) return { _unparsed: raw }
  try {
    return JSON.parse(raw) as unknown
  } catch {
    return { _unparsed: raw }
  }
}

export function mapFinishReason (reason: string | null | undefined): IrFinish {
  switch (reason) {
    case 'stop': return 'stop'
    case 'tool_calls': case 'function_call': return 'tool_calls'
    case 'length': return 'length'
    case 'content_filter': return 'content_filter'
    default: return 'other'
  }
}

/**
 * Some servers (Ollama among them) answer tool calls with finish_reason "stop"; the IR
 * says tool_calls whenever there are calls to run and the model did not stop for another reason.
 */
function finishWith (reason: string | null | undefined, toolCalls: number): IrFinish {
  const f = mapFinishReason(reason)
  return toolCalls > 0 && (f === 'stop' || f === 'other') ? 'tool_calls' : f
}

interface WireUsage {
  prompt_tokens?: number
  completion_tokens?: number
  completion_tokens_details?: { reasoning_tokens?: number } | null
}

export function mapUsage (u: WireUsage): IrUsage {
  const usage: IrUsage = { input: u.prompt_tokens ?? 0, output: u.completion_tokens ?? 0 }
  const reasoning = u.completion_tokens_details?.reasoning_tokens
  if (typeof reasoning === 'number' && reasoning > 0) usage.reasoning = reasoning
  return usage
}

/** Reasoning text, as DeepSeek/llama.cpp (`reasoning_content`) or Ollama/OpenRouter (`reasoning`) send it. */
function reasoningOf (o: object): string | undefined {
  const r = o as { reasoning_content?: unknown; reasoning?: unknown }
  if (typeof r.reasoning_content === 'string' && r.reasoning_content !== '') return r.reasoning_content
  if (typeof r.reasoning === 'string' && r.reasoning !== '') return r.reasoning
  return undefined
}

export interface AccumulatorOptions {
  /** The requested model, used when the server names none. */
  model: string
  onEvent?: (e: IrStreamEvent) => void
  /** An id for a tool call the server sent without one (some local servers do). */
  fallbackCallId?: (index: number) => string
}

interface PartialCall { id: string; name: string; args: string }

/**
 * Folds streamed `chat.completion.chunk`s into one IrResult, emitting IR stream events as
 * the pieces arrive. Tool calls are keyed by their `index`; the id and name are taken from
 * the first delta that carries them and the argument pieces are concatenated.
 */
export class ChatStreamAccumulator {
  private text = ''
  private reasoning = ''
  private readonly calls = new Map<number, PartialCall>()
  private lastIndex = -1
  private finishReason: string | null = null
  private usage: IrUsage | undefined
  private model: string | undefined
  private chunks = 0

  constructor (private readonly opts: AccumulatorOptions) {}

  /** Whether any chunk arrived, and whether the model said why it stopped. */
  get started (): boolean { return this.chunks > 0 }
  get finished (): boolean { return this.finishReason !== null }

  push (chunk: ChatCompletionChunk): void {
    this.chunks++
    if (chunk.model) this.model = chunk.model
    if (chunk.usage) this.usage = mapUsage(chunk.usage)
    // n = 1: only the first choice matters.
    const choice = chunk.choices?.find(c => c.index === 0) ?? chunk.choices?.[0]
    if (!choice) return
    const delta = choice.delta ?? {}
    const reasoning = reasoningOf(delta)
    if (reasoning !== undefined) {
      this.reasoning += reasoning
      this.emit({ type: 'reasoning', delta: reasoning })
    }
    if (typeof delta.content === 'string' && delta.content !== '') {
      this.text += delta.content
      this.emit({ type: 'text', delta: delta.content })
    }
    for (const tc of delta.tool_calls ?? []) this.pushToolCall(tc)
    if (choice.finish_reason) this.finishReason = choice.finish_reason
  }

  private pushToolCall (tc: NonNullable<ChatCompletionChunk.Choice.Delta['tool_calls']>[number]): void {
    let index: number
    if (typeof tc.index === 'number') index = tc.index
    else if (tc.id && ![...this.calls.values()].some(c => c.id === tc.id)) index = this.calls.size
    else index = Math.max(this.lastIndex, 0)
    this.lastIndex = index
    let call = this.calls.get(index)
    const event: IrStreamEvent & { type: 'tool-call' } = { type: 'tool-call', index }
    if (!call) {
      call = { id: '', name: '', args: '' }
      this.calls.set(index, call)
    }
    if (tc.id && call.id === '') { call.id = tc.id; event.id = tc.id }
    const name = tc.function?.name
    if (name && call.name === '') { call.name = name; event.name = name }
    const args = tc.function?.arguments
    if (args) { call.args += args; event.argsDelta = args }
    if (event.id !== undefined || event.name !== undefined || event.argsDelta !== undefined) this.emit(event)
  }

  private emit (e: IrStreamEvent): void {
    this.opts.onEvent?.(e)
  }

  result (): IrResult {
    const toolCalls: IrToolCall[] = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, c]) => ({
        id: c.id !== '' ? c.id : (this.opts.fallbackCallId?.(index) ?? `call_${index}`),
        name: c.name,
        args: parseToolArgs(c.args)
      }))
    const result: IrResult = {
      text: this.text,
      toolCalls,
      finish: finishWith(this.finishReason, toolCalls.length),
      model: this.model ?? this.opts.model
    }
    if (this.reasoning !== '') result.reasoning = this.reasoning
    if (this.usage) result.usage = this.usage
    return result
  }
}

/** A non-streamed completion -> IrResult (events are emitted once, whole, for the UI). */
export function fromOpenAICompletion (completion: ChatCompletion, opts: AccumulatorOptions): IrResult {
  const choice = completion.choices?.[0]
  const message = choice?.message
  const acc = new ChatStreamAccumulator(opts)
  const delta: Record<string, unknown> = {
    content: message?.content ?? '',
    tool_calls: (message?.tool_calls ?? []).flatMap((tc, index) =>
      tc.type === 'function' ? [{ index, id: tc.id, type: 'function', function: tc.function }] : [])
  }
  const r = message ? reasoningOf(message) : undefined
  if (r !== undefined) delta.reasoning_content = r
  acc.push({
    id: completion.id,
    object: 'chat.completion.chunk',
    created: completion.created,
    model: completion.model,
    choices: [{ index: 0, delta, finish_reason: choice?.finish_reason ?? null }],
    usage: completion.usage ?? null
  } as ChatCompletionChunk)
  return acc.result()
}
