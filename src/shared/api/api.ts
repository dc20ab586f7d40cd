// The one API every client (the UI, the CLI) speaks to a node (DESIGN.md, "Layout": api/).
// Transport-neutral: the same messages go over a WebSocket (browser, `arbor serve`) or an
// Electron MessagePort. Requests get exactly one response; events stream in between.
import type { AgentMove } from '../conversation/agent-moves'
import type { AgentWait } from '../conversation/agent-wait'
import type { ApiParamsIn as P } from './api-params'
import type { Entry } from '../entry/entry'
import type { PeerVersion } from '../protocol-version'

/** A device an agent runs on: this one, or a paired one that announced it (presence). */
export interface AgentPlaceDto {
  device: string
  /** the device's name (the start of its key when it has none) */
  name: string
  self: boolean
}

export interface ConversationSummaryDto {
  id: string
  title: string
  createdAt: number
  updatedAt: number
  size: number
  heads: number
  /** the last entry of each branch (`heads` of them) */
  tips?: string[]
  waiting: number
  /** the directory this device gave it when it began it here (ConversationDto.cwd says where its agent works) */
  cwd?: string
  /** a live device revives its agent when the owner's device dies */
  autoRevival?: boolean
  /** an agent runs for it, on this device or on a connected one (`agents` says where) */
  running: boolean
  /** where its agent runs: this device first; more than one only while two sides heal */
  agents: AgentPlaceDto[]
}

export interface ConversationDto {
  id: string
  title: string
  /** every entry held (a window of them when `window` is set), in an order where parents come before children */
  entries: Entry[]
  /** the entry this device looks at (its branch is shown) */
  selected?: string
  running: boolean
  agents: AgentPlaceDto[]
  usage: { input: number; output: number }
  /** where this device's agent works: the directory this device gave it, else its own workspace (never a path a peer wrote) */
  cwd?: string
  /** entries held whose parents have not arrived (not in `entries`; a lossless export keeps them) */
  waiting?: Entry[]
  /**
   * Asked with `tail` and the conversation is longer: `entries` is a window — the root, every
   * `meta` entry, the shown branch's last entries and the siblings along them — and these
   * are the ids its entries name as parents that it leaves out (ConversationDag's `assumed`),
   * with the shown branch's tip (`selected` may lie before the window: the branch through the
   * tip is the same) and the counts of the whole (`waiting` is then left out). Open without
   * `tail` for all.
   */
  window?: { assumed: string[]; tip: string; entries: number; heads: number }
}

export interface DeviceDto {
  device: string
  name: string
  self: boolean
  connected: boolean
  suspected: boolean
  lastSeen?: number
  /** when this device began to suspect it (ms since the epoch): how long failure detection took */
  suspectedSince?: number
  /** the device whose signed pairing brought it in (its name), when not this one */
  addedBy?: string
  behind: number
  /** the conversations whose agents run on the device (another device's: as it announces them while connected) */
  agents: Array<{ conversation: string; title: string }>
  /** how its Arbor compares with this one's, once it said hello; `advice` says what to do when they differ */
  version?: PeerVersion
}

/** This node's network: the switch, and who it is connected to. */
export interface NetStateDto {
  /** the network switch (net.set): off = no connections at all */
  online: boolean
  /** paired devices connected now */
  peers: number
  /** paired devices other than this one */
  paired: number
  /** the private DHT's bootstrap nodes (host:port); empty: the public HyperDHT */
  bootstrap: string[]
}

/** The agent a message went to when it runs on another device (that device picks the message up). */
export interface RemoteAgentDto {
  device: string
  name: string
  /** false: that device is not connected; the message waits for it (or /resume runs the agent here) */
  reachable: boolean
}

/** An agent incarnation: the device it runs (or ran) on, with its name, and its epoch. */
export interface AgentRefDto {
  device: string
  name: string
  self: boolean
  epoch: number
}

