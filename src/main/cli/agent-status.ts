import type { ConversationDag } from '../../shared/conversation-dag'
import { agentMoves as movesOf, moveText } from '../../shared/agent-moves'
import type { Entry } from '../../shared/entry'
import { waitText } from '../../shared/agent-wait'
import type { PlacementStatus } from '../runtime/placement/agent-placement'
import { ownerOf } from '../runtime/placement/placement'

export interface AgentStatusInput {
  dag: ConversationDag
  /** what the running node sees (null when no node runs: the history alone) */
  status: PlacementStatus | null
  self: string
  name: (device: string) => string
  autoRevival: boolean
}

/** `arbor status`: where a conversation's agent runs, its epoch, and every move the history records. */
export function agentStatusText (o: AgentStatusInput): string {
  const owner = o.status?.owner ?? ownerOf(o.dag.entries())
  const lines: string[] = []
  if (owner === null) {
    lines.push('agent: none has run yet (the first message starts it on the device it is sent from)')
  } else {
    const where = owner.device === o.self ? 'this device' : o.name(owner.device)
    let state = ''
    if (o.status !== null) {
      if (o.status.runningHere !== null) state = ', working now'
      else if (owner.device !== o.self) state = o.status.ownerDown ? ', not responding' : ''
    }
    lines.push(`agent: ${where} (epoch ${owner.epoch}${state})`)
  }
  if (o.status?.waiting != null) lines.push(`waiting: ${waitText(o.status.waiting, o.name)}`)
  for (const a of o.status?.announced ?? []) {
    if (owner !== null && a.device === owner.device && a.epoch === owner.epoch) continue
    lines.push(`also running: ${o.name(a.device)} (epoch ${a.epoch}) — healing: the lower one stops at its next step`)
  }
  lines.push(`auto-revival: ${o.autoRevival ? 'on' : 'off'}`)
  const moves = agentMoves([...o.dag.entries()], o.name)
  if (moves.length > 0) lines.push('history:', ...moves.map(m => '  ' + m))
  return lines.join('\n') + '\n'
}

/** The entries that say where the agent ran and why it moved, as lines, oldest first. */
export function agentMoves (entries: Entry[], name: (device: string) => string): string[] {
  return movesOf(entries).map(m => `${new Date(m.ts).toISOString().replace('T', ' ').slice(0, 19)}  ${moveText(m, name)}`)
}
