// The one API the UI speaks to a node (src/shared/api.ts), carried out against an
// ArborNode. Transport-neutral: the WebSocket server (`arbor serve`) and the Electron
// MessagePort both hand requests to call() and forward subscribe()'s events.
import path from 'node:path'
import type { z } from 'zod'
import { API_PARAMS, describeParamIssues, type ApiParamsOut } from '../../shared/api-params'
import { agentMoves, moveText } from '../../shared/agent-moves'
import type { AgentRefDto, AgentStatusDto, ApiEvent, ApiMethod, ApiMethods, ConversationDto, ConversationSummaryDto, DeviceDto, NetStateDto, SettingsDto } from '../../shared/api'
import { orderedEntries } from '../../shared/conversation-export'
import type { Entry } from '../../shared/entry'
import { entryByRef } from '../../shared/entry-ref'
import { consoleLogger, type Logger } from '../../shared/logger'
import { readNodeSettings, writeNodeSettings, type NodeSettings } from '../agent-config'
import type { EntriesEvent } from '../history/history-store'
import { setMeta } from '../history/set-meta'
import { detectLocalServers, type LocalServer } from '../llm/local-servers'
import type { ArborNode } from '../node'
import type { AgentEvent } from '../runtime/agent/agent-loop'
import { usageTotal } from '../runtime/agent/step-planner'
import { compareRefs, topRef, workAt, type AgentRef } from '../runtime/placement/placement'
import type { PeerEvent } from '../sync/sync-node'
import { AgentLocations } from './agent-locations'
import { ARBOR_VERSION } from '../app-version'
import { streamEventFromPeer, streamEventOf } from './live-events'

/** What `p` resolves to; its rejection as an ApiError (the node's own words are for the user). */
async function asApiError<T> (p: Promise<T>): Promise<T> {
  try {
    return await p
  } catch (err) {
    throw err instanceof ApiError ? err : new ApiError((err as Error).message)
  }
}

/** An answer to a request the node cannot carry out as asked: its message is for the user. */
export class ApiError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'ApiError'
  }
}

export const AGENT_BUSY_MESSAGE = 'the agent is busy with this conversation; stop it or wait'

// Every method has its params' schema (api.ts infers ApiMethods' params from them).
const PARAMS = API_PARAMS satisfies { [M in ApiMethod]: z.ZodType }

type Params<M extends ApiMethod> = ApiParamsOut<M>
type Handlers = { [M in ApiMethod]: (p: Params<M>, ctx: CallContext) => Promise<ApiMethods[M]['result']> }

export interface CallContext {
  /** aborted when the caller goes away (long requests such as devices.join stop) */
  signal?: AbortSignal
}

export interface ApiServiceOptions {
  /** reported by hello */
  version?: string
  log?: Logger
  /** finds local OpenAI-compatible servers (settings.detect); default: the usual ports on 127.0.0.1 */
  detectLocalServers?: () => Promise<LocalServer[]>
}

/**
 * Every method of ApiMethods against one ArborNode, and the event stream the UI follows:
 * entries as they join a conversation (local or replicated), streamed tokens and tool
 * output of this node's agents, agents starting and ending, peers coming and going.
 * Create one per node: it guards against two sends starting one conversation's agent.
 */
export class ApiService {
  private readonly node: ArborNode
  private readonly version: string
  private readonly log: Logger
  private readonly listeners = new Set<(ev: ApiEvent) => void>()
  private readonly unhook: Array<() => void> = []
  /** conversations a message.send is starting an agent for */
  private readonly starting = new Set<string>()
  private readonly handlers: Handlers
  private readonly locations: AgentLocations
  /** the last network state sent, to send only changes */
  private lastNet = ''

