// agent.cancel, agent.resume, agent.status, agent.autoRevival, agent.configure: where a conversation's agent runs and with what.
import path from 'node:path'
import type { AgentLimitsDto, AgentRefDto, AgentStatusDto, ApiMethods } from '../../../shared/api/api'
import type { ApiParamsOut } from '../../../shared/api/api-params'
import { agentMoves, moveText } from '../../../shared/conversation/agent-moves'
import { waitText } from '../../../shared/conversation/agent-wait'
import type { Entry } from '../../../shared/entry/entry'
import { setMeta } from '../../history/set-meta'
import type { HistoryStore } from '../../history/history-store'
import type { ConversationDag } from '../../../shared/conversation/conversation-dag'
import { conversationSettings, readNodeSettings, turnLimits, type LimitsSetting, type LlmSetting } from '../../runtime/agent/agent-config'
import { tokensSpent } from '../../runtime/agent/turn-limits'
import { compareRefs, topRef, workAt, type AgentRef } from '../../runtime/placement/placement'
import { AGENT_BUSY_MESSAGE, ApiError, asApiError, type HandlerContext, type HandlersOf } from './handler-context'

type AgentMethod = 'agent.cancel' | 'agent.resume' | 'agent.status' | 'agent.autoRevival' | 'agent.configure' | 'agent.limits'

export function agentHandlers (c: HandlerContext): HandlersOf<AgentMethod> {
  const { node } = c
  return {
    'agent.cancel': async p => {
      const id = c.resolve(p.conversation)
      const elsewhere = c.locations.of(id, false)[0]
      if (!node.agents.isRunning(id) && elsewhere !== undefined) throw new ApiError(`the agent of this conversation runs on ${elsewhere.name}; stop it there`)
      await node.agents.cancel(id)
      return {}
    },
    'agent.resume': async p => resume(c, p.conversation),
    'agent.status': async p => agentStatus(c, c.resolve(p.conversation)),
    'agent.autoRevival': async p => setAutoRevival(c, p.conversation, p.on),
    'agent.configure': async p => configure(c, p),
    'agent.limits': async p => limitsOf(c, c.resolve(p.conversation))
  }
}

/**
 * Moves the agent here (`/resume`): it continues from the branch shown here with a higher
 * epoch, and an agent elsewhere stops at its next step. Refused, saying why, when there is
 * nothing to move: it already works here, or it is this device's and has nothing to do.
 */
async function resume (c: HandlerContext, ref: string): Promise<ApiMethods['agent.resume']['result']> {
  const { node } = c
  const id = c.resolve(ref)
  if (node.agents.isRunning(id)) throw new ApiError('the agent already runs on this device')
  if (c.starting.has(id)) throw new ApiError(AGENT_BUSY_MESSAGE)
  c.starting.add(id)
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
    return await asApiError((async () => {
      await node.configFor(id) // refuse before anything is written if no model is set up here
      const moved = await node.resume(id)
      return { device: moved.device, name: node.cluster.name, epoch: moved.epoch }
    })())
  } finally {
    c.starting.delete(id)
  }
}

/** Where the conversation's agent runs, how it got there, and whether it is revived. */
async function agentStatus (c: HandlerContext, id: string): Promise<AgentStatusDto> {
  const { node } = c
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
    waiting: st.waiting === null ? null : { ...st.waiting, text: waitText(st.waiting, named) },
    moves,
    names
  }
}

/**
 * Turns auto-revival on or off: a `meta` setting at the tip of the branch shown here. An
 * agent at work appends to that branch, so the setting waits until it is idle.
 */
