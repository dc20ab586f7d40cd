// Where an agent ran and why it moved, from lifecycle entries: what `arbor status`, the
// API's agent.status and the UI's agent bar list.
import { describe, expect, it } from 'vitest'
import { agentMoves, moveText } from '../../../src/shared/conversation/agent-moves'
import type { Entry, EntryDraft } from '../../../src/shared/entry/entry'
import { agentMoves as cliMoves } from '../../../src/main/cli/agent-status'

const LAPTOP = 'a'.repeat(64)
const SERVER = 'b'.repeat(64)
const names: Record<string, string> = { [LAPTOP]: 'laptop', [SERVER]: 'server' }
const name = (d: string): string => names[d] ?? d.slice(0, 8)
let n = 0
const entry = (device: string, ts: number, draft: Omit<EntryDraft, 'parents'>): Entry =>
  ({ v: 1, id: (++n).toString(16).padStart(64, '0'), conversation: 'c'.repeat(64), parents: ['d'.repeat(64)], author: { device }, ts, kind: draft.kind, body: draft.body }) as Entry

describe('agentMoves', () => {
  it('lists first starts, resumes, revivals, give-ways and crash loops in time order, not every turn', () => {
    const entries = [
      entry(LAPTOP, 50, { kind: 'agent.stopped', body: { epoch: 0, reason: 'superseded', by: { device: SERVER, epoch: 1 } } }),
      entry(LAPTOP, 10, { kind: 'agent.started', body: { epoch: 0, reason: 'user' } }),
      entry(LAPTOP, 20, { kind: 'agent.started', body: { epoch: 0, reason: 'user' } }), // the next turn: no move
      entry(LAPTOP, 25, { kind: 'agent.stopped', body: { epoch: 0, reason: 'done' } }),
      entry(SERVER, 40, { kind: 'agent.started', body: { epoch: 1, reason: 'resume', previous: { device: LAPTOP, epoch: 0 } } }),
      entry(LAPTOP, 60, { kind: 'agent.started', body: { epoch: 2, reason: 'revival', previous: { device: SERVER, epoch: 1 } } }),
      entry(LAPTOP, 70, { kind: 'agent.stopped', body: { epoch: 2, reason: 'crash-loop', message: 'boom' } }),
      entry(LAPTOP, 80, { kind: 'agent.started', body: { epoch: 2, reason: 'restart' } }) // epoch 2 already ran here
    ]
    const moves = agentMoves(entries)
    expect(moves.map(m => [m.kind, m.ts])).toEqual([['started', 10], ['resumed', 40], ['gave-way', 50], ['revived', 60], ['crash-loop', 70]])
    expect(moves.map(m => moveText(m, name))).toEqual([
      'started on laptop, epoch 0',
      'resumed on server from laptop (epoch 0), epoch 1',
      'laptop (epoch 0) gave way to server (epoch 1)',
      'revived on laptop from server (epoch 1), epoch 2',
      'laptop (epoch 2) stopped after crashing repeatedly'
    ])
    // the CLI prints the same moves with their times
    expect(cliMoves(entries, name)[1]).toBe('1970-01-01 00:00:00  resumed on server from laptop (epoch 0), epoch 1')
  })

  it('says nothing for a conversation no agent has run in', () => {
    expect(agentMoves([entry(LAPTOP, 1, { kind: 'user', body: { text: 'hi' } })])).toEqual([])
  })
})
