// "Continue from here": where a message continuing from an earlier turn attaches.
import { describe, expect, it } from 'vitest'
import { ConversationDag } from '../../../src/shared/conversation/conversation-dag'
import type { Entry, EntryDraft } from '../../../src/shared/entry/entry'
import { continuePointOf, continuePoints } from '../../../src/renderer/chat/continue-from'
import { layoutTree } from '../../../src/renderer/tree/tree-layout'
import { buildTranscript, groupTurns } from '../../../src/renderer/transcript/transcript-items'

const DEV = 'd'.repeat(64)
let counter = 0
const hex = (): string => (++counter).toString(16).padStart(64, '0')

function tree () {
  const root: Entry = { v: 1, id: hex(), conversation: '', parents: [], author: { device: DEV }, ts: 1, kind: 'conversation', body: { title: 'Trip', nonce: 'n' } }
  ;(root as { conversation: string }).conversation = root.id
  const dag = new ConversationDag(root.id, [root])
  let ts = 1
  const add = (parent: Entry, draft: Omit<EntryDraft, 'parents'>, agent?: string): Entry => {
    const author = agent === undefined ? { device: DEV } : { device: DEV, agent }
    const e = { v: 1, id: hex(), conversation: root.id, parents: [parent.id], author, ts: ++ts, kind: draft.kind, body: draft.body } as Entry
    dag.add(e)
    return e
  }
  // a user message, the agent's reply, and the (hidden) stop entry that ends the turn
  const turn = (parent: Entry, text: string): { user: Entry; reply: Entry; last: Entry } => {
    const user = add(parent, { kind: 'user', body: { text } })
    const reply = add(user, { kind: 'assistant', body: { text: 'You said: ' + text } }, 'agent')
    const last = add(reply, { kind: 'agent.stopped', body: { epoch: 1, reason: 'done' } }, 'agent')
    return { user, reply, last }
  }
  return { root, dag, add, turn }
}

describe('continuePoints', () => {
  it('maps each answered turn that a later message follows to the entry that message hangs on', () => {
    const { dag, turn } = tree()
    const t1 = turn(dag.root as Entry, 'Where should we go this summer with the kids and the dog?')
    const t2 = turn(t1.last, 'Somewhere warm')
    const t3 = turn(t2.last, 'Spain')
    const turns = groupTurns(buildTranscript(dag.branch(t3.last.id), id => dag.children(id), { running: false }))
    expect(turns.map(t => t.role)).toEqual(['user', 'agent', 'user', 'agent', 'user', 'agent'])
    const points = continuePoints(turns)
    // the hidden stop entry is the attachment point, so the new branch keeps it in its history
    expect([...points.entries()]).toEqual([
      [t1.reply.id, { entry: t1.last.id, label: 'Where should we go this summer with the …' }],
      [t2.reply.id, { entry: t2.last.id, label: 'Somewhere warm' }]
    ])
    // the last turn has none: continuing from it is plain sending
    expect(points.has(t3.reply.id)).toBe(false)
  })

  it('labels a reply before any user message as the start, and skips user turns without a reply', () => {
    const { dag, add } = tree()
    const note = add(dag.root as Entry, { kind: 'note', body: { text: 'imported' } })
    const u1 = add(note, { kind: 'user', body: { text: 'first' } })
    const u2 = add(u1, { kind: 'user', body: { text: 'second' } })
    const turns = groupTurns(buildTranscript(dag.branch(u2.id), id => dag.children(id), { running: false }))
    expect([...continuePoints(turns).values()]).toEqual([{ entry: note.id, label: 'the start' }])
  })

  it('continues a tree row after its newest last entry, under its label', () => {
    const { dag, turn } = tree()
    const t1 = turn(dag.root as Entry, 'Hello')
    turn(t1.last, 'Again')
    const row = layoutTree(dag).rows[1]
    expect(row).toBeDefined()
    expect(continuePointOf(row as NonNullable<typeof row>)).toEqual({ entry: t1.last.id, label: 'Hello' })
  })
})