  constructor (node: ArborNode, opts: ApiServiceOptions = {}) {
    this.node = node
    this.version = opts.version ?? ARBOR_VERSION
    this.log = opts.log ?? consoleLogger('api')
    this.locations = new AgentLocations({
      self: () => ({ device: node.device, name: node.cluster.name }),
      isRunningHere: c => node.agents.isRunning(c),
      runningHere: () => node.agents.runs().map(a => a.conversation),
      peers: () => node.sync.peers()
    })
    this.handlers = {
      hello: async () => ({ device: node.device, name: node.cluster.name, version: this.version }),
      'conversations.list': async p => this.list(p.query),
      'conversation.open': async p => this.open(p.id),
      'conversation.create': async p => this.create(p),
      'conversation.select': async p => {
        const id = this.resolve(p.id)
        const dag = await node.history.open(id)
        if (!dag.isJoined(p.entry)) throw new ApiError(`entry ${p.entry.slice(0, 12)} is not in conversation ${id.slice(0, 12)}`)
        node.history.select(id, p.entry)
        return {}
      },
      'message.send': async p => this.send(p.conversation, p.text, p.parent),
      'message.post': async p => this.post(p.conversation, p.text, p.parent),
      'agent.cancel': async p => {
        const id = this.resolve(p.conversation)
        const elsewhere = this.locations.of(id, false)[0]
        if (!node.agents.isRunning(id) && elsewhere !== undefined) throw new ApiError(`the agent of this conversation runs on ${elsewhere.name}; stop it there`)
        await node.agents.cancel(id)
        return {}
      },
      'agent.resume': async p => this.resume(p.conversation),
      'agent.status': async p => this.agentStatus(this.resolve(p.conversation)),
      'agent.autoRevival': async p => this.setAutoRevival(p.conversation, p.on),
      'devices.list': async () => this.devices(),
      'devices.invite': async () => node.invite({}),
      'devices.join': async (p, ctx) => node.join(p.code, ctx.signal ?? new AbortController().signal),
      'devices.forget': async p => ({ text: await asApiError(node.forget(p.device)) }),
      'net.get': async () => this.netState(),
      'net.set': async p => { await node.setOnline(p.on); return this.netState() },
      'settings.get': async () => this.settings(),
      'settings.set': async p => this.setSettings(p),
      'settings.detect': async () => (opts.detectLocalServers ?? detectLocalServers)()
    }
    this.hook()
  }

  /** Stops following the node; subscribers hear nothing more. */
  close (): void {
    for (const u of this.unhook.splice(0)) u()
    this.listeners.clear()
  }

  /** Calls back on every event; returns the unsubscribe function. */
  subscribe (fn: (ev: ApiEvent) => void): () => void {
    this.listeners.add(fn)
    return () => { this.listeners.delete(fn) }
  }

  /**
   * Carries out one request from a transport: the method name and params as received.
   * Rejects with a message for the user on an unknown method, invalid params, or a
   * request that cannot be carried out.
   */
  async call (method: unknown, params: unknown, ctx: CallContext = {}): Promise<unknown> {
    if (typeof method !== 'string' || !Object.hasOwn(PARAMS, method)) throw new ApiError(`unknown method ${JSON.stringify(method)}; the methods are ${Object.keys(PARAMS).join(', ')}`)
    const m = method as ApiMethod
    const parsed = PARAMS[m].safeParse(params ?? {})
    if (!parsed.success) throw new ApiError(`invalid params for ${m}: ${describeParamIssues(parsed.error)}`)
    const handler = this.handlers[m] as (p: unknown, ctx: CallContext) => Promise<unknown>
    return handler(parsed.data, ctx)
  }

  /** call(), typed for callers in this process. */
  request<M extends ApiMethod> (method: M, params: ApiMethods[M]['params'], ctx: CallContext = {}): Promise<ApiMethods[M]['result']> {
    return this.call(method, params, ctx) as Promise<ApiMethods[M]['result']>
  }

  // ------------------------------------------------------------ events

  private hook (): void {
    const { node } = this
    this.unhook.push(node.history.subscribe((ev: EntriesEvent) => {
      if (ev.joined.length > 0) this.emit({ type: 'entries', conversation: ev.conversation, entries: ev.joined })
    }))
    const onAgent = (ev: AgentEvent): void => {
      // entries arrive through the history (tool.intent/result record what tool-start/-end announce)
      const out = streamEventOf(ev, node.device)
      if (out !== null) this.emit(out)
    }
    const onRunning = (ev: { conversation: string; running: boolean }): void => { this.emitAgent(ev.conversation, ev.running) }
    const onPeer = (ev: PeerEvent): void => {
      this.emit({ type: 'peer', device: ev.device, state: ev.state })
      this.presenceChanged()
      this.netChanged()
    }
    const onPresence = (): void => { this.presenceChanged() }
    const onLive = (msg: { device: string; conversation: string; event: Record<string, unknown> }): void => {
      const out = streamEventFromPeer(msg)
      if (out !== null) this.emit(out)
    }
    const onOnline = (): void => { this.netChanged() }
    node.agentEvents.on('event', onAgent)
    node.agentEvents.on('running', onRunning)
    node.sync.on('peer', onPeer)
    node.sync.on('presence', onPresence)
    node.sync.on('live', onLive)
    node.sync.on('online', onOnline)
    this.unhook.push(() => {
      node.agentEvents.off('event', onAgent)
      node.agentEvents.off('running', onRunning)
      node.sync.off('peer', onPeer)
      node.sync.off('presence', onPresence)
      node.sync.off('live', onLive)
      node.sync.off('online', onOnline)
    })
    this.lastNet = JSON.stringify(this.netState())
  }

