// conversations.list, conversation.open/create/select, message.send/post.
import path from 'node:path'
import type { ApiMethods, ConversationDto, ConversationSummaryDto } from '../../../shared/api/api'
import type { ApiParamsOut } from '../../../shared/api/api-params'
import { branchWindow } from '../../../shared/conversation/branch-window'
import type { ConversationDag } from '../../../shared/conversation/conversation-dag'
import { orderedEntries } from '../../../shared/conversation/conversation-export'
import type { Entry } from '../../../shared/entry/entry'
import { entryByRef } from '../../../shared/entry/entry-ref'
import { readNodeSettings } from '../../runtime/agent/agent-config'
import { usageTotal } from '../../runtime/agent/step-planner'
import { topRef } from '../../runtime/placement/placement'
import { AGENT_BUSY_MESSAGE, ApiError, asApiError, type HandlerContext, type HandlersOf } from './handler-context'

type ConversationMethod = 'conversations.list' | 'conversation.open' | 'conversation.create' | 'conversation.select' | 'message.send' | 'message.queue' | 'message.post'

export function conversationHandlers (c: HandlerContext): HandlersOf<ConversationMethod> {
  const { node } = c
  return {
    'conversations.list': async p => list(c, p.query),
    'conversation.open': async p => open(c, p.id, p.tail),
    'conversation.create': async p => create(c, p),
    'conversation.select': async p => {
      const id = c.resolve(p.id)
      const dag = await node.history.open(id)
      if (!dag.isJoined(p.entry)) throw new ApiError(`entry ${p.entry.slice(0, 12)} is not in conversation ${id.slice(0, 12)}`)
      node.history.select(id, p.entry)
      return {}
    },
    'message.send': async p => send(c, p.conversation, p.text, p.parent),
    'message.queue': async p => {
      const id = c.resolve(p.conversation)
      return c.node.agents.isRunning(id) ? { queued: await c.node.placement.hold(id, p.text) } : await send(c, id, p.text, undefined)
    },
    'message.post': async p => post(c, p.conversation, p.text, p.parent)
  }
}

function list (c: HandlerContext, query: string | undefined): ConversationSummaryDto[] {
  const q = query?.trim().toLowerCase() ?? ''
  return c.node.history.list()
    .filter(s => q === '' || s.title.toLowerCase().includes(q) || s.id.startsWith(q))
    .map(s => {
      const agents = c.locations.of(s.id)
      return {
        id: s.id, title: s.title, createdAt: s.createdAt, updatedAt: s.updatedAt, size: s.size, heads: s.heads.length, tips: s.heads, waiting: s.waiting,
        ...(s.cwd !== undefined ? { cwd: s.cwd } : {}), ...(s.autoRevival !== undefined ? { autoRevival: s.autoRevival } : {}),
        running: agents.length > 0, agents
      }
    })
}

async function open (c: HandlerContext, ref: string, tail: number | undefined): Promise<ConversationDto> {
  const { node } = c
  const id = c.resolve(ref)
  const dag = await node.history.open(id)
  const win = tail !== undefined && dag.size > tail ? branchWindow(dag, node.history.selected(id), tail) : undefined
  const selected = node.history.selected(id) ?? win?.tip ?? dag.branch().at(-1)?.id
  // as this version understands them: the UI shows an unknown entry as one, not as what it claims to be
  const entries = win?.entries ?? orderedEntries(dag)
  const usage = usageTotal(win === undefined ? entries : joinedEntries(dag))
  const agents = c.locations.of(id)
  return {
    id,
    title: dag.title(),
    entries,
    ...(selected !== undefined ? { selected } : {}),
    running: agents.length > 0,
    agents,
    usage: { input: usage.input, output: usage.output },
    cwd: await node.workingDirectory(id),
    ...(win === undefined ? { waiting: dag.waiting() } : { window: { assumed: win.assumed, tip: win.tip, entries: dag.size, heads: dag.headIds().length } })
  }
}

/** The joined entries in no order (the usage counts them all; ordering them is what costs). */
function * joinedEntries (dag: ConversationDag): Iterable<Entry> {
  for (const e of dag.entries()) if (dag.isJoined(e.id)) yield e
}

async function create (c: HandlerContext, p: ApiParamsOut<'conversation.create'>): Promise<{ id: string }> {
  const { node } = c
  const settings = await readNodeSettings(node.dataDir)
  const cwd = p.cwd ?? settings.defaultCwd
  const root = await node.history.createConversation({
    title: p.title ?? '',
    ...(cwd !== undefined ? { cwd: path.resolve(cwd) } : {}),
    ...(p.model !== undefined ? { model: p.model } : {}),
    ...(p.autoRevival !== undefined ? { autoRevival: p.autoRevival } : {})
  })
  node.history.select(root.id, root.id)
  return { id: root.id }
}

/**
 * Posts a user message for the conversation's agent: it runs here if it belongs here (or to
 * nobody yet); otherwise the device it runs on picks the message up (placement). While an
 * agent runs for the conversation on this node the message is refused.
 */
async function send (c: HandlerContext, ref: string, text: string, parent: string | undefined): Promise<ApiMethods['message.send']['result']> {
  const { node } = c
  const id = c.resolve(ref)
  if (node.agents.isRunning(id) || c.starting.has(id)) throw new ApiError(AGENT_BUSY_MESSAGE)
  c.starting.add(id)
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
    if (top === null || top.device === node.device) await asApiError(node.configFor(id))
    const [entry] = await node.history.append(id, [{ kind: 'user', body: { text }, parents: [after] }])
    const user = entry as Entry
    node.history.select(id, user.id)
    const outcome = await node.posted(id, user)
    return outcome.runs === 'here' ? { entry: user } : { entry: user, agent: { device: outcome.device, name: outcome.name, reachable: outcome.reachable } }
  } finally {
    c.starting.delete(id)
  }
}

/** A user message for the history only (`arbor post`): no agent is asked; a new branch when `parent` is not a tip. */
async function post (c: HandlerContext, ref: string, text: string, parent: string | undefined): Promise<{ entry: Entry }> {
  const { node } = c
  const id = c.resolve(ref)
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
