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
}

/** A model behind some API. Throws LlmError for every failure a user can act on. */
export interface LlmProvider {
  readonly name: string
  chat (req: ChatRequest): Promise<IrResult>
}

export type LlmErrorCode =
  | 'auth'            // bad or missing API key
  | 'model-not-found'
  | 'unreachable'     // cannot connect (server down, wrong base URL)
  | 'rate-limit'      // 429 after the retries
  | 'server'          // 5xx after the retries
  | 'timeout'
  | 'cancelled'
  | 'bad-request'     // 400: the request itself is wrong (context too long, bad tool schema)
  | 'bad-response'    // the server answered something that is not a valid completion
  | 'scripted'        // the fake provider failing on demand

/** A model call that failed, with a message that says what to do about it. */
export class LlmError extends Error {
  constructor (readonly code: LlmErrorCode, message: string, options?: { cause?: unknown; status?: number }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined)
    this.name = 'LlmError'
    this.status = options?.status
  }

  readonly status: number | undefined

  /** Whether trying again later could help (the agent may retry the step). */
  get transient (): boolean {
    return this.code === 'rate-limit' || this.code === 'server' || this.code === 'timeout' || this.code === 'unreachable'
  }
}