  /** Where a conversation's agent runs changed here (`here`: whether it runs on this node). */
  private emitAgent (conversation: string, here?: boolean): void {
    const agents = this.locations.of(conversation, here)
    this.emit({ type: 'agent', conversation, running: agents.length > 0, agents })
  }

  /** A peer announced its agents, came, went or fell silent: tell the UIs what moved. */
  private presenceChanged (): void {
    for (const c of this.locations.refresh()) this.emitAgent(c)
  }

  private netChanged (): void {
    const state = this.netState()
    const key = JSON.stringify(state)
    if (key === this.lastNet) return
    this.lastNet = key
    this.emit({ type: 'net', state })
  }

  private netState (): NetStateDto {
    const { sync, device } = this.node
    const peers = sync.peers()
    return {
      online: sync.isOnline,
      peers: peers.filter(p => p.connected).length,
      paired: this.node.cluster.devices().filter(d => d.key !== device).length,
      bootstrap: (sync.bootstrap ?? []).map(b => `${b.host.includes(':') ? `[${b.host}]` : b.host}:${b.port}`)
    }
  }

  private async devices (): Promise<DeviceDto[]> {
    const titles = new Map(this.node.history.list().map(s => [s.id, s.title]))
    this.presenceChanged()
    return (await this.node.devices()).map(d => ({
      ...d,
      agents: this.locations.on(d.device).map(conversation => ({ conversation, title: titles.get(conversation) ?? '' }))
    }))
  }

  private emit (ev: ApiEvent): void {
    for (const fn of this.listeners) {
      try {
        fn(ev)
      } catch (err) {
        // One subscriber's bug must not starve the others (or the node's emitters).
        this.log.error(`an API event subscriber failed: ${(err as Error).stack ?? String(err)}`)
      }
    }
  }

  // ------------------------------------------------------------ conversations

  private resolve (ref: string): string {
    try {
      return this.node.history.resolve(ref)
    } catch (err) {
      throw new ApiError((err as Error).message)
    }
  }

  private list (query: string | undefined): ConversationSummaryDto[] {
    const q = query?.trim().toLowerCase() ?? ''
    return this.node.history.list()
      .filter(s => q === '' || s.title.toLowerCase().includes(q) || s.id.startsWith(q))
      .map(s => {
        const agents = this.locations.of(s.id)
        return { id: s.id, title: s.title, createdAt: s.createdAt, updatedAt: s.updatedAt, size: s.size, heads: s.heads.length, waiting: s.waiting, running: agents.length > 0, agents }
      })
  }

  private async open (ref: string): Promise<ConversationDto> {
    const id = this.resolve(ref)
    const dag = await this.node.history.open(id)
    // as this version understands them: the UI shows an unknown entry as one, not as what it claims to be
    const entries = orderedEntries(dag)
    const usage = usageTotal(entries)
    const selected = this.node.history.selected(id) ?? dag.branch().at(-1)?.id
    const agents = this.locations.of(id)
    return {
      id,
      title: dag.title(),
      entries,
      ...(selected !== undefined ? { selected } : {}),
      running: agents.length > 0,
      agents,
      usage: { input: usage.input, output: usage.output },
      cwd: await this.node.workingDirectory(id)
    }
  }

  private async create (p: Params<'conversation.create'>): Promise<{ id: string }> {
    const settings = await readNodeSettings(this.node.dataDir)
    const cwd = p.cwd ?? settings.defaultCwd
    const root = await this.node.history.createConversation({
      title: p.title ?? '',
      ...(cwd !== undefined ? { cwd: path.resolve(cwd) } : {}),
      ...(p.model !== undefined ? { model: p.model } : {}),
      ...(p.autoRevival !== undefined ? { autoRevival: p.autoRevival } : {})
    })
    this.node.history.select(root.id, root.id)
    return { id: root.id }
  }

