import type { IrMessage, IrResult, IrStreamEvent, IrToolSpec } from '../../shared/llm-ir'

export interface ChatRequest {
  model: string
  messages: IrMessage[]
  tools: IrToolSpec[]
  signal: AbortSignal
  /** streamed deltas, for the UI; the result is complete without them */
  onEvent?: (e: IrStreamEvent) => void
  temperature?: number
  maxTokens?: number
  /** 'summary': a compaction's summariser request (the fake provider answers it with its summary turn) */
  purpose?: 'summary'
}

/** A model behind some API. Throws LlmError for every failure a user can act on. */
export interface LlmProvider {
  readonly name: string
  chat (req: ChatRequest): Promise<IrResult>
  /** The context window the server reports for a model, if it says (llm/context-window.ts asks). */
  reportedContextWindow? (model: string, signal: AbortSignal): Promise<number | undefined>
}

export type LlmErrorCode =
  | 'auth'            // bad or missing API key
  | 'model-not-found'
  | 'unreachable'     // cannot connect (server down, wrong base URL)
  | 'rate-limit'      // 429 after the retries
  | 'server'          // 5xx after the retries
  | 'timeout'
  | 'cancelled'
  | 'bad-request'     // 400: the request itself is wrong (bad tool schema)
  | 'context-length'  // the request does not fit the model's context window (LlmError.window: the size, if the server said)
  | 'bad-response'    // the server answered something that is not a valid completion
  | 'scripted'        // the fake provider failing on demand

/** A model call that failed, with a message that says what to do about it. */
export class LlmError extends Error {
  constructor (readonly code: LlmErrorCode, message: string, options?: { cause?: unknown; status?: number; window?: number }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined)
    this.name = 'LlmError'
    this.status = options?.status
    this.window = options?.window
  }

  readonly status: number | undefined
  /** of a 'context-length' error: the window the server named, if it did */
  readonly window: number | undefined

  /** Whether trying again later could help (the agent may retry the step). */
  get transient (): boolean {
    return this.code === 'rate-limit' || this.code === 'server' || this.code === 'timeout' || this.code === 'unreachable'
  }
}

/**
 * Whether a refused request says it is longer than the model's context: OpenAI's
 * `context_length_exceeded`, and the 400 wording of vLLM ("maximum context length"), llama.cpp
 * ("exceeds the available context size", `exceed_context_size_error`) and Ollama.
 */
export function isContextOverflow (status: number, code: string | null | undefined, type: string | null | undefined, message: string): boolean {
  if (code === 'context_length_exceeded' || type === 'exceed_context_size_error') return true
  if (status !== 400 && status !== 413 && status !== 422) return false
  return /maximum context length|context length (?:exceeded|is exceeded)|exceeds? the (?:available )?context (?:size|length|window)|input length exceeds|prompt is too long|too many tokens|context window/i.test(message)
}

/** The window a context-overflow message names ("maximum context length is 8192 tokens", "n_ctx: 4096"), if it does. */
export function windowInMessage (message: string): number | undefined {
  const m = /maximum context length is (\d+)/i.exec(message) ?? /n_ctx\D{0,4}(\d+)/i.exec(message) ?? /context (?:length|size|window) of (\d+)/i.exec(message)
  const n = m === null ? NaN : Number(m[1])
  return Number.isSafeInteger(n) && n > 0 ? n : undefined
}
