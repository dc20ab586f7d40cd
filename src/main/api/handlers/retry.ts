// message.retry: a reply run again from what it answered, as a new branch (the Retry button, `arbor retry`).
import type { ApiMethods } from '../../../shared/api/api'
import type { ApiParamsOut } from '../../../shared/api/api-params'
import { entryByRef } from '../../../shared/entry/entry-ref'
import { retryElsewhereText, retryPoint } from '../../../shared/conversation/retry-point'
import { topRef } from '../../runtime/placement/placement'
import { AGENT_BUSY_MESSAGE, ApiError, asApiError, type HandlerContext, type HandlersOf } from './handler-context'

export function retryHandlers (c: HandlerContext): HandlersOf<'message.retry'> {
  return { 'message.retry': async p => retry(c, p) }
}

/**
 * Runs this device's agent again from the entry the reply answered (retryPoint), and shows
 * that branch here: its newest child, the new run, is what the transcript follows. The
 * model is this device's (its provider, its key); `model` changes only the model name, for
 * this run, and is what the new reply records. Refused while an agent works here, and when
 * the conversation's agent belongs to another device (it would answer there: /resume first).
 */
async function retry (c: HandlerContext, p: ApiParamsOut<'message.retry'>): Promise<ApiMethods['message.retry']['result']> {
  const { node } = c
  const id = c.resolve(p.conversation)
  if (node.agents.isRunning(id) || c.starting.has(id)) throw new ApiError(AGENT_BUSY_MESSAGE)
  c.starting.add(id)
  try {
    const dag = await node.history.open(id)
    if (dag.root?.kind !== 'conversation') throw new ApiError(`the start of conversation ${id.slice(0, 12)} has not arrived on this device yet`)
    const entry = await asApiError(Promise.resolve().then(() => entryByRef(dag, p.entry)))
    const point = retryPoint(dag, entry)
    if (!point.ok) throw new ApiError(point.error)
    const st = await node.agentStatus(id)
    const top = topRef([st.owner, ...st.announced])
    if (top !== null && top.device !== node.device) {
      throw new ApiError(retryElsewhereText(node.deviceName(top.device)))
    }
    const run = p.model !== undefined ? { model: p.model } : {}
    await asApiError(node.configFor(id, run)) // refuse before anything is written if no model is set up here
    await asApiError(node.retry(id, point.from.id, p.model))
    node.history.select(id, point.from.id)
    return { reply: entry.id, from: point.from.id }
  } finally {
    c.starting.delete(id)
  }
}
