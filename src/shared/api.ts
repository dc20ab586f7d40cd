// The one API the UI (and later the CLI) speaks to a node (DESIGN.md, "Layout": api/).
// Transport-neutral: the same messages go over a WebSocket (browser, `arbor serve`) or an
// Electron MessagePort. Requests get exactly one response; events stream in between.
import type { Entry } from './entry'

export interface ConversationSummaryDto {
  id: string
  title: string
  createdAt: number
  updatedAt: number
  size: number
  heads: number
  waiting: number
  running: boolean
}

export interface ConversationDto {
  id: string
  title: string
  /** every entry held, in an order where parents come before children */
  entries: Entry[]
  /** the entry this device looks at (its branch is shown) */
  selected?: string
  running: boolean
  usage: { input: number; output: number }
}

export interface DeviceDto {
  device: string
  name: string
  self: boolean
  connected: boolean
  suspected: boolean
  lastSeen?: number
  behind: number
}

export interface SettingsDto {
  provider: 'openai' | 'fake'
  baseURL?: string
  model?: string
  /** whether a key is stored (the key itself never leaves the node) */
  apiKeySet: boolean
  /** where a key is kept, in words (encrypted by the system keychain, or a private file) */
  apiKeyStorage: string
  defaultCwd?: string
}

/** Every request: method name → params and result. */
export interface ApiMethods {
  hello: { params: Record<string, never>; result: { device: string; name: string; version: string } }
  'conversations.list': { params: { query?: string }; result: ConversationSummaryDto[] }
  'conversation.open': { params: { id: string }; result: ConversationDto }
  'conversation.create': { params: { title?: string; cwd?: string; model?: string; autoRevival?: boolean }; result: { id: string } }
  'conversation.select': { params: { id: string; entry: string }; result: Record<string, never> }
  /** posts a user message (a child of `parent`, default: the selected branch's tip) and runs the agent */
  'message.send': { params: { conversation: string; text: string; parent?: string }; result: { entry: Entry } }
  'agent.cancel': { params: { conversation: string }; result: Record<string, never> }
  'devices.list': { params: Record<string, never>; result: DeviceDto[] }
  'devices.invite': { params: Record<string, never>; result: { code: string; expiresAt: number } }
  'devices.join': { params: { code: string }; result: { inviter: string } }
  'net.set': { params: { on: boolean }; result: Record<string, never> }
  'settings.get': { params: Record<string, never>; result: SettingsDto }
  'settings.set': { params: Partial<Omit<SettingsDto, 'apiKeySet' | 'apiKeyStorage'>> & { apiKey?: string }; result: SettingsDto }
  /** OpenAI-compatible servers answering on this node's machine (Ollama, llama.cpp, LM Studio, vLLM) */
  'settings.detect': { params: Record<string, never>; result: Array<{ name: string; baseURL: string; models: string[] }> }
}

export type ApiMethod = keyof ApiMethods

/** What the node pushes to every connected UI. */
export type ApiEvent =
  | { type: 'entries'; conversation: string; entries: Entry[] }
  | { type: 'token'; conversation: string; delta: string }
  | { type: 'tool-output'; conversation: string; callId: string; chunk: string }
  | { type: 'agent'; conversation: string; running: boolean }
  | { type: 'peer'; device: string; state: 'connected' | 'disconnected' | 'suspected' | 'recovered' }

/** The wire format (JSON): client → node requests, node → client responses and events. */
export type ClientMessage = { id: number; method: ApiMethod; params: unknown }
export type ServerMessage =
  | { id: number; result: unknown }
  | { id: number; error: { message: string } }
  | { event: ApiEvent }