  /**
   * Posts a user message for the conversation's agent: it runs here if it belongs here (or to
   * nobody yet); otherwise the device it runs on picks the message up (placement). While an
   * agent runs for the conversation on this node the message is refused.
   */
  private async send (ref: string, text: string, parent: string | undefined): Promise<ApiMethods['message.send']['result']> {
    const { node } = this
    const id = this.resolve(ref)
    if (node.agents.isRunning(id) || this.starting.has(id)) throw new ApiError(AGENT_BUSY_MESSAGE)
    this.starting.add(id)
    try {
      const dag = await node.history.open(id)
      if (dag.root?.kind !== 'conversation') throw new ApiError(`the start of conversation ${id.slice(0, 12)} has not arrived on this device yet`)
      let after: string
      if (parent !== undefined) {
        if (!dag.isJoined(parent)) throw new ApiError(`entry ${parent.slice(0, 12)} is not in conversation ${id.slice(0, 12)}${dag.has(parent) ? ' yet (it waits for its own parent)' : ''}`)
        after = parent
      } else {
        after = (dag.branch(node.history.selected(id)).at(-1) as Entry).id
      }
      // Refuse before anything is written if the agent would run here and no model is set up
      // here (the message would wait for nothing). One that runs elsewhere uses that device's model.
      const st = await node.agentStatus(id)
      const top = topRef([st.owner, ...st.announced])
      if (top === null || top.device === node.device) {
        try {
          await node.configFor(id)
        } catch (err) {
          throw new ApiError((err as Error).message)
        }
      }
      const [entry] = await node.history.append(id, [{ kind: 'user', body: { text }, parents: [after] }])
      const user = entry as Entry
      node.history.select(id, user.id)
      const outcome = await node.posted(id, user)
      return outcome.runs === 'here' ? { entry: user } : { entry: user, agent: { device: outcome.device, name: outcome.name, reachable: outcome.reachable } }
    } finally {
      this.starting.delete(id)
    }
  }

  /** A user message for the history only (`arbor post`): no agent is asked; a new branch when `parent` is not a tip. */
  private async post (ref: string, text: string, parent: string | undefined): Promise<{ entry: Entry }> {
    const { node } = this
    const id = this.resolve(ref)
    const dag = await node.history.open(id)
    if (dag.root?.kind !== 'conversation') throw new ApiError(`the start of conversation ${id.slice(0, 12)} has not arrived on this device yet`)
    let after: Entry
    if (parent !== undefined) {
      after = await asApiError(Promise.resolve().then(() => entryByRef(dag, parent)))
      if (!dag.isJoined(after.id)) throw new ApiError(`entry ${after.id.slice(0, 8)} waits for a parent that has not arrived; continue from another entry`)
    } else {
      after = dag.branch(node.history.selected(id)).at(-1) as Entry
    }
    const [entry] = await node.history.append(id, [{ kind: 'user', body: { text, reply: false }, parents: [after.id] }])
    node.history.select(id, (entry as Entry).id)
    return { entry: entry as Entry }
  }

  // ------------------------------------------------------------ placement

  /**
   * Moves the agent here (`/resume`): it continues from the branch shown here with a higher
   * epoch, and an agent elsewhere stops at its next step. Refused, saying why, when there is
   * nothing to move: it already works here, or it is this device's and has nothing to do.
   */
  private async resume (ref: string): Promise<ApiMethods['agent.resume']['result']> {
    const { node } = this
    const id = this.resolve(ref)
    if (node.agents.isRunning(id)) throw new ApiError('the agent already runs on this device')
    if (this.starting.has(id)) throw new ApiError(AGENT_BUSY_MESSAGE)
    this.starting.add(id)
    try {
      const dag = await node.history.open(id)
      if (dag.root?.kind !== 'conversation') throw new ApiError(`the start of conversation ${id.slice(0, 12)} has not arrived on this device yet`)
      const st = await node.agentStatus(id)
      const top = topRef([st.owner, ...st.announced])
      const tip = dag.branch(node.history.selected(id)).at(-1) as Entry
      // Resuming an idle agent that is already ours would only raise the epoch.
      if ((top === null || top.device === node.device) && workAt(dag, tip) === null) {
        throw new ApiError(top === null
          ? 'no agent has run in this conversation yet: send a message and it starts on this device'
          : `the agent is already on this device (epoch ${top.epoch}): send a message to continue`)
      }
      try {
        await node.configFor(id) // refuse before anything is written if no model is set up here
        const moved = await node.resume(id)
        return { device: moved.device, name: node.cluster.name, epoch: moved.epoch }
      } catch (err) {
        throw err instanceof ApiError ? err : new ApiError((err as Error).message)
      }
    } finally {
      this.starting.delete(id)
    }
  }

