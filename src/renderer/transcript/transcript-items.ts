// The shown branch as things to draw: messages, tool calls joined with their intents and
// results, and notices for lifecycle entries worth seeing. Pure: entries in, items out.
import type { EffectClass, Entry, EntryOf } from '../../shared/entry/entry'
import { forksOf, type BranchNameOf, type ChildrenOf, type Fork } from './branch-nav'
import { noticeFor, type NoticeContext, type NoticeTone } from './notices'

export type ToolStatus = 'pending' | 'running' | 'ok' | 'error' | 'unknown' | 'cancelled' | 'interrupted'

export interface ToolCallView {
  callId: string
  name: string
  args: unknown
  effect?: EffectClass
  status: ToolStatus
  /** the recorded output (from tool.result); live output comes from events */
  output?: string
  truncated?: boolean
}

/** How a running tool stands per the agent's live events (before its result is recorded). */
export type LiveToolStatus = 'running' | 'ok' | 'error'

/** A call the entries show as not yet finished, as the agent's live events tell it (they run ahead of the entries). */
export function withLiveStatus (tool: ToolCallView, live: ReadonlyMap<string, LiveToolStatus>): ToolCallView {
  const status = live.get(tool.callId)
  if (status === undefined || (tool.status !== 'pending' && tool.status !== 'running') || status === tool.status) return tool
  return { ...tool, status }
}

interface ItemBase {
  /** the entry the item is drawn for (its key) */
  id: string
  ts: number
  /** forks at this item's entries (or at hidden entries just before it) */
  forks: Fork[]
}

export type TranscriptItem =
  | ItemBase & { kind: 'user'; text: string; parent: string | undefined }
  | ItemBase & { kind: 'assistant'; text: string; reasoning?: string; tools: ToolCallView[]; usage?: { input: number; output: number }; model?: string }
  | ItemBase & { kind: 'tool'; tool: ToolCallView }
  /** `system`: a lifecycle line (the agent moved, gave way, restarted), drawn compact */
  | ItemBase & { kind: 'notice'; tone: NoticeTone; text: string; detail?: string; system?: true; folded?: FoldedRange }

/** What a compaction stands for on the branch: its entries, and the messages among them in a line each. */
export interface FoldedRange { entries: number; lines: Array<{ id: string; who: 'user' | 'agent'; text: string }>; more: number }

const FOLDED_LINES = 200
const FOLDED_LINE_CHARS = 160

/** The range a compaction at branch[i] folded, read off the branch above it (empty when it is not there). */
export function foldedRange (branch: readonly Entry[], i: number, folded: { from: string; to: string }): FoldedRange {
  let to = -1
  let from = -1
  for (let j = i - 1; j >= 0 && from === -1; j--) {
    const id = (branch[j] as Entry).id
    if (to === -1 && id === folded.to) to = j
    if (to !== -1 && id === folded.from) from = j
  }
  const out: FoldedRange = { entries: 0, lines: [], more: 0 }
  if (from === -1) return out
  out.entries = to - from + 1
  for (let j = from; j <= to; j++) {
    const e = branch[j] as Entry
    if ((e.kind !== 'user' && e.kind !== 'assistant') || e.body.text.trim() === '') continue
    if (out.lines.length === FOLDED_LINES) { out.more++; continue }
    const text = e.body.text.replace(/\s+/g, ' ').trim()
    out.lines.push({ id: e.id, who: e.kind === 'user' ? 'user' : 'agent', text: text.length <= FOLDED_LINE_CHARS ? text : text.slice(0, FOLDED_LINE_CHARS - 1) + '…' })
  }
  return out
}

export interface Turn {
  id: string
  role: 'user' | 'agent'
  items: TranscriptItem[]
}

export interface TranscriptOptions extends NoticeContext {
  /** whether an agent is working on the conversation now (tool calls without results are running) */
  running: boolean
  /** the names given to branches, for the switchers' tooltips */
  branchName?: BranchNameOf
}

