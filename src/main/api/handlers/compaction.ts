// conversation.compact: `/compact [focus]` in the message box, `arbor compact <conv> [focus]`.
import type { ApiMethods } from '../../../shared/api/api'
import type { ApiParamsOut } from '../../../shared/api/api-params'
import type { Entry } from '../../../shared/entry/entry'
import { DEFAULT_CONTEXT_WINDOW } from '../../llm/context-window'
import { summarise } from '../../runtime/agent/compaction-step'
import { AGENT_BUSY_MESSAGE, ApiError, asApiError, type CallContext, type HandlerContext, type HandlersOf } from './handler-context'

export function compactionHandlers (c: HandlerContext): HandlersOf<'conversation.compact' | 'conversation.window'> {
  return {
    'conversation.compact': async (p, ctx) => compact(c, p, ctx),
    'conversation.window': async p => contextWindowOf(c, p.conversation)
  }
}

/** The window this device's agent of the conversation would work with (the header's "context N / W"). */
async function contextWindowOf (c: HandlerContext, ref: string): Promise<ApiMethods['conversation.window']['result']> {
  const id = c.resolve(ref)
  const dag = await c.node.history.open(id)
  if (dag.root?.kind !== 'conversation') return null
  // no model set up here: nothing to measure against (the chat says what to set up when sending)
  const config = await c.node.configFor(id).catch(() => null)
  if (config === null) return null
  const source = config.contextWindow
  if (source?.resolve !== undefined) return await source.resolve()
  // a config made by hand (tests) names its window outright
  return source !== undefined ? { tokens: await source.get(), source: 'explicit' } : { tokens: DEFAULT_CONTEXT_WINDOW, source: 'default' }
}

/**
 * Compacts the branch shown here: this device's model summarises all before its latest user
 * message, and the summary, a `compaction` entry at the branch's tip, is what the model is told
 * of that part from now on (any device's agent continuing the branch). Refused while an agent
 * works on the conversation: it appends to the branch itself.
 */
async function compact (c: HandlerContext, p: ApiParamsOut<'conversation.compact'>, ctx: CallContext): Promise<ApiMethods['conversation.compact']['result']> {
  const { node } = c
  const id = c.resolve(p.conversation)
  if (node.agents.isRunning(id) || c.starting.has(id)) throw new ApiError(AGENT_BUSY_MESSAGE)
  const elsewhere = c.locations.of(id, false)[0]
  if (elsewhere !== undefined) throw new ApiError(`the agent of this conversation is working on ${elsewhere.name}; compact when it has finished its turn`)
  c.starting.add(id)
  try {
    const dag = await node.history.open(id)
    if (dag.root?.kind !== 'conversation') throw new ApiError(`the start of conversation ${id.slice(0, 12)} has not arrived on this device yet`)
    const tip = dag.branch(node.history.selected(id)).at(-1) as Entry
    const config = await asApiError(node.configFor(id))
    const window = await config.contextWindow?.get() ?? DEFAULT_CONTEXT_WINDOW
    const tools = [...config.tools.values()].map(t => ({ name: t.name, description: t.description, parameters: t.parameters }))
    const made = await asApiError(summarise({
      provider: config.provider,
      model: config.model,
      system: config.system,
      tools,
      branch: dag.pathTo(tip.id),
      window,
      force: true,
      ...(p.focus !== undefined ? { focus: p.focus } : {}),
      signal: ctx.signal ?? new AbortController().signal
    }))
    if (made.kind !== 'compaction') throw new ApiError(`nothing to compact: ${made.kind === 'nothing' ? made.reason : 'it fits'}`)
    const [entry] = await node.history.append(id, [{ kind: 'compaction', body: made.body, parents: [tip.id] }])
    node.history.select(id, (entry as Entry).id)
    return { entry: entry as Entry, window }
  } finally {
    c.starting.delete(id)
  }
}
