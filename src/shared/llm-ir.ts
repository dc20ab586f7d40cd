// The provider-neutral message IR (after Pi's ai package): entries store it, providers map
// to and from it. Nothing here knows any provider's wire format.

/** A JSON Schema object, as tools declare their parameters. */
export type JsonSchema = { [key: string]: unknown }

export interface IrToolCall {
  id: string
  name: string
  /** Parsed JSON arguments; `{ _unparsed: string }` when the model sent invalid JSON, or JSON nesting deeper than an entry holds. */
  args: unknown
}

export interface IrUsage {
  input: number
  output: number
  reasoning?: number
}

export type IrMessage =
  | { role: 'system'; text: string }
  | { role: 'user'; text: string }
  | { role: 'assistant'; text: string; toolCalls?: IrToolCall[]; reasoning?: string }
  | { role: 'tool'; callId: string; name: string; output: string; status: 'ok' | 'error' | 'unknown' | 'cancelled' }

export interface IrToolSpec {
  name: string
  description: string
  parameters: JsonSchema
}

/** Why the model stopped. */
export type IrFinish = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'other'

/** What a model call produced. */
export interface IrResult {
  text: string
  toolCalls: IrToolCall[]
  reasoning?: string
  usage?: IrUsage
  finish: IrFinish
  model: string
}

/** Streamed as the model answers, for live display. */
export type IrStreamEvent =
  | { type: 'text'; delta: string }
  | { type: 'reasoning'; delta: string }
  | { type: 'tool-call'; index: number; id?: string; name?: string; argsDelta?: string }