/** The items of a branch (root → tip), with the forks along it. */
export function buildTranscript (branch: readonly Entry[], children: ChildrenOf, opts: TranscriptOptions): TranscriptItem[] {
  const forks = forksOf(branch, children, opts.branchName)
  const intents = new Map<string, EntryOf<'tool.intent'>>()
  const results = new Map<string, EntryOf<'tool.result'>>()
  for (const e of branch) {
    if (e.kind === 'tool.intent' && !intents.has(e.body.callId)) intents.set(e.body.callId, e)
    if (e.kind === 'tool.result' && !results.has(e.body.callId)) results.set(e.body.callId, e)
  }
  /** call id → the item that shows it, so its intent's and result's forks land there */
  const callOwner = new Map<string, TranscriptItem>()
  const items: TranscriptItem[] = []
  let pending: Fork[] = []

  const toolView = (callId: string, name: string, args: unknown): ToolCallView => {
    const intent = intents.get(callId)
    const result = results.get(callId)
    const view: ToolCallView = { callId, name, args: intent?.body.args ?? args, status: 'pending' }
    if (intent !== undefined) view.effect = intent.body.effect
    if (result !== undefined) {
      view.status = result.body.status
      view.output = result.body.output
      if (result.body.truncated === true) view.truncated = true
    } else {
      view.status = !opts.running ? 'interrupted' : intent !== undefined ? 'running' : 'pending'
    }
    return view
  }

  branch.forEach((e, i) => {
    const fork = forks.get(i)
    let item: TranscriptItem | undefined
    const base = (): ItemBase => ({ id: e.id, ts: e.ts, forks: [] })
    switch (e.kind) {
      case 'user':
        item = { ...base(), kind: 'user', text: e.body.text, parent: e.parents[0] }
        break
      case 'assistant': {
        const tools = (e.body.toolCalls ?? []).map(c => toolView(c.id, c.name, c.args))
        const a: TranscriptItem = { ...base(), kind: 'assistant', text: e.body.text, tools }
        if (e.body.reasoning !== undefined && e.body.reasoning !== '') a.reasoning = e.body.reasoning
        if (e.body.usage !== undefined) a.usage = { input: e.body.usage.input, output: e.body.usage.output }
        if (e.body.model !== undefined) a.model = e.body.model
        for (const t of tools) if (!callOwner.has(t.callId)) callOwner.set(t.callId, a)
        item = a
        break
      }
      case 'tool.intent':
      case 'tool.result': {
        const owner = callOwner.get(e.body.callId)
        if (owner !== undefined) {
          if (fork !== undefined) owner.forks.push(fork)
          return
        }
        if (e.kind === 'tool.result' && intents.has(e.body.callId)) return // shown with its intent
        const name = e.kind === 'tool.intent' ? e.body.tool : intents.get(e.body.callId)?.body.tool ?? 'tool'
        const t: TranscriptItem = { ...base(), kind: 'tool', tool: toolView(e.body.callId, name, e.kind === 'tool.intent' ? e.body.args : undefined) }
        callOwner.set(e.body.callId, t)
        item = t
        break
      }
      default: {
        const n = noticeFor(e, opts)
        if (n !== undefined) item = { ...base(), kind: 'notice', ...n, ...(e.kind === 'compaction' ? { folded: foldedRange(branch, i, e.body.folded) } : {}) }
      }
    }
    if (item === undefined) {
      if (fork !== undefined) pending.push(fork)
      return
    }
    item.forks.push(...pending)
    pending = []
    if (fork !== undefined) item.forks.push(fork)
    items.push(item)
  })
  // forks at hidden entries at the tip: show them on the last item
  const last = items[items.length - 1]
  if (pending.length > 0 && last !== undefined) last.forks.push(...pending)
  return items
}

/** Groups items into turns: each user message is a turn; what follows it, up to the next one, is the agent's. */
export function groupTurns (items: readonly TranscriptItem[]): Turn[] {
  const turns: Turn[] = []
  let agent: Turn | undefined
  for (const item of items) {
    if (item.kind === 'user') {
      agent = undefined
      turns.push({ id: item.id, role: 'user', items: [item] })
      continue
    }
    if (agent === undefined) {
      agent = { id: item.id, role: 'agent', items: [] }
      turns.push(agent)
    }
    agent.items.push(item)
  }
  return turns
}

/** Token usage summed over assistant entries. */
export function sumUsage (entries: Iterable<Entry>): { input: number; output: number } {
  let input = 0
  let output = 0
  for (const e of entries) {
    if (e.kind === 'assistant' && e.body.usage !== undefined) {
      input += e.body.usage.input
      output += e.body.usage.output
    }
  }
  return { input, output }
}
