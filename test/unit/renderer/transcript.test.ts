// The renderer's view of a branch: items, tool calls joined with their journal entries,
// lifecycle notices, turns, and the forks along the branch ("‹ 1/2 ›").
import { describe, expect, it } from 'vitest'
import { ConversationDag } from '../../../src/shared/conversation/conversation-dag'
import type { Entry, EntryDraft } from '../../../src/shared/entry/entry'
import { forkAt, forksOf, stepFork } from '../../../src/renderer/transcript/branch-nav'
import { noticeFor } from '../../../src/renderer/transcript/notices'
import { buildTranscript, groupTurns, sumUsage, type TranscriptItem } from '../../../src/renderer/transcript/transcript-items'

const DEV = 'd'.repeat(64)
let counter = 0
const hex = (): string => (++counter).toString(16).padStart(64, '0')

/** A small conversation builder: ids are fake but well-formed; ts increases. */
function tree () {
  const root: Entry = { v: 1, id: hex(), conversation: '', parents: [], author: { device: DEV }, ts: 1, kind: 'conversation', body: { title: 'T', nonce: 'n' } }
  ;(root as { conversation: string }).conversation = root.id
  const dag = new ConversationDag(root.id, [root])
  let ts = 1
  const add = (parent: Entry, draft: Omit<EntryDraft, 'parents'>): Entry => {
    const e = { v: 1, id: hex(), conversation: root.id, parents: [parent.id], author: { device: DEV }, ts: ++ts, kind: draft.kind, body: draft.body } as Entry
    dag.add(e)
    return e
  }
  return { root, dag, add }
}

const kids = (dag: ConversationDag) => (id: string) => dag.children(id)

