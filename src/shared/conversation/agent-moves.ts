// Where a conversation's agent ran and why it moved, read from its lifecycle entries
// (DESIGN.md, "Lifecycle entries"). Pure, for the CLI (`arbor status`), the API and the UI.
import type { Entry } from '../entry/entry'

/** An agent incarnation named by the history: the device it ran on and its epoch. */
export interface AgentAt { device: string; epoch: number }

/** One move of the agent, as the history records it. */
export type AgentMove =
  /** an agent first ran on `device` with this epoch (a message, or a restart after a crash) */
  | { kind: 'started'; id: string; ts: number; device: string; epoch: number }
  /** the user moved it to `device` (`/resume`); `from`: the agent it took over */
  | { kind: 'resumed'; id: string; ts: number; device: string; epoch: number; from?: AgentAt }
  /** `device` revived it after `from`'s device stopped responding (auto-revival) */
  | { kind: 'revived'; id: string; ts: number; device: string; epoch: number; from?: AgentAt }
  /** the agent on `device` stopped for a higher one (`by`): healing */
  | { kind: 'gave-way'; id: string; ts: number; device: string; epoch: number; by?: AgentAt }
  /** the agent on `device` kept crashing and was stopped */
  | { kind: 'crash-loop'; id: string; ts: number; device: string; epoch: number }

/** The entries that say where the agent ran and why it moved, oldest first (by wall clock, then id). */
export function agentMoves (entries: Iterable<Entry>): AgentMove[] {
  const seenEpoch = new Set<string>()
  const out: AgentMove[] = []
  for (const e of entries) {
    const at = { id: e.id, ts: e.ts, device: e.author.device }
    if (e.kind === 'agent.started') {
      const key = `${e.author.device}:${e.body.epoch}`
      const first = !seenEpoch.has(key)
      seenEpoch.add(key)
      const from = e.body.previous !== undefined ? { from: { device: e.body.previous.device, epoch: e.body.previous.epoch } } : {}
      if (e.body.reason === 'resume') out.push({ kind: 'resumed', ...at, epoch: e.body.epoch, ...from })
      else if (e.body.reason === 'revival') out.push({ kind: 'revived', ...at, epoch: e.body.epoch, ...from })
      // every turn starts an agent: only an epoch's first start on a device is a move
      else if (first) out.push({ kind: 'started', ...at, epoch: e.body.epoch })
    } else if (e.kind === 'agent.stopped' && e.body.reason === 'superseded') {
      out.push({ kind: 'gave-way', ...at, epoch: e.body.epoch, ...(e.body.by !== undefined ? { by: { device: e.body.by.device, epoch: e.body.by.epoch } } : {}) })
    } else if (e.kind === 'agent.stopped' && e.body.reason === 'crash-loop') {
      out.push({ kind: 'crash-loop', ...at, epoch: e.body.epoch })
    }
  }
  out.sort((a, b) => a.ts - b.ts || (a.id < b.id ? -1 : 1))
  return out
}

/** A move in a few words, as `arbor status` prints it: "resumed on laptop from server (epoch 0), epoch 1". */
export function moveText (m: AgentMove, name: (device: string) => string): string {
  const who = name(m.device)
  switch (m.kind) {
    case 'started': return `started on ${who}, epoch ${m.epoch}`
    case 'resumed':
    case 'revived': {
      // taking over from itself (an agent here with a lower epoch) is no move from anywhere
      const from = m.from !== undefined && m.from.device !== m.device ? ` from ${name(m.from.device)} (epoch ${m.from.epoch})` : ''
      return `${m.kind} on ${who}${from}, epoch ${m.epoch}`
    }
    case 'gave-way': return `${who} (epoch ${m.epoch}) gave way${m.by !== undefined ? ` to ${name(m.by.device)} (epoch ${m.by.epoch})` : ''}`
    case 'crash-loop': return `${who} (epoch ${m.epoch}) stopped after crashing repeatedly`
  }
}
