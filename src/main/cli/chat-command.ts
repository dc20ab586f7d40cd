// `arbor chat`: a client of the node's API like the UI. The node's own agents run the turn (the
// running node's, or those of the node opened for this command), so a device never runs two
// agents for one conversation; the reply streams back as API events.
import type { ApiEvent } from '../../shared/api/api'
import type { Entry, EntryOf } from '../../shared/entry/entry'
import type { CliApi } from './api-session'
import { usageTotal } from '../runtime/agent/step-planner'

export interface ChatOptions {
  /** an id or prefix; undefined: a new conversation */
  conversation?: string
  message: string
  /** the model for this device's agent of the conversation, kept with it (never the API key) */
  llm: { provider?: string; model?: string; baseURL?: string; script?: string; contextWindow?: number }
  /** a new conversation's directory (absolute) */
  cwd?: string
  /** false: turn the sandbox off for this conversation; true: on again; undefined: as it is */
  sandbox?: boolean
  /** this device's limits for the conversation, kept with it (0 clears one) */
  limits?: { maxSteps?: number; tokenBudget?: number }
  out: (text: string) => void
  err: (text: string) => void
  /** aborted on Ctrl-C: the agent is cancelled and records it */
  signal?: AbortSignal
}

/**
 * Posts a user message and follows the conversation's agent on this device to the end of its
 * turn, printing the reply as it streams and the tool activity. Returns the process exit code.
 */
export async function chat (api: CliApi, o: ChatOptions): Promise<number> {
  let ref: string
  if (o.conversation === undefined) {
    const made = await api.call('conversation.create', { title: o.message.replace(/\s+/g, ' ').slice(0, 80), ...(o.cwd !== undefined ? { cwd: o.cwd } : {}) })
    ref = made.id
    o.out(`conversation ${made.id}\n`)
  } else {
    ref = o.conversation
  }
  const configured = await api.call('agent.configure', {
    conversation: ref,
    ...(Object.keys(o.llm).length > 0 ? { llm: o.llm } : {}),
    ...(o.sandbox !== undefined ? { sandbox: o.sandbox } : {}),
    ...(o.cwd !== undefined && o.conversation !== undefined ? { cwd: o.cwd } : {}),
    ...(o.limits !== undefined ? { limits: o.limits } : {})
  })
  const conversation = configured.conversation
  // Say up front what the bash tool would say on its first call.
  for (const w of configured.warnings) o.err(`warning: ${w}\n`)
  if (!configured.sandboxed) o.err('warning: the sandbox is off for this conversation: bash runs with your full permissions (turn it back on with --sandbox)\n')
  return followTurn(api, conversation, o, async () => {
    const posted = await api.call('message.queue', { conversation, text: o.message })
    if ('queued' in posted) {
      o.err(`the agent is busy with this conversation: your message is queued${posted.queued > 1 ? ` (${posted.queued} wait)` : ''} and answered when its current turn ends (\`arbor show ${conversation.slice(0, 12)}\` shows it then)\n`)
      return { exit: 0 }
    }
    if (posted.agent !== undefined) {
      o.err(posted.agent.reachable
        ? `the agent of this conversation runs on ${posted.agent.name}: it answers there, and the answer syncs here\n`
        : `the agent of this conversation runs on ${posted.agent.name}, which is not connected: the message waits for it (\`arbor resume ${conversation.slice(0, 12)}\` runs the agent here)\n`)
      return { exit: 0 }
    }
    return { from: posted.entry.id }
  })
}

/** How a turn was set going: the entry its branch goes on from, or the exit code when there is nothing to follow here. */
export type TurnStart = { from: string } | { exit: number }

/**
 * Follows this device's agent of the conversation through the turn `start` sets going (a
 * message, a retry), printing the reply as it streams and the tool activity, then the tokens
 * it used; shows the branch it ended on. Returns the process exit code.
 */
