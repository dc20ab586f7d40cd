// The open conversation on the client: its DAG (from conversation.open, then live `entries`
// events), the shown selection, whether the agent runs, and what is streaming right now
// (assistant tokens, tool output) before the entries that record it arrive.
import type { ApiEvent, ConversationDto } from '../shared/api'
import { ConversationDag } from '../shared/conversation-dag'
import type { Entry } from '../shared/entry'
import { sumUsage } from './transcript'

/** Live tool output kept per call, from the end (the recorded result replaces it). */
export const MAX_LIVE_OUTPUT = 200_000

export interface ConversationSnapshot {
  version: number
  id: string
  title: string
  cwd?: string
  selected?: string
  running: boolean
  usage: { input: number; output: number }
  /** assistant text streamed since the last assistant entry */
  streaming: string
  /** call id → output streamed while the tool runs */
  toolOutput: ReadonlyMap<string, string>
  dag: ConversationDag
}

/**
 * The snapshot minus the streamed text itself: it changes with everything but the growth of
 * a reply being streamed, so the chat does not re-render per token (the reply being written
 * subscribes to `streamingText` on its own).
 */
export type ConversationView = Omit<ConversationSnapshot, 'streaming'> & { hasStreaming: boolean }

export class ConversationStore {
  readonly id: string
  readonly dag: ConversationDag
  private selected: string | undefined
  private running: boolean
  private usage: { input: number; output: number }
  private readonly dtoTitle: string
  private streaming = ''
  private toolOutput = new Map<string, string>()
  private snap: ConversationSnapshot
  private viewSnap: ConversationView
  private readonly listeners = new Set<() => void>()

  constructor (dto: ConversationDto) {
    this.id = dto.id
    this.dag = new ConversationDag(dto.id, dto.entries)
    this.selected = dto.selected
    this.running = dto.running
    this.dtoTitle = dto.title
    // the node's count covers every entry; fall back to ours if it sends none
    this.usage = dto.usage !== undefined ? { ...dto.usage } : sumUsage(dto.entries)
    this.snap = this.makeSnapshot(0)
    this.viewSnap = viewOf(this.snap)
  }

  snapshot = (): ConversationSnapshot => this.snap

  /** The snapshot without the streamed text: a new object only when more than that changed. */
  view = (): ConversationView => this.viewSnap

  /** The assistant text streamed since the last assistant entry. */
  streamingText = (): string => this.streaming

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn)
    return () => { this.listeners.delete(fn) }
  }

  /** Applies a node event; returns whether it concerned this conversation. */
  apply (ev: ApiEvent): boolean {
    if (ev.type === 'peer' || ev.conversation !== this.id) return false
    switch (ev.type) {
      case 'entries':
        this.addEntries(ev.entries)
        return true
      case 'token':
        this.streaming += ev.delta
        this.changed(true)
        return true
      case 'tool-output': {
        const prev = this.toolOutput.get(ev.callId) ?? ''
        let next = prev + ev.chunk
        if (next.length > MAX_LIVE_OUTPUT) next = next.slice(next.length - MAX_LIVE_OUTPUT)
        this.toolOutput = new Map(this.toolOutput).set(ev.callId, next)
        break
      }
      case 'agent':
        this.running = ev.running
        if (!ev.running) this.streaming = ''
        break
    }
    this.changed()
    return true
  }

  /** Adds entries (from events or our own requests); idempotent. */
  addEntries (entries: readonly Entry[]): void {
    let changed = false
    for (const e of entries) {
      if (e.conversation !== this.id || this.dag.has(e.id)) continue
      this.dag.add(e)
      changed = true
      if (e.kind === 'assistant') {
        this.streaming = ''
        if (e.body.usage !== undefined) {
          this.usage = { input: this.usage.input + e.body.usage.input, output: this.usage.output + e.body.usage.output }
        }
      } else if (e.kind === 'tool.result' && this.toolOutput.has(e.body.callId)) {
        const next = new Map(this.toolOutput)
        next.delete(e.body.callId)
        this.toolOutput = next
      } else if (e.kind === 'agent.stopped') {
        this.streaming = ''
      }
    }
    if (changed) this.changed()
  }

  /** Shows the branch through `entry` (the caller tells the node). */
  select (entry: string): void {
    if (this.selected === entry) return
    this.selected = entry
    this.changed()
  }

  /** The entries of the shown branch, root first. */
  branch (): Entry[] {
    return this.dag.branch(this.selected)
  }

  /** `tokenOnly`: only the streamed text grew, which the view leaves out. */
  private changed (tokenOnly = false): void {
    this.snap = this.makeSnapshot(this.snap.version + 1)
    if (!tokenOnly || this.viewSnap.hasStreaming !== (this.streaming !== '')) this.viewSnap = viewOf(this.snap)
    for (const fn of [...this.listeners]) fn()
  }

  private makeSnapshot (version: number): ConversationSnapshot {
    const root = this.dag.root
    const s: ConversationSnapshot = {
      version,
      id: this.id,
      title: this.dag.title() || this.dtoTitle,
      running: this.running,
      usage: this.usage,
      streaming: this.streaming,
      toolOutput: this.toolOutput,
      dag: this.dag
    }
    if (root?.kind === 'conversation' && root.body.cwd !== undefined) s.cwd = root.body.cwd
    if (this.selected !== undefined) s.selected = this.selected
    return s
  }
}

function viewOf (snap: ConversationSnapshot): ConversationView {
  const { streaming, ...rest } = snap
  return { ...rest, hasStreaming: streaming !== '' }
}
