import path from 'node:path'
import type { Entry, EntryOf } from '../../shared/entry'
import type { HistoryStore } from '../history/history-store'
import { setMeta } from '../history/set-meta'
import { AgentConfigError, conversationSettings, createLlm, readNodeSettings, resolveAgentConfig, type LlmSetting } from '../runtime/agent/agent-config'
import { FileSecretStore, type SecretStore } from '../secrets/secret-store'
import { AgentHost } from '../runtime/agent/agent-host'
import type { AgentEvent } from '../runtime/agent/agent-loop'
import { usageTotal } from '../runtime/agent/step-planner'
import type { EventEmitter } from 'node:events'
import type { PostOutcome } from '../runtime/placement/agent-placement'
import type { NodeAgentEvents } from '../node'

export interface ChatOptions {
  conversation?: string      // id or prefix; undefined with newConversation
  newConversation: boolean
  message: string
  provider?: string
  model?: string
  baseURL?: string
  script?: string
  cwd?: string
  /** true: turn the sandbox off for this conversation; false: on again; undefined: as it is */
  sandboxOff?: boolean
  dataDir: string
  /** where the API key is kept (default: <data>/secrets.json; the running node's store when run through it) */
  secrets?: SecretStore
  env: NodeJS.ProcessEnv
  out: (text: string) => void
  err: (text: string) => void
  /** aborted on Ctrl-C: the agent is cancelled and records it */
  signal?: AbortSignal
  /** the running node, when the command runs inside it: its agents run the turn */
  node?: ChatNode
}

/** What chat needs of a running node: one agent host per device, and placement. */
export interface ChatNode {
  readonly agents: AgentHost
  readonly agentEvents: EventEmitter<NodeAgentEvents>
  posted (conversation: string, entry: Entry): Promise<PostOutcome>
}

export class ChatError extends Error {}

export { defaultWorkspace } from '../runtime/agent/agent-config'

/**
 * `arbor chat`: posts a user message and runs the conversation's agent on this device to
 * the end of its turn, printing the reply as it streams and the tool activity.
 * Returns the process exit code.
 */