async function setAutoRevival (c: HandlerContext, ref: string, on: boolean): Promise<AgentStatusDto> {
  const { node } = c
  const id = c.resolve(ref)
  const dag = await node.history.open(id)
  if (dag.root?.kind !== 'conversation') throw new ApiError(`the start of conversation ${id.slice(0, 12)} has not arrived on this device yet`)
  if ((node.history.summary(id)?.autoRevival === true) !== on) {
    const working = c.locations.of(id)
    // An agent here waiting (for another device to hold its step, or to hear its peers) may be
    // let go: the setting goes below its tip, and it goes on once it sees auto-revival off.
    const run = node.agents.runOf(id)
    if (!on && run?.waiting !== undefined && working.every(a => a.self)) {
      await setMeta(node.history, dag, 'autoRevival', on, run.cursor.tip)
      return agentStatus(c, id)
    }
    if (working.length > 0 || c.starting.has(id)) {
      const where = working.some(a => a.self) || working.length === 0 ? 'here' : `on ${working.map(a => a.name).join(' and ')}`
      throw new ApiError(`the agent is working ${where}: change auto-revival when it has finished its turn (or stop it)`)
    }
    await setMeta(node.history, dag, 'autoRevival', on)
  }
  return agentStatus(c, id)
}

/**
 * How this device's agent of the conversation runs (`arbor chat --provider …`): the model given
 * joins this device's `llm` setting in the history (never the key; what another device wrote
 * there is not looked at), the sandbox switch its `sandbox` setting; then what it would run with.
 */
async function configure (c: HandlerContext, p: ApiParamsOut<'agent.configure'>): Promise<ApiMethods['agent.configure']['result']> {
  const { node } = c
  const id = c.resolve(p.conversation)
  let dag = await node.history.open(id)
  if (dag.root?.kind !== 'conversation') throw new ApiError(`the start of conversation ${id.slice(0, 12)} has not arrived on this device yet`)
  const given: LlmSetting = {}
  for (const k of ['provider', 'model', 'baseURL', 'script'] as const) {
    const v = p.llm?.[k]
    if (v !== undefined) given[k] = v
  }
  if (p.llm?.contextWindow !== undefined) given.contextWindow = p.llm.contextWindow
  const saved = conversationSettings(dag, node.device).llm
  const llm: LlmSetting = { ...saved, ...given }
  if (Object.keys(given).length > 0 && JSON.stringify(llm) !== JSON.stringify(saved)) {
    await setMeta(node.history, dag, 'llm', llm)
    dag = await node.history.open(id)
  }
  if (p.sandbox !== undefined) {
    await setMeta(node.history, dag, 'sandbox', p.sandbox)
    dag = await node.history.open(id)
  }
  // kept as this device's own setting: a peer's agent of the conversation works where its device says
  if (p.cwd !== undefined && path.resolve(p.cwd) !== dag.cwdOf(node.device)) {
    await setMeta(node.history, dag, 'cwd', path.resolve(p.cwd))
    dag = await node.history.open(id)
  }
  if (p.limits !== undefined) await configureLimits(node.history, dag, p.limits)
  const resolved = await asApiError(node.agentConfig(id))
  return { conversation: id, warnings: resolved.warnings, sandboxed: resolved.sandboxed }
}

/** The limits the agent would run under here (turnLimits, as agent-config resolves them), and the budget's count so far. */
async function limitsOf (c: HandlerContext, id: string): Promise<AgentLimitsDto> {
  const { node } = c
  const [dag, settings] = await Promise.all([node.history.open(id), readNodeSettings(node.dataDir)])
  const own = conversationSettings(dag, node.device).limits
  const limits = turnLimits(own, settings)
  return {
    maxSteps: limits.maxSteps,
    maxStepsFrom: own.maxSteps !== undefined ? 'conversation' : settings?.maxSteps !== undefined ? 'settings' : 'default',
    ...(limits.tokenBudget !== undefined ? { tokenBudget: limits.tokenBudget } : {}),
    tokensSpent: tokensSpent(dag.entries(), node.device)
  }
}

/** This device's `limits` setting of a conversation, the given values joined to the saved ones (0 clears one). */
async function configureLimits (history: HistoryStore, dag: ConversationDag, given: { maxSteps?: number; tokenBudget?: number }): Promise<void> {
  const saved = conversationSettings(dag, history.device).limits
  const next: LimitsSetting = { ...saved }
  for (const k of ['maxSteps', 'tokenBudget'] as const) {
    const v = given[k]
    if (v === 0) delete next[k]
    else if (v !== undefined) next[k] = v
  }
  if (JSON.stringify(next) !== JSON.stringify(saved)) await setMeta(history, dag, 'limits', next)
}
