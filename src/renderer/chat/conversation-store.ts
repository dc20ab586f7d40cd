// The open conversation on the client: its DAG (from conversation.open, then live `entries`
// events), the shown selection, whether the agent runs, and what is streaming right now
// (assistant tokens, tool output) before the entries that record it arrive.
import type { AgentPlaceDto, ApiEvent, ConversationDto } from '../../shared/api/api'
import { ConversationDag } from '../../shared/conversation/conversation-dag'
import type { Entry } from '../../shared/entry/entry'
import { sumUsage, type LiveToolStatus } from '../transcript/transcript-items'

/** Live tool output kept per call, from the end (the recorded result replaces it). */
export const MAX_LIVE_OUTPUT = 200_000

export interface ConversationSnapshot {
  version: number
  id: string
  title: string
  cwd?: string
  selected?: string
  running: boolean
  /** where the agent runs (this device, or a connected one) */
  agents: readonly AgentPlaceDto[]
  usage: { input: number; output: number }
  /** assistant text streamed since the last assistant entry */
  streaming: string
  /** reasoning streamed with it (a model that thinks aloud) */
  thinking: string
  /** the entry the streamed message will be a child of: it belongs on the branch ending there */
  streamParent?: string
  /** call id → output streamed while the tool runs */
  toolOutput: ReadonlyMap<string, string>
  /** call id → how a running tool stands per the agent's live events, until its result is recorded */
  toolStatus: ReadonlyMap<string, LiveToolStatus>
  dag: ConversationDag
  /** only a window is held (the end of the shown branch): the whole conversation's counts, until loadAll brought the rest */
  window?: { entries: number; heads: number }
}

/**
 * The snapshot minus the streamed text itself: it changes with everything but the growth of
 * a reply being streamed, so the chat does not re-render per token (the reply being written
 * subscribes to `streamingText` on its own).
 */
export type ConversationView = Omit<ConversationSnapshot, 'streaming'> & { hasStreaming: boolean }

/** Entries of the shown branch's end a conversation opens with (a hundred turns or so: screens of them). */
export const OPEN_TAIL = 600

/** A windowed conversation up to this size is loaded whole in the background once drawn; a larger one when the view needs it. */
export const BACKGROUND_LOAD_MAX = 20_000

export interface ConversationStoreOptions {
  /** the whole conversation (conversation.open without `tail`), for a store opened with a window */
  loadAll?: () => Promise<ConversationDto>
}

export class ConversationStore {
  readonly id: string
  readonly dag: ConversationDag
  private selected: string | undefined
  private running: boolean
  private usage: { input: number; output: number }
  private readonly dtoTitle: string
  /** where this device's agent works, as the node says (not the root's directory: a peer may have written it) */
  private readonly cwd: string | undefined
  private streaming = ''
  private thinking = ''
  /** the run and parent entry the streamed text belongs to */
  private stream: { run: string; parent: string } | undefined
  private agents: readonly AgentPlaceDto[]
  private toolOutput = new Map<string, string>()
  private toolStatus = new Map<string, LiveToolStatus>()
  private snap: ConversationSnapshot
  private viewSnap: ConversationView
  private readonly listeners = new Set<() => void>()
  /** `picked`: an entry was selected here since (until then the node's selection may lie before the window) */
  private window: { entries: number; heads: number; headsHeld: number; tip: string; picked: boolean } | undefined
  private readonly fetchAll: (() => Promise<ConversationDto>) | undefined
  private loading: Promise<void> | undefined

  constructor (dto: ConversationDto, opts: ConversationStoreOptions = {}) {
    this.id = dto.id
    this.dag = new ConversationDag(dto.id, dto.entries, dto.window !== undefined ? { assumed: dto.window.assumed } : {})
    this.fetchAll = opts.loadAll
    if (dto.window !== undefined) this.window = { entries: dto.window.entries, heads: dto.window.heads, headsHeld: this.dag.headIds().length, tip: dto.window.tip, picked: false }
    this.selected = dto.selected
    this.running = dto.running
    this.agents = dto.agents ?? []
    this.dtoTitle = dto.title
    this.cwd = dto.cwd
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
    if (!('conversation' in ev) || ev.conversation !== this.id) return false
    switch (ev.type) {
      case 'entries':
        this.addEntries(ev.entries)
        return true
      case 'token':
      case 'reasoning': {
        // A late piece of a message already recorded would linger: drop it.
        if (this.dag.children(ev.parent).some(c => c.kind === 'assistant')) return true
        let fresh = false
        if (this.stream?.run !== ev.run || this.stream.parent !== ev.parent) {
          this.stream = { run: ev.run, parent: ev.parent }
          this.streaming = ''
          this.thinking = ''
          fresh = true
        }
        if (ev.type === 'reasoning') { this.thinking += ev.delta; break }
        this.streaming += ev.delta
        // Only the streamed text grew (the view leaves it out): the chat need not re-render.
        if (fresh) break
        this.changed(true)
        return true
      }
      case 'tool-start':
      case 'tool-end':
        if (this.toolStatus.get(ev.callId) === (ev.type === 'tool-start' ? 'running' : ev.status)) return true
        this.toolStatus = new Map(this.toolStatus).set(ev.callId, ev.type === 'tool-start' ? 'running' : ev.status)
        break
      case 'tool-output': {
        const prev = this.toolOutput.get(ev.callId) ?? ''
        let next = prev + ev.chunk
        if (next.length > MAX_LIVE_OUTPUT) next = next.slice(next.length - MAX_LIVE_OUTPUT)
        this.toolOutput = new Map(this.toolOutput).set(ev.callId, next)
        break
      }
      case 'agent':
        this.running = ev.running
        this.agents = ev.agents ?? []
        if (!ev.running) this.endStream()
        break
    }
    this.changed()
    return true
  }

