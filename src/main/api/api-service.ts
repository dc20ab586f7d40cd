// The one API every client speaks to a node (src/shared/api/api.ts), carried out against an
// ArborNode. Transport-neutral: the WebSocket server (`arbor serve`), the Electron MessagePort
// and the local socket hand requests to call() and forward subscribe()'s events. The handlers
// live by area in handlers/; this file checks the params and dispatches.
import type { z } from 'zod'
import { API_PARAMS, describeParamIssues } from '../../shared/api/api-params'
import type { ApiEvent, ApiMethod, ApiMethods } from '../../shared/api/api'
import { consoleLogger, type Logger } from '../../shared/logger'
import type { LocalServer } from '../llm/local-servers'
import type { ArborNode } from '../node'
import { ARBOR_VERSION } from '../../shared/app-version'
import { AgentLocations } from './agent-locations'
import { agentHandlers } from './handlers/agents'
import { branchHandlers } from './handlers/branches'
import { compactionHandlers } from './handlers/compaction'
import { conversationHandlers } from './handlers/conversations'
import { deviceHandlers } from './handlers/devices'
import { ApiEvents } from './handlers/events'
import { ApiError, conversationResolver, type CallContext, type HandlerContext, type HandlersOf } from './handlers/handler-context'
import { settingsHandlers } from './handlers/settings'
import { retryHandlers } from './handlers/retry'
import { forkHandlers } from './handlers/fork'
import { importHandlers } from './handlers/import'
import { searchHandlers } from './handlers/search'

export { AGENT_BUSY_MESSAGE, ApiError, type CallContext } from './handlers/handler-context'

// Every method has its params' schema (api.ts infers ApiMethods' params from them).
const PARAMS = API_PARAMS satisfies { [M in ApiMethod]: z.ZodType }

export interface ApiServiceOptions {
  /** reported by hello */
  version?: string
  log?: Logger
  /** finds local OpenAI-compatible servers (settings.detect); default: the usual ports on 127.0.0.1 */
  detectLocalServers?: () => Promise<LocalServer[]>
}

/**
 * Every method of ApiMethods against one ArborNode, and the event stream the clients follow:
 * entries as they join a conversation (local or replicated), streamed tokens and tool
 * output of this node's agents, agents starting and ending, peers coming and going.
 * Create one per node: it guards against two sends starting one conversation's agent.
 */
export class ApiService {
  private readonly handlers: HandlersOf<ApiMethod>
  private readonly events: ApiEvents

  constructor (node: ArborNode, opts: ApiServiceOptions = {}) {
    const locations = new AgentLocations({
      self: () => ({ device: node.device, name: node.cluster.name }),
      isRunningHere: c => node.agents.isRunning(c),
      runningHere: () => node.agents.runs().map(a => a.conversation),
      peers: () => node.sync.peers()
    })
    const events = new ApiEvents(node, locations, opts.log ?? consoleLogger('api'))
    this.events = events
    const c: HandlerContext = {
      node,
      locations,
      starting: new Set(),
      resolve: conversationResolver(node),
      netState: () => events.netState(),
      presenceChanged: () => { events.presenceChanged() }
    }
    this.handlers = {
      ...conversationHandlers(c),
      ...agentHandlers(c),
      ...compactionHandlers(c),
      ...deviceHandlers(c, opts.version ?? ARBOR_VERSION),
      ...settingsHandlers(c, opts.detectLocalServers),
      ...retryHandlers(c),
      ...forkHandlers(c),
      ...importHandlers(c),
      ...branchHandlers(c),
      ...searchHandlers(c)
    }
  }

  /** Stops following the node; subscribers hear nothing more. */
  close (): void { this.events.close() }

  /** Calls back on every event; returns the unsubscribe function. */
  subscribe (fn: (ev: ApiEvent) => void): () => void { return this.events.subscribe(fn) }

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
}
