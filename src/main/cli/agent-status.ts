import type { ConversationDag } from '../../shared/conversation-dag'
import type { Entry } from '../../shared/entry'
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
  const seenEpoch = new Set<string>()
  const out: Array<{ ts: number; id: string; text: string }> = []
  for (const e of entries) {
    const who = name(e.author.device)
    if (e.kind === 'agent.started') {
      const key = `${e.author.device}:${e.body.epoch}`
      const first = !seenEpoch.has(key)
      seenEpoch.add(key)
      const from = e.body.previous !== undefined ? ` from ${name(e.body.previous.device)} (epoch ${e.body.previous.epoch})` : ''
      if (e.body.reason === 'resume') out.push({ ts: e.ts, id: e.id, text: `resumed on ${who}${from}, epoch ${e.body.epoch}` })
      else if (e.body.reason === 'revival') out.push({ ts: e.ts, id: e.id, text: `revived on ${who}${from}, epoch ${e.body.epoch}` })
      else if (first) out.push({ ts: e.ts, id: e.id, text: `started on ${who}, epoch ${e.body.epoch}` })
    } else if (e.kind === 'agent.stopped' && (e.body.reason === 'superseded' || e.body.reason === 'crash-loop')) {
      const by = e.body.by !== undefined ? ` by ${name(e.body.by.device)} (epoch ${e.body.by.epoch})` : ''
      out.push({ ts: e.ts, id: e.id, text: e.body.reason === 'superseded' ? `${who} (epoch ${e.body.epoch}) gave way${by}` : `${who} (epoch ${e.body.epoch}) stopped after crashing repeatedly` })
    }
  }
  out.sort((a, b) => a.ts - b.ts || (a.id < b.id ? -1 : 1))
  return out.map(m => `${new Date(m.ts).toISOString().replace('T', ' ').slice(0, 19)}  ${m.text}`)
}