export async function chat (store: HistoryStore, o: ChatOptions): Promise<number> {
  let conversation: string
  if (o.newConversation) {
    const cwd = o.cwd !== undefined ? path.resolve(o.cwd) : undefined
    const root = await store.createConversation({ title: o.message.replace(/\s+/g, ' ').slice(0, 80), ...(cwd !== undefined ? { cwd } : {}) })
    conversation = root.id
    o.out(`conversation ${conversation}\n`)
  } else {
    if (o.conversation === undefined) throw new ChatError('name a conversation, or pass --new')
    conversation = store.resolve(o.conversation)
  }
  const dag = await store.open(conversation)
  const root = dag.root
  if (root === undefined || root.kind !== 'conversation') throw new ChatError(`the start of conversation ${conversation.slice(0, 12)} has not arrived on this device yet`)

  // The model settings given here are kept with the conversation (never the API key), as
  // this device's: what another device wrote there is not looked at (conversationSettings).
  const given: LlmSetting = {}
  if (o.provider !== undefined) given.provider = o.provider
  if (o.model !== undefined) given.model = o.model
  if (o.baseURL !== undefined) given.baseURL = o.baseURL
  if (o.script !== undefined) given.script = o.script
  const own = conversationSettings(dag, store.device)
  const saved = own.llm
  const llm: LlmSetting = { ...saved, ...given }
  if (Object.keys(given).length > 0 && JSON.stringify(llm) !== JSON.stringify(saved)) await setMeta(store, dag, 'llm', llm)
  let resolved: Awaited<ReturnType<typeof resolveAgentConfig>>
  try {
    // This device's settings (as the app saves them) fill in what the conversation leaves open.
    const [settings, apiKey] = await Promise.all([readNodeSettings(o.dataDir), (o.secrets ?? new FileSecretStore(o.dataDir)).get('apiKey')])
    const made = createLlm({ llm, settings, ...(apiKey !== undefined ? { apiKey } : {}), ...(own.model !== undefined ? { rootModel: own.model } : {}), env: o.env })
    if (o.sandboxOff !== undefined) await setMeta(store, dag, 'sandbox', !o.sandboxOff)
    const cwd = o.cwd !== undefined && !o.newConversation ? path.resolve(o.cwd) : undefined
    resolved = await resolveAgentConfig({ store, dag, dataDir: o.dataDir, env: o.env, llm: made, ...(cwd !== undefined ? { cwd } : {}) })
  } catch (err) {
    if (err instanceof AgentConfigError) throw new ChatError(err.message)
    throw err
  }
  // Say up front what the bash tool would say on its first call.
  for (const w of resolved.warnings) o.err(`warning: ${w}\n`)
  if (!resolved.sandboxed) o.err('warning: the sandbox is off for this conversation: bash runs with your full permissions (turn it back on with --sandbox)\n')

  const tip = dag.branch(store.selected(conversation)).at(-1) as Entry
  const [userEntry] = await store.append(conversation, [{ kind: 'user', body: { text: o.message }, parents: [tip.id] }])
  store.select(conversation, (userEntry as Entry).id)

  const printer = new ChatPrinter(o.out, o.err)
  // Inside a running node its own agents run the turn (one agent per conversation per device,
  // and it may belong to another device); otherwise this process runs it.
  const node = o.node
  const onEvent = (ev: AgentEvent): void => { if (ev.conversation === conversation) printer.event(ev) }
  let host: AgentHost
  if (node !== undefined) {
    host = node.agents
    node.agentEvents.on('event', onEvent)
  } else {
    host = new AgentHost({ history: store, configFor: async () => resolved.config, onEvent })
    await host.ready()
  }
  const onAbort = (): void => { void host.cancel(conversation) }
  o.signal?.addEventListener('abort', onAbort)
  try {
    if (node !== undefined) {
      const where = await node.posted(conversation, userEntry as Entry)
      if (where.runs === 'here' && where.queued === true) {
        o.err('the agent is busy with this conversation: your message is queued, and answered when its current turn ends\n')
        return 0
      }
      if (where.runs === 'elsewhere') {
        o.err(where.reachable
          ? `the agent of this conversation runs on ${where.name}: it answers there, and the answer syncs here\n`
          : `the agent of this conversation runs on ${where.name}, which is not connected: the message waits for it (\`arbor resume ${conversation.slice(0, 12)}\` runs the agent here)\n`)
        return 0
      }
    } else {
      await host.start(conversation, { leaf: (userEntry as Entry).id })
    }
    const end = await host.wait(conversation)
    printer.finish()
    const after = await store.open(conversation)
    const branch = after.branch((userEntry as Entry).id)
    const last = branch.findLast(e => e.kind === 'agent.stopped') as EntryOf<'agent.stopped'> | undefined
    const finalTip = branch.at(-1)
    if (finalTip !== undefined) store.select(conversation, finalTip.id)
    const turn = usageTotal(branch.slice(branch.findIndex(e => e.id === (userEntry as Entry).id) + 1))
    const total = usageTotal(after.entries())
    o.err(`tokens: ${turn.input} in, ${turn.output} out (conversation: ${total.input} in, ${total.output} out)\n`)
    if (end === 'done' || end === 'idle') return 0
    if (end === 'cancelled') { o.err('stopped: the agent was cancelled\n'); return 130 }
    o.err(`the agent stopped: ${last?.body.message ?? end}\n`)
    return 1
  } finally {
    o.signal?.removeEventListener('abort', onAbort)
    if (node !== undefined) node.agentEvents.off('event', onEvent)
    else await host.close()
  }
}

/** Prints agent events as a terminal transcript: the reply as it streams, tool activity between. */
class ChatPrinter {
  private midLine = false
  constructor (private readonly out: (t: string) => void, private readonly err: (t: string) => void) {}

  event (ev: AgentEvent): void {
    switch (ev.type) {
      case 'token':
        this.write(ev.delta)
        break
      case 'tool-start':
        this.newline()
        this.out(`⏵ ${ev.tool} ${summarizeArgs(ev.args)}\n`)
        break
      case 'tool-output':
        // Indent tool output; chunks may start and end anywhere in a line.
        this.write(ev.chunk.replace(/\n(?=.)/g, '\n  ').replace(/^/, this.midLine ? '' : '  '))
        break
      case 'tool-end':
        this.newline()
        this.out(`${ev.status === 'ok' ? '✓' : '✗'} ${ev.status}\n`)
        break
      case 'entry':
        if (ev.entry.kind === 'tool.result' && ev.entry.body.status === 'unknown') { this.newline(); this.out('? outcome unknown (interrupted)\n') }
        if (ev.entry.kind === 'agent.stopped' && ev.entry.body.reason === 'error') { this.newline(); this.err(`! ${ev.entry.body.message ?? 'the agent crashed'}\n`) }
        if (ev.entry.kind === 'assistant') this.newline()
        break
      default:
        break
    }
  }

  finish (): void { this.newline() }

  private write (text: string): void {
    if (text === '') return
    this.out(text)
    this.midLine = !text.endsWith('\n')
  }

  private newline (): void {
    if (this.midLine) this.out('\n')
    this.midLine = false
  }
}

function summarizeArgs (args: unknown): string {
  if (args !== null && typeof args === 'object' && 'command' in args) return String((args as { command: unknown }).command)
  const s = JSON.stringify(args)
  return s.length > 200 ? s.slice(0, 199) + '…' : s
}