/** Where a conversation's agent runs, as this device sees it (`arbor status` in data). */
export interface AgentStatusDto {
  conversation: string
  /** the agent the conversation belongs to: the highest (epoch, device) started or announced; null: none has run yet */
  owner: AgentRefDto | null
  /** the agent working on this device now, if any */
  runningHere: AgentRefDto | null
  /** agents that connected devices announce working for it */
  announced: AgentRefDto[]
  /** agents still working though a higher one owns the conversation: they stop at their next step (healing) */
  givingWay: AgentRefDto[]
  /** when the owner's device stops responding, a live device revives the agent */
  autoRevival: boolean
  /** the owner is this device, or a device connected now */
  ownerConnected: boolean
  /** the owner's device is not responding (disconnected, or silent past the detection window) */
  ownerDown: boolean
  /** this node's network switch */
  online: boolean
  /** what the agent here waits for before its next step (`text`: the words to show), or null */
  waiting: (AgentWait & { text: string }) | null
  /** where the agent ran and why it moved, oldest first, each with the words `arbor status` prints */
  moves: Array<AgentMove & { text: string }>
  /** the names of the devices the moves and agents name, by key */
  names: Record<string, string>
}

/** The limits this device's agent of a conversation runs under (agent.configure sets them). */
export interface AgentLimitsDto {
  /** model steps a turn may take, and whose number it is: this conversation's, the Settings' or the default */
  maxSteps: number
  maxStepsFrom: 'conversation' | 'settings' | 'default'
  /** the conversation's token budget on this device, if it has one */
  tokenBudget?: number
  /** tokens this device's agent has used in the conversation (every branch), what the budget counts */
  tokensSpent: number
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
  /** the context window set for the model, if one is (else the server's word, a known model's or 8192) */
  contextWindow?: number
  /** model steps per turn before the agent stops and asks to go on */
  maxSteps: number
}

/** Every request: method name → params (inferred from the schemas in api-params.ts) and result. */
export interface ApiMethods {
  hello: { params: P<'hello'>; result: { device: string; name: string; version: string } }
  'conversations.list': { params: P<'conversations.list'>; result: ConversationSummaryDto[] }
  'conversation.open': { params: P<'conversation.open'>; result: ConversationDto }
  'conversation.create': { params: P<'conversation.create'>; result: { id: string } }
  'conversation.select': { params: P<'conversation.select'>; result: Record<string, never> }
  /** posts a user message (a child of `parent`, default: the selected branch's tip) and runs the agent */
  'message.send': { params: P<'message.send'>; result: { entry: Entry; agent?: RemoteAgentDto } }
  /** message.send, except while the agent here is busy: `queued` says how many messages wait for its run to end */
  'message.queue': { params: P<'message.queue'>; result: { entry: Entry; agent?: RemoteAgentDto } | { queued: number } }
  /** adds a user message to the history without asking the agent (a new branch if `parent` is not a tip) */
  'message.post': { params: P<'message.post'>; result: { entry: Entry } }
  /** compacts the shown branch: a `compaction` entry at its tip (the window it was compacted for, in tokens) */
  'conversation.compact': { params: P<'conversation.compact'>; result: { entry: Entry; window: number } }
  /**
   * the context window this device's agent of the conversation works with, and where it comes
   * from (its setting, the server's word, a known model, the default); null while no model is set up here
   */
  'conversation.window': { params: P<'conversation.window'>; result: { tokens: number; source: 'refused' | 'explicit' | 'server' | 'known-model' | 'default' } | null }
  'agent.cancel': { params: P<'agent.cancel'>; result: Record<string, never> }
  /** moves the conversation's agent to this device with a higher epoch (`/resume`); the other stops at its next step */
  'agent.resume': { params: P<'agent.resume'>; result: { device: string; name: string; epoch: number } }
  /**
   * sets how this device's agent of the conversation runs (its model, kept in the history as this
   * device's `llm` setting; the sandbox switch) and says what it would run with: the warnings the
   * bash tool would give, whether the sandbox is on; an error, saying what to set up, if no model is
   */
  'agent.configure': { params: P<'agent.configure'>; result: { conversation: string; warnings: string[]; sandboxed: boolean } }
  'agent.status': { params: P<'agent.status'>; result: AgentStatusDto }
  'agent.limits': { params: P<'agent.limits'>; result: AgentLimitsDto }
  /** turns auto-revival on or off for the conversation (a setting in its history, so every device follows it) */
  'agent.autoRevival': { params: P<'agent.autoRevival'>; result: AgentStatusDto }
  'devices.list': { params: P<'devices.list'>; result: DeviceDto[] }
  'devices.invite': { params: P<'devices.invite'>; result: { code: string; expiresAt: number } }
  'devices.join': { params: P<'devices.join'>; result: { inviter: string } }
  /** stops accepting a paired device; `text` says what happened (here only, or on every device) */
  'devices.forget': { params: P<'devices.forget'>; result: { text: string } }
  'net.get': { params: P<'net.get'>; result: NetStateDto }
  'net.set': { params: P<'net.set'>; result: NetStateDto }
  'settings.get': { params: P<'settings.get'>; result: SettingsDto }
  'settings.set': { params: P<'settings.set'>; result: SettingsDto }
  /** OpenAI-compatible servers answering on this node's machine (Ollama, llama.cpp, LM Studio, vLLM) */
  'settings.detect': { params: P<'settings.detect'>; result: Array<{ name: string; baseURL: string; models: string[] }> }
  /**
   * retries an assistant reply: this device's agent runs again from `from`, the entry the reply
   * answered (now the selection here), so its new reply is a sibling branch of `reply`
   */
  'message.retry': { params: P<'message.retry'>; result: { reply: string; from: string } }
  /** forks the branch root → `entry` into a new conversation (its root records `forkedFrom`); `copied`: entries written */
  'conversation.fork': { params: P<'conversation.fork'>; result: { id: string; copied: number } }
  /**
   * writes a Pi or Claude Code session as a new conversation authored by this device, whole or
   * not at all (its tool calls are history: never run); `problems`: what was skipped or changed, by line
   */
  'conversation.import': { params: P<'conversation.import'>; result: { id: string; format: 'pi' | 'claude-code'; entries: number; problems: string[] } }
  /** names (or, with '', unnames) the branch starting at an entry, for every device: the `meta` entry written */
  'branch.name': { params: P<'branch.name'>; result: { entry: Entry } }
  /** entries matching the words, newest first; `cursor` (when more match) asks for the next page */
  'search.query': { params: P<'search.query'>; result: { hits: SearchHitDto[]; cursor?: string } }
}

