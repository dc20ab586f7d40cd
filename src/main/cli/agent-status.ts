import type { AgentStatusDto } from '../../shared/api/api'
import { agentMoves as movesOf, moveText } from '../../shared/conversation/agent-moves'
import type { Entry } from '../../shared/entry/entry'
import { ownerOf } from '../runtime/placement/placement'

export interface AgentStatusInput {
  /** the conversation's entries */
  entries: Entry[]
  /** what the node sees (agent.status) */
  status: AgentStatusDto
  /** false: the node was opened for this command, without the network: the history alone speaks */
  live: boolean
  self: string
}

/** `arbor status`: where a conversation's agent runs, its epoch, and every move the history records. */
export function agentStatusText (o: AgentStatusInput): string {
  const st = o.live ? o.status : null
  // a node opened for the command knows no peer: devices go by their keys, as the history names them
  const name = (d: string): string => (st === null ? undefined : st.names[d]) ?? d.slice(0, 12)
  const owner = ownerOf(o.entries)
  const lines: string[] = []
  if (owner === null) {
    lines.push('agent: none has run yet (the first message starts it on the device it is sent from)')
  } else {
    const where = owner.device === o.self ? 'this device' : name(owner.device)
    let state = ''
    if (st !== null) {
      if (st.runningHere !== null) state = ', working now'
      else if (owner.device !== o.self) state = st.ownerDown ? ', not responding' : ''
    }
    lines.push(`agent: ${where} (epoch ${owner.epoch}${state})`)
  }
  if (st?.waiting != null) lines.push(`waiting: ${st.waiting.text}`)
  for (const a of st?.announced ?? []) {
    if (owner !== null && a.device === owner.device && a.epoch === owner.epoch) continue
    lines.push(`also running: ${name(a.device)} (epoch ${a.epoch}) — healing: the lower one stops at its next step`)
  }
  lines.push(`auto-revival: ${o.status.autoRevival ? 'on' : 'off'}`)
  const moves = agentMoves(o.entries, name)
  if (moves.length > 0) lines.push('history:', ...moves.map(m => '  ' + m))
  return lines.join('\n') + '\n'
}

/** The entries that say where the agent ran and why it moved, as lines, oldest first. */
export function agentMoves (entries: Entry[], name: (device: string) => string): string[] {
  return movesOf(entries).map(m => `${new Date(m.ts).toISOString().replace('T', ' ').slice(0, 19)}  ${moveText(m, name)}`)
}