describe('buildTranscript', () => {
  it('joins tool calls with their intent and result, and hides routine lifecycle entries', () => {
    const { dag, root, add } = tree()
    const u = add(root, { kind: 'user', body: { text: 'list files' } })
    const s = add(u, { kind: 'agent.started', body: { epoch: 1, reason: 'user' } })
    const a1 = add(s, { kind: 'assistant', body: { text: 'Looking.', toolCalls: [{ id: 'c1', name: 'bash', args: { command: 'ls' } }], usage: { input: 10, output: 3 } } })
    const i1 = add(a1, { kind: 'tool.intent', body: { callId: 'c1', tool: 'bash', args: { command: 'ls' }, effect: 'workspace', idemKey: 'k' } })
    const r1 = add(i1, { kind: 'tool.result', body: { callId: 'c1', status: 'ok', output: 'a\nb\n' } })
    const a2 = add(r1, { kind: 'assistant', body: { text: 'Two files.', usage: { input: 20, output: 4 } } })
    const stop = add(a2, { kind: 'agent.stopped', body: { epoch: 1, reason: 'done' } })

    const items = buildTranscript(dag.branch(stop.id), kids(dag), { running: false })
    expect(items.map(i => i.kind)).toEqual(['user', 'assistant', 'assistant'])
    const first = items[1] as Extract<TranscriptItem, { kind: 'assistant' }>
    expect(first.text).toBe('Looking.')
    expect(first.usage).toEqual({ input: 10, output: 3 })
    expect(first.tools).toEqual([{ callId: 'c1', name: 'bash', args: { command: 'ls' }, effect: 'workspace', status: 'ok', output: 'a\nb\n' }])
    expect(items.every(i => i.forks.length === 0)).toBe(true)
    expect(sumUsage(dag.entries())).toEqual({ input: 30, output: 7 })
  })

  it('marks a call without a result running while the agent runs, and without a result after', () => {
    const { dag, root, add } = tree()
    const u = add(root, { kind: 'user', body: { text: 'go' } })
    const a = add(u, { kind: 'assistant', body: { text: '', toolCalls: [{ id: 'c1', name: 'bash', args: {} }, { id: 'c2', name: 'http_get', args: {} }] } })
    add(a, { kind: 'tool.intent', body: { callId: 'c1', tool: 'bash', args: { command: 'sleep 9' }, effect: 'workspace', idemKey: 'k' } })
    const running = buildTranscript(dag.branch(), kids(dag), { running: true })[1] as Extract<TranscriptItem, { kind: 'assistant' }>
    expect(running.tools.map(t => t.status)).toEqual(['running', 'pending'])
    expect(running.tools[0]?.args).toEqual({ command: 'sleep 9' }) // the journaled args win
    const stopped = buildTranscript(dag.branch(), kids(dag), { running: false })[1] as Extract<TranscriptItem, { kind: 'assistant' }>
    expect(stopped.tools.map(t => t.status)).toEqual(['interrupted', 'interrupted'])
  })

  it('shows a journal entry without its assistant call as a tool item of its own', () => {
    const { dag, root, add } = tree()
    const u = add(root, { kind: 'user', body: { text: 'x' } })
    const i = add(u, { kind: 'tool.intent', body: { callId: 'z', tool: 'read_file', args: { path: '/a' }, effect: 'read', idemKey: 'k' } })
    add(i, { kind: 'tool.result', body: { callId: 'z', status: 'unknown', output: 'interrupted', truncated: true } })
    const items = buildTranscript(dag.branch(), kids(dag), { running: false })
    expect(items.map(i => i.kind)).toEqual(['user', 'tool'])
    expect(items[1]).toMatchObject({ kind: 'tool', tool: { name: 'read_file', status: 'unknown', output: 'interrupted', truncated: true } })
  })

  it('shows errors, crash loops, cancellations, take-overs and notes in place', () => {
    const { dag, root, add } = tree()
    const u = add(root, { kind: 'user', body: { text: 'x' } })
    const e1 = add(u, { kind: 'agent.stopped', body: { epoch: 1, reason: 'error', message: '401 invalid API key' } })
    const e2 = add(e1, { kind: 'agent.stopped', body: { epoch: 2, reason: 'crash-loop', message: 'boom' } })
    const n = add(e2, { kind: 'note', body: { text: 'moved to laptop' } })
    add(n, { kind: 'agent.started', body: { epoch: 3, reason: 'revival' } })
    const items = buildTranscript(dag.branch(), kids(dag), { running: false })
    expect(items.slice(1).map(i => i.kind === 'notice' ? [i.tone, i.text, i.detail] : i.kind)).toEqual([
      ['error', 'The agent stopped on an error', '401 invalid API key'],
      ['error', 'The agent kept crashing and was stopped', 'boom'],
      ['info', 'moved to laptop', undefined],
      ['warn', expect.stringContaining('revived'), undefined]
    ])
    const base = { v: 1 as const, id: hex(), conversation: hex(), parents: [hex()], author: { device: DEV }, ts: 1 }
    expect(noticeFor({ ...base, kind: 'agent.stopped', body: { epoch: 1, reason: 'cancelled' } })).toEqual({ tone: 'info', text: 'Stopped' })
    expect(noticeFor({ ...base, kind: 'agent.stopped', body: { epoch: 1, reason: 'superseded', by: { device: 'ab'.repeat(32), epoch: 2 } } })?.text).toContain('abababab')
    expect(noticeFor({ ...base, kind: 'agent.stopped', body: { epoch: 1, reason: 'done' } })).toBeUndefined()
    // a stop at this device's limit: a warning with the stop's own words on how to go on
    expect(noticeFor({ ...base, kind: 'agent.stopped', body: { epoch: 1, reason: 'done', limit: 'steps', message: 'send a message' } })).toEqual({ tone: 'warn', text: 'The agent stopped: this turn reached its step limit', detail: 'send a message' })
    expect(noticeFor({ ...base, kind: 'agent.stopped', body: { epoch: 1, reason: 'done', limit: 'tokens', message: 'raise it' } })?.text).toMatch(/token budget/)
    expect(noticeFor({ ...base, kind: 'agent.started', body: { epoch: 1, reason: 'user' } })).toBeUndefined()
    expect(noticeFor({ ...base, kind: 'meta', body: { key: 'title', value: 'x', hlc: { wall: 1, counter: 0, device: DEV } } })).toBeUndefined()
  })

  it('shows an entry from a newer version as a card saying so, and the turn around it as usual', () => {
    const { dag, root, add } = tree()
    const u = add(root, { kind: 'user', body: { text: 'go' } })
    const a = add(u, { kind: 'assistant', body: { text: 'Running it.', toolCalls: [{ id: 'c1', name: 'bash', args: { command: 'ls' } }] } })
    // as the node hands it over: kind 'unknown', the kind and body as written inside
    const unknown = (parent: Entry, kind: string, problem?: string): Entry => {
      const e = { v: 1, id: hex(), conversation: root.id, parents: [parent.id], author: { device: DEV }, ts: parent.ts + 1, kind: 'unknown', body: { kind, body: { whatever: true }, ...(problem !== undefined ? { problem } : {}) } } as Entry
      dag.add(e)
      return e
    }
    const f1 = unknown(a, 'approval.request')
    const r = add(f1, { kind: 'tool.result', body: { callId: 'c1', status: 'ok', output: 'x' } })
    const f2 = unknown(r, 'agent.stopped', 'agent.stopped body.reason Invalid option')
    const next = add(f2, { kind: 'user', body: { text: 'and then?' } })

    const items = buildTranscript(dag.branch(next.id), kids(dag), { running: false })
    expect(items.map(i => i.kind)).toEqual(['user', 'assistant', 'notice', 'notice', 'user'])
    expect((items[1] as Extract<TranscriptItem, { kind: 'assistant' }>).tools[0]?.status).toBe('ok')
    const [n1, n2] = [items[2], items[3]] as Array<Extract<TranscriptItem, { kind: 'notice' }>>
    expect(n1).toMatchObject({ id: f1.id, tone: 'info', text: 'An entry from a newer version of Arbor' })
    expect(n1?.detail).toMatch(/"approval\.request", is new to this version: update Arbor on this device/)
    expect(n2?.detail).toMatch(/cannot read it \(agent\.stopped body\.reason Invalid option\)/)
    expect(groupTurns(items).map(t => t.role)).toEqual(['user', 'agent', 'user'])
  })

  it('puts a fork on the message where the branch splits, and carries forks at hidden entries to the next item', () => {
    const { dag, root, add } = tree()
    const u1 = add(root, { kind: 'user', body: { text: 'first' } })
    const u2 = add(root, { kind: 'user', body: { text: 'first, edited' } })
    const s1 = add(u2, { kind: 'agent.started', body: { epoch: 1, reason: 'user' } })
    add(u2, { kind: 'agent.started', body: { epoch: 2, reason: 'user' } }) // a second device answered too
    const a = add(s1, { kind: 'assistant', body: { text: 'from device one' } })

    const shown = buildTranscript(dag.branch(a.id), kids(dag), { running: false })
    expect(shown.map(i => [i.kind, i.forks.map(f => `${f.index + 1}/${f.count}`)])).toEqual([
      ['user', ['2/2']],
      ['assistant', ['1/2']]
    ])
    expect(shown[0]?.forks[0]).toEqual({ at: u2.id, index: 1, count: 2, prev: u1.id })

    // the other edit: no answer yet, so nothing below it
    const other = buildTranscript(dag.branch(u1.id), kids(dag), { running: false })
    expect(other.map(i => i.kind)).toEqual(['user'])
    expect(other[0]?.forks[0]).toEqual({ at: u1.id, index: 0, count: 2, next: u2.id })
  })

  it('shows a fork at a hidden tip entry on the last item', () => {
    const { dag, root, add } = tree()
    const u = add(root, { kind: 'user', body: { text: 'q' } })
    add(u, { kind: 'agent.started', body: { epoch: 1, reason: 'user' } })
    const s2 = add(u, { kind: 'agent.started', body: { epoch: 2, reason: 'user' } })
    const items = buildTranscript(dag.branch(s2.id), kids(dag), { running: true })
    expect(items).toHaveLength(1)
    expect(items[0]?.forks.map(f => f.at)).toEqual([s2.id])
  })
})