  /** Where the conversation's agent runs, how it got there, and whether it is revived. */
  private async agentStatus (id: string): Promise<AgentStatusDto> {
    const { node } = this
    const [st, dag] = await Promise.all([node.agentStatus(id), node.history.open(id)])
    const names: Record<string, string> = {}
    const named = (device: string): string => (names[device] ??= node.deviceName(device))
    const dto = (r: AgentRef): AgentRefDto => ({ device: r.device, name: named(r.device), self: r.device === node.device, epoch: r.epoch })
    const working = [...(st.runningHere !== null ? [st.runningHere] : []), ...st.announced]
    const top = topRef([st.owner, ...working])
    const peer = top === null ? undefined : node.sync.peers().find(p => p.device === top.device)
    const moves = agentMoves(dag.entries()).map(m => ({ ...m, text: moveText(m, named) }))
    return {
      conversation: id,
      owner: top === null ? null : dto(top),
      runningHere: st.runningHere === null ? null : dto(st.runningHere),
      announced: st.announced.map(dto),
      givingWay: top === null ? [] : working.filter(r => compareRefs(r, top) < 0).map(dto),
      autoRevival: st.autoRevival,
      ownerConnected: top !== null && (top.device === node.device || (peer?.connected === true && !peer.suspected)),
      ownerDown: top !== null && top.device !== node.device && node.sync.isDown(top.device),
      online: node.sync.isOnline,
      moves,
      names
    }
  }

  /**
   * Turns auto-revival on or off: a `meta` setting at the tip of the branch shown here. An
   * agent at work appends to that branch, so the setting waits until it is idle.
   */
  private async setAutoRevival (ref: string, on: boolean): Promise<AgentStatusDto> {
    const { node } = this
    const id = this.resolve(ref)
    const dag = await node.history.open(id)
    if (dag.root?.kind !== 'conversation') throw new ApiError(`the start of conversation ${id.slice(0, 12)} has not arrived on this device yet`)
    if ((node.history.summary(id)?.autoRevival === true) !== on) {
      const working = this.locations.of(id)
      if (working.length > 0 || this.starting.has(id)) {
        const where = working.some(a => a.self) || working.length === 0 ? 'here' : `on ${working.map(a => a.name).join(' and ')}`
        throw new ApiError(`the agent is working ${where}: change auto-revival when it has finished its turn (or stop it)`)
      }
      await setMeta(node.history, dag, 'autoRevival', on)
    }
    return this.agentStatus(id)
  }

  // ------------------------------------------------------------ settings

  private async settings (): Promise<SettingsDto> {
    const [s, key] = await Promise.all([readNodeSettings(this.node.dataDir), this.node.secrets.get('apiKey')])
    return {
      provider: s.provider ?? 'openai',
      ...(s.baseURL !== undefined ? { baseURL: s.baseURL } : {}),
      ...(s.model !== undefined ? { model: s.model } : {}),
      apiKeySet: key !== undefined,
      apiKeyStorage: this.node.secrets.description,
      ...(s.defaultCwd !== undefined ? { defaultCwd: s.defaultCwd } : {})
    }
  }

  private async setSettings (p: Params<'settings.set'>): Promise<SettingsDto> {
    const dir = this.node.dataDir
    const next: NodeSettings = { ...await readNodeSettings(dir) }
    if (p.provider !== undefined) next.provider = p.provider
    for (const k of ['baseURL', 'model', 'defaultCwd'] as const) {
      const v = p[k]
      if (v === '') delete next[k]
      else if (v !== undefined) next[k] = k === 'defaultCwd' ? path.resolve(v) : v
    }
    await writeNodeSettings(dir, next)
    if (p.apiKey !== undefined) await this.node.secrets.set('apiKey', p.apiKey)
    return this.settings()
  }
}
