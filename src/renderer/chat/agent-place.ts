// Where a conversation's agent runs, in the words the chat shows: the agent bar's line, the
// healing notes, what a message sent to another device's agent leads to, and the message
// box's commands (`/resume`). Pure: the API's data in, text out.
import type { AgentStatusDto, ApiEvent, RemoteAgentDto } from '../../shared/api/api'
import type { Entry } from '../../shared/entry/entry'

export type PlaceTone = 'ok' | 'warn' | 'muted'

export interface PlaceView {
  /** "Agent: this device · epoch 2", "Agent: server · epoch 1 (not responding)" */
  text: string
  tone: PlaceTone
  /** "healing: laptop's agent is giving way", one per outranked agent still at work */
  healing: string[]
  /** whether the agent can be moved here (it belongs to another device and none works here) */
  canResume: boolean
  /** what the agent here waits for before its next step ("waiting for another device to hold the step…"), if anything */
  waiting?: string
}

/** The agent bar's view of a status. */
export function placeView (s: AgentStatusDto): PlaceView {
  const healing = s.givingWay.map(a => `healing: ${a.self ? 'this device' : a.name}'s agent is giving way`)
  const o = s.owner
  if (o === null) return { text: 'Agent: not started yet — your first message starts it on this device', tone: 'muted', healing, canResume: false }
  const epoch = ` · epoch ${o.epoch}`
  if (o.self) {
    if (s.waiting !== null) return { text: `Agent: this device${epoch} · waiting`, tone: 'warn', healing, canResume: false, waiting: s.waiting.text }
    return { text: `Agent: this device${epoch}${s.runningHere !== null ? ' · working' : ''}`, tone: 'ok', healing, canResume: false }
  }
  const working = s.announced.some(a => a.device === o.device && a.epoch === o.epoch)
  const state = !s.online
    ? { text: ' (not connected: this device is offline)', tone: 'warn' as const }
    : s.ownerDown
      ? { text: ' (not responding)', tone: 'warn' as const }
      : !s.ownerConnected
          ? { text: ' (not connected)', tone: 'warn' as const }
          : { text: working ? ' · working' : '', tone: 'ok' as const }
  return { text: `Agent: ${o.name}${epoch}${state.text}`, tone: state.tone, healing, canResume: s.runningHere === null }
}

/** What became of a message the node handed to another device's agent (message.send's `agent`). */
export function sentText (agent: RemoteAgentDto): string {
  return agent.reachable
    ? `Sent to the agent on ${agent.name}`
    : `${agent.name} is not connected: the message waits for it — type /resume to run the agent here`
}

/**
 * Whether a message handed to another device's agent still waits for it on the shown branch:
 * nothing follows it but notes, settings and that agent starting (no answer, no other agent).
 */
export function stillWaiting (branch: readonly Entry[], message: string, agent: RemoteAgentDto): boolean {
  for (let i = branch.length - 1; i >= 0; i--) {
    const e = branch[i] as Entry
    if (e.id === message) return true
    // an entry from a newer version is looked past, as placement does
    const quiet = e.kind === 'note' || e.kind === 'meta' || e.kind === 'unknown' || (e.kind === 'agent.started' && e.author.device === agent.device)
    if (!quiet) return false
  }
  return false
}

/** Whether an event may change where the conversation's agent runs (time to ask agent.status again). */
export function affectsPlacement (ev: ApiEvent, conversation: string): boolean {
  switch (ev.type) {
    case 'peer':
    case 'net':
      return true
    case 'agent':
      return ev.conversation === conversation
    case 'entries':
      return ev.conversation === conversation && ev.entries.some(e =>
        e.kind === 'agent.started' || e.kind === 'agent.stopped' || (e.kind === 'meta' && e.body.key === 'autoRevival'))
    default:
      return false
  }
}

/** The message box's commands: typed alone, they act instead of sending a message. */
export const COMMANDS = [
  { name: '/resume', help: 'run the agent on this device from now on' },
  { name: '/compact', help: 'summarise the conversation before the latest message, to free the model\'s context (/compact what to focus on)' }
] as const

/** Commands that take the rest of the line (`/compact what to focus on`). */
const WITH_TEXT: ReadonlySet<string> = new Set(['/compact'])

export type CommandName = typeof COMMANDS[number]['name']

export type Command =
  | { kind: 'command'; name: CommandName; text?: string }
  /** one word after a slash that is no command (not sent: it is most likely a typo) */
  | { kind: 'unknown'; name: string }

/** The command a message box's text is, or null for a message ("/usr/bin is…" is a message). */
export function parseCommand (text: string): Command | null {
  const t = text.trim()
  const withText = /^(\/[a-z][a-z-]*)\s+(\S[\s\S]*)$/i.exec(t)
  const named = withText === null ? undefined : COMMANDS.find(c => c.name === (withText[1] as string).toLowerCase() && WITH_TEXT.has(c.name))
  if (named !== undefined && withText !== null) return { kind: 'command', name: named.name, text: (withText[2] as string).trim() }
  if (!/^\/[a-z][a-z-]*$/i.test(t)) return null
  const known = COMMANDS.find(c => c.name === t.toLowerCase())
  return known !== undefined ? { kind: 'command', name: known.name } : { kind: 'unknown', name: t }
}

/** The help line while a command is being typed ("/", "/re"), or undefined. */
export function commandHelp (text: string): string | undefined {
  if (!/^\/[a-z-]*$/i.test(text)) return undefined
  const matching = COMMANDS.filter(c => c.name.startsWith(text.toLowerCase()))
  if (matching.length === 0) return `No command ${text}: the commands are ${COMMANDS.map(c => c.name).join(', ')}`
  return matching.map(c => `${c.name} — ${c.help}`).join(' · ') + ' (Enter)'
}

/** Why an unknown command is not sent. */
export function unknownCommandText (name: string): string {
  return `${name} is not a command (the commands are ${COMMANDS.map(c => c.name).join(', ')}); to send it as a message, write more than the one word`
}