describe('branch navigation', () => {
  it('lists forks along a branch and steps between siblings', () => {
    const { dag, root, add } = tree()
    const a = add(root, { kind: 'user', body: { text: 'a' } })
    const b = add(root, { kind: 'user', body: { text: 'b' } })
    const c = add(root, { kind: 'user', body: { text: 'c' } })
    const branch = dag.branch(b.id)
    expect(forkAt(branch, 0, kids(dag))).toBeUndefined() // the root has no siblings
    const fork = forkAt(branch, 1, kids(dag))
    expect(fork).toEqual({ at: b.id, index: 1, count: 3, prev: a.id, next: c.id })
    expect(stepFork(fork!, -1)).toBe(a.id)
    expect(stepFork(fork!, 1)).toBe(c.id)
    expect([...forksOf(branch, kids(dag)).keys()]).toEqual([1])
    // selecting a sibling shows its branch
    expect(dag.branch(stepFork(fork!, 1)).map(e => e.id)).toEqual([root.id, c.id])
  })

  it('has no forks on a straight line', () => {
    const { dag, root, add } = tree()
    add(add(root, { kind: 'user', body: { text: 'a' } }), { kind: 'assistant', body: { text: 'b' } })
    expect(forksOf(dag.branch(), kids(dag)).size).toBe(0)
  })
})