export type ApiMethod = keyof ApiMethods

/** An entry found by search.query: where it is, its conversation's title, and an excerpt around the match. */
export interface SearchHitDto {
  conversation: string
  entry: string
  title: string
  ts: number
  snippet: string
  /** where the matching word is in the snippet, [start, end) */
  match: [number, number] | null
}

/**
 * What an agent streams while it works, from this device's agents or a connected device's:
 * `device` runs it, `run` names the agent's run, and streamed text names `parent`, the entry
 * its assistant message will be a child of (show it only on the branch that ends there).
 */
export type AgentStreamEvent =
  | { type: 'token'; conversation: string; device: string; run: string; parent: string; delta: string }
  | { type: 'reasoning'; conversation: string; device: string; run: string; parent: string; delta: string }
  | { type: 'tool-start'; conversation: string; device: string; run: string; callId: string; tool: string; args: unknown }
  | { type: 'tool-output'; conversation: string; device: string; run: string; callId: string; chunk: string }
  | { type: 'tool-end'; conversation: string; device: string; run: string; callId: string; status: 'ok' | 'error' }

/** What the node pushes to every connected UI. */
export type ApiEvent =
  | { type: 'entries'; conversation: string; entries: Entry[] }
  | AgentStreamEvent
  /** where the conversation's agent runs changed (here, or on a connected device) */
  | { type: 'agent'; conversation: string; running: boolean; agents: AgentPlaceDto[] }
  /** 'incompatible': it said hello, but its Arbor and this one do not sync (devices.list says what to do) */
  | { type: 'peer'; device: string; state: 'connected' | 'disconnected' | 'suspected' | 'recovered' | 'incompatible' }
  | { type: 'net'; state: NetStateDto }

/** The wire format (JSON): client → node requests, node → client responses and events. */
export type ClientMessage = { id: number; method: ApiMethod; params: unknown }
export type ServerMessage =
  | { id: number; result: unknown }
  | { id: number; error: { message: string } }
  | { event: ApiEvent }