export async function followTurn (api: CliApi, conversation: string, o: Pick<ChatOptions, 'out' | 'err' | 'signal'>, start: () => Promise<TurnStart>): Promise<number> {
  const { device } = await api.call('hello', {})
  const printer = new ChatPrinter(o.out, o.err)
  // The turn is over when this device's agent, started after the message, records that it stopped,
  // or stops being listed where the conversation's agent runs (an agent outranked before it began writes nothing).
  let started = false
  let sent = false
  let ended!: () => void
  const turnOver = new Promise<void>(resolve => { ended = resolve })
  const unsubscribe = api.onEvent((ev: ApiEvent) => {
    if (!('conversation' in ev) || ev.conversation !== conversation) return
    if (ev.type === 'entries') {
      for (const e of ev.entries) {
        if (e.author.device !== device) continue
        printer.entry(e)
        if (e.kind === 'agent.started') started = true
        if (e.kind === 'agent.stopped' && started) ended()
      }
    } else if (ev.type === 'agent') {
      if (sent && !ev.agents.some(a => a.self)) ended()
    } else if (ev.device === device) {
      printer.stream(ev)
    }
  })
  const onAbort = (): void => { void api.call('agent.cancel', { conversation }).catch(() => undefined) }
  o.signal?.addEventListener('abort', onAbort)
  try {
    const begun = await start()
    sent = true
    if ('exit' in begun) return begun.exit
    // it may have ended before the answer came (the events came first)
    const status = await api.call('agent.status', { conversation })
    if (status.runningHere === null && !started) ended()
    const lost = await Promise.race([turnOver.then(() => null), api.lost])
    if (lost !== null) {
      const { NodeLostError } = await import('./node-lost')
      throw new NodeLostError(lost)
    }
    printer.finish()
    const after = await api.call('conversation.open', { id: conversation })
    const { ConversationDag } = await import('../../shared/conversation/conversation-dag')
    const dag = new ConversationDag(conversation, [...after.entries, ...(after.waiting ?? [])])
    const branch = dag.branch(begun.from)
    const last = branch.findLast(e => e.kind === 'agent.stopped') as EntryOf<'agent.stopped'> | undefined
    const finalTip = branch.at(-1)
    if (finalTip !== undefined) await api.call('conversation.select', { id: conversation, entry: finalTip.id })
    const turn = usageTotal(branch.slice(branch.findIndex(e => e.id === begun.from) + 1))
    const total = usageTotal(dag.entries())
    o.err(`tokens: ${turn.input} in, ${turn.output} out (conversation: ${total.input} in, ${total.output} out)\n`)
    const end = last?.body.reason ?? 'stopped'
    // a limit ends the turn unfinished: said, and not a success for a script
    if (end === 'done' && last?.body.limit !== undefined) { o.err(`the agent stopped at its ${last.body.limit} limit: ${last.body.message ?? ''}\n`); return 1 }
    if (end === 'done') return 0
    if (end === 'cancelled') { o.err('stopped: the agent was cancelled\n'); return 130 }
    o.err(`the agent stopped: ${last?.body.message ?? end}\n`)
    return 1
  } finally {
    o.signal?.removeEventListener('abort', onAbort)
    unsubscribe()
  }
}

type StreamEvent = Extract<ApiEvent, { type: 'token' | 'reasoning' | 'tool-start' | 'tool-output' | 'tool-end' }>

/** Prints agent events as a terminal transcript: the reply as it streams, tool activity between. */
class ChatPrinter {
  private midLine = false
  constructor (private readonly out: (t: string) => void, private readonly err: (t: string) => void) {}

  stream (ev: StreamEvent): void {
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
      default:
        break
    }
  }

  entry (e: Entry): void {
    if (e.kind === 'tool.result' && e.body.status === 'unknown') { this.newline(); this.out('? outcome unknown (interrupted)\n') }
    if (e.kind === 'agent.stopped' && e.body.reason === 'error') { this.newline(); this.err(`! ${e.body.message ?? 'the agent crashed'}\n`) }
    if (e.kind === 'assistant') this.newline()
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