describe('groupTurns', () => {
  it('makes each user message a turn and groups what follows it', () => {
    const item = (kind: 'user' | 'assistant' | 'notice', id: string): TranscriptItem =>
      kind === 'user'
        ? { kind, id, ts: 0, forks: [], text: id, parent: undefined }
        : kind === 'assistant'
          ? { kind, id, ts: 0, forks: [], text: id, tools: [] }
          : { kind, id, ts: 0, forks: [], tone: 'info', text: id }
    const turns = groupTurns([item('notice', 'n0'), item('user', 'u1'), item('assistant', 'a1'), item('assistant', 'a2'), item('user', 'u2'), item('user', 'u3'), item('notice', 'n3')])
    expect(turns.map(t => [t.role, t.items.map(i => i.id)])).toEqual([
      ['agent', ['n0']],
      ['user', ['u1']],
      ['agent', ['a1', 'a2']],
      ['user', ['u2']],
      ['user', ['u3']],
      ['agent', ['n3']]
    ])
  })
})

describe('a compaction in the transcript', () => {
  it('says what it folded: the range\'s entries, and its messages a line each', () => {
    const { dag, root, add } = tree()
    const u1 = add(root, { kind: 'user', body: { text: 'first   question\nwith two lines' } })
    const a1 = add(u1, { kind: 'assistant', body: { text: 'x'.repeat(300) } })
    const n = add(a1, { kind: 'note', body: { text: 'a note' } })
    const u2 = add(n, { kind: 'user', body: { text: 'second' } })
    const c = add(u2, { kind: 'compaction', body: { summary: 'they asked twice', folded: { from: root.id, to: n.id }, model: 'm', tokens: 9 } })
    const items = buildTranscript(dag.branch(c.id), kids(dag), { running: false })
    const notice = items.find(i => i.id === c.id) as TranscriptItem & { kind: 'notice' }
    expect(notice.detail).toBe('they asked twice')
    expect(notice.folded?.entries).toBe(4)
    expect(notice.folded?.lines.map(l => [l.id, l.who])).toEqual([[u1.id, 'user'], [a1.id, 'agent']])
    expect(notice.folded?.lines[0]?.text).toBe('first question with two lines')
    expect(notice.folded?.lines[1]?.text).toHaveLength(160)
    // a range that is not above it on the branch (a peer may write anything): nothing folded
    const odd = add(c, { kind: 'compaction', body: { summary: 's', folded: { from: u2.id, to: u1.id }, model: 'm', tokens: 1 } })
    const oddItem = buildTranscript(dag.branch(odd.id), kids(dag), { running: false }).find(i => i.id === odd.id) as TranscriptItem & { kind: 'notice' }
    expect(oddItem.folded).toEqual({ entries: 0, lines: [], more: 0 })
  })
})

describe('named branches at a fork', () => {
  it('the switcher knows the names of this branch and its neighbours', () => {
    const { dag, root, add } = tree()
    const a = add(root, { kind: 'user', body: { text: 'a' } })
    const b = add(root, { kind: 'user', body: { text: 'b' } })
    const c = add(root, { kind: 'user', body: { text: 'c' } })
    const names = new Map([[a.id, 'Plan A'], [c.id, 'Plan C']])
    expect(forkAt([root, b], 1, kids(dag), id => names.get(id))?.names).toEqual({ prev: 'Plan A', next: 'Plan C' })
    expect(forkAt([root, a], 1, kids(dag), id => names.get(id))?.names).toEqual({ at: 'Plan A' })
    expect(forkAt([root, a], 1, kids(dag))?.names).toBeUndefined()
    expect(buildTranscript([root, b], kids(dag), { running: false, branchName: id => names.get(id) }).find(i => i.id === b.id)?.forks[0]?.names).toEqual({ prev: 'Plan A', next: 'Plan C' })
  })
})