  /** Adds entries (from events or our own requests); idempotent. */
  addEntries (entries: readonly Entry[]): void {
    let changed = false
    for (const e of entries) if (this.addOne(e)) changed = true
    if (changed) this.changed()
  }

  /** Adds one entry and what it ends (a stream, live tool output); whether it was new. */
  private addOne (e: Entry): boolean {
    if (e.conversation !== this.id || this.dag.has(e.id)) return false
    this.dag.add(e)
    if (e.kind === 'assistant') {
      if (this.streamEndsAt(e)) this.endStream()
      if (e.body.usage !== undefined) {
        this.usage = { input: this.usage.input + e.body.usage.input, output: this.usage.output + e.body.usage.output }
      }
    } else if (e.kind === 'tool.result' && this.toolOutput.has(e.body.callId)) {
      const next = new Map(this.toolOutput)
      next.delete(e.body.callId)
      this.toolOutput = next
    } else if (e.kind === 'agent.stopped') {
      if (this.streamEndsAt(e)) this.endStream()
    }
    if (e.kind === 'tool.result' && this.toolStatus.has(e.body.callId)) {
      const next = new Map(this.toolStatus)
      next.delete(e.body.callId)
      this.toolStatus = next
    }
    return true
  }

  /** Whether `e` records the end of the streamed message (it hangs where the stream would). */
  private streamEndsAt (e: Entry): boolean {
    return this.stream === undefined || e.parents[0] === this.stream.parent
  }

  private endStream (): void {
    this.streaming = ''
    this.thinking = ''
    this.stream = undefined
  }

  /** Shows the branch through `entry` (the caller tells the node); one outside the window loads the rest. */
  select (entry: string): void {
    if (this.window !== undefined) {
      if (!this.branch().some(e => e.id === entry)) this.loadAll().catch(() => undefined) // the view's own call reports a failure
      this.window.picked = true
    }
    if (this.selected === entry) return
    this.selected = entry
    this.changed()
  }

  /** Whether only a window is held, and it is small enough to load whole unasked. */
  get loadsInBackground (): boolean {
    return this.window !== undefined && this.window.entries <= BACKGROUND_LOAD_MAX
  }

  /** Heads of the whole conversation (a window holds the root and siblings as if they were). */
  headCount (): number {
    const held = this.dag.headIds().length
    return this.window === undefined ? held : this.window.heads + held - this.window.headsHeld
  }

  /**
   * Brings the whole conversation into a store opened with a window (once; entries that
   * arrived as events meanwhile are kept: adding is idempotent). Without a window, nothing.
   */
  loadAll (): Promise<void> {
    if (this.window === undefined) return Promise.resolve()
    const fetchAll = this.fetchAll
    if (fetchAll === undefined) return Promise.reject(new Error('this conversation was opened as a window, with no way to load the rest'))
    this.loading ??= fetchAll().then(dto => this.complete(dto), err => { this.loading = undefined; throw err })
    return this.loading
  }

  /** Adds the whole conversation's entries (conversation.open without `tail`) to the window. */
  complete (dto: ConversationDto): void {
    if (this.window === undefined || dto.id !== this.id) return
    for (const e of dto.entries) this.addOne(e)
    for (const e of dto.waiting ?? []) this.addOne(e)
    this.dag.forgetAssumed()
    this.window = undefined
    if (dto.usage !== undefined) this.usage = { ...dto.usage }
    this.changed()
  }

  /** The entries of the shown branch, root first. */
  branch (): Entry[] {
    return this.dag.branch(this.shownSelection())
  }

  /** The selection to draw: in a window, the tip of the branch the node showed, until one is picked here and held. */
  private shownSelection (): string | undefined {
    const w = this.window
    return w !== undefined && (!w.picked || this.selected === undefined || !this.dag.has(this.selected)) ? w.tip : this.selected
  }

  /** `tokenOnly`: only the streamed text grew, which the view leaves out. */
  private changed (tokenOnly = false): void {
    this.snap = this.makeSnapshot(this.snap.version + 1)
    if (!tokenOnly || this.viewSnap.hasStreaming !== (this.streaming !== '')) this.viewSnap = viewOf(this.snap)
    for (const fn of [...this.listeners]) fn()
  }

  private makeSnapshot (version: number): ConversationSnapshot {
    const s: ConversationSnapshot = {
      version,
      id: this.id,
      title: this.dag.title() || this.dtoTitle,
      running: this.running,
      agents: this.agents,
      usage: this.usage,
      streaming: this.streaming,
      thinking: this.thinking,
      toolOutput: this.toolOutput,
      toolStatus: this.toolStatus,
      dag: this.dag
    }
    if (this.stream !== undefined) s.streamParent = this.stream.parent
    if (this.window !== undefined) s.window = { entries: this.window.entries, heads: this.window.heads }
    if (this.cwd !== undefined) s.cwd = this.cwd
    const selected = this.shownSelection()
    if (selected !== undefined) s.selected = selected
    return s
  }
}

function viewOf (snap: ConversationSnapshot): ConversationView {
  const { streaming, ...rest } = snap
  return { ...rest, hasStreaming: streaming !== '' }
}
