// The open conversation on the client, and the sidebar list, kept current from node events.
import { describe, expect, it } from 'vitest'
import type { ApiEvent, ConversationDto, ConversationSummaryDto } from '../../../src/shared/api/api'
import type { Entry } from '../../../src/shared/entry/entry'
import { ConversationStore, MAX_LIVE_OUTPUT } from '../../../src/renderer/chat/conversation-store'
import { formatCount, formatWhen, placesText } from '../../../src/renderer/common/format'
import { applyListEvent, filterConversations, sortConversations } from '../../../src/renderer/sidebar/conversation-list'

const DEV = 'd'.repeat(64)
const C = 'c'.repeat(64)
const id = (n: number): string => n.toString(16).padStart(64, '0')
const root: Entry = { v: 1, id: C, conversation: C, parents: [], author: { device: DEV }, ts: 1, kind: 'conversation', body: { title: 'Fix the build', nonce: 'n', cwd: '/home/me/proj' } }
const user = (n: number, parent: string, text: string): Entry => ({ v: 1, id: id(n), conversation: C, parents: [parent], author: { device: DEV }, ts: n, kind: 'user', body: { text } })
const assistant = (n: number, parent: string, text: string, usage?: { input: number; output: number }): Entry =>
  ({ v: 1, id: id(n), conversation: C, parents: [parent], author: { device: DEV }, ts: n, kind: 'assistant', body: usage === undefined ? { text } : { text, usage } })

function dto (entries: Entry[], extra: Partial<ConversationDto> = {}): ConversationDto {
  return { id: C, title: 'Fix the build', entries, running: false, agents: [], usage: { input: 5, output: 1 }, ...extra }
}

const HERE = { device: DEV, name: 'laptop', self: true }
const SERVER = { device: 'b'.repeat(64), name: 'server', self: false }
/** A streamed piece of the run `run`, for a message that will be a child of `parent`. */
const token = (delta: string, parent: string, run = 'r1', conversation = C): ApiEvent => ({ type: 'token', conversation, device: DEV, run, parent, delta })

describe('ConversationStore', () => {
  it('starts from conversation.open and follows live entries, tokens and the running flag', () => {
    const u = user(2, C, 'hello')
    const s = new ConversationStore(dto([root, u], { selected: u.id, cwd: '/home/me/proj' }))
    let notified = 0
    s.subscribe(() => notified++)
    expect(s.snapshot()).toMatchObject({ title: 'Fix the build', cwd: '/home/me/proj', selected: u.id, running: false, streaming: '', usage: { input: 5, output: 1 } })

    expect(s.apply({ type: 'agent', conversation: C, running: true, agents: [HERE] })).toBe(true)
    s.apply(token('Hel', u.id))
    s.apply(token('lo!', u.id))
    expect(s.snapshot()).toMatchObject({ streaming: 'Hello!', streamParent: u.id, agents: [HERE] })
    expect(s.apply(token('other', u.id, 'r1', 'e'.repeat(64)))).toBe(false)
    expect(s.apply({ type: 'net', state: { online: false, peers: 0, paired: 1, bootstrap: [] } })).toBe(false)
    expect(s.apply({ type: 'peer', device: DEV, state: 'connected' })).toBe(false)

    const before = s.snapshot()
    s.apply({ type: 'entries', conversation: C, entries: [assistant(3, u.id, 'Hello!', { input: 100, output: 7 })] })
    const after = s.snapshot()
    expect(after).not.toBe(before) // a new snapshot for React
    expect(after.streaming).toBe('')
    expect(after.usage).toEqual({ input: 105, output: 8 })
    expect(s.branch().map(e => e.kind)).toEqual(['conversation', 'user', 'assistant'])
    // the same entries again change nothing (and count no usage twice)
    const n = notified
    s.apply({ type: 'entries', conversation: C, entries: [assistant(3, u.id, 'Hello!', { input: 100, output: 7 })] })
    expect(notified).toBe(n) // nothing new: no re-render
    expect(s.snapshot().usage).toEqual({ input: 105, output: 8 })

    // a late piece of the recorded message is dropped; a new stream ends with the agent
    s.apply(token('late', u.id))
    expect(s.snapshot().streaming).toBe('')
    s.apply(token('more', id(3), 'r2'))
    expect(s.snapshot()).toMatchObject({ streaming: 'more', streamParent: id(3) })
    s.apply({ type: 'agent', conversation: C, running: false, agents: [] })
    expect(s.snapshot()).toMatchObject({ running: false, streaming: '', agents: [] })
    expect(s.snapshot().streamParent).toBeUndefined()
  })

  it('keeps live tool output per call, bounded, until the result is recorded', () => {
    const s = new ConversationStore(dto([root]))
    s.apply({ type: 'tool-output', conversation: C, device: DEV, run: 'r1', callId: 'c1', chunk: 'line 1\n' })
    s.apply({ type: 'tool-output', conversation: C, device: DEV, run: 'r1', callId: 'c1', chunk: 'line 2\n' })
    s.apply({ type: 'tool-output', conversation: C, device: DEV, run: 'r1', callId: 'c2', chunk: 'x'.repeat(MAX_LIVE_OUTPUT + 10) })
    expect(s.snapshot().toolOutput.get('c1')).toBe('line 1\nline 2\n')
    expect(s.snapshot().toolOutput.get('c2')).toHaveLength(MAX_LIVE_OUTPUT)
    const result: Entry = { v: 1, id: id(9), conversation: C, parents: [C], author: { device: DEV }, ts: 9, kind: 'tool.result', body: { callId: 'c1', status: 'ok', output: 'line 1\nline 2\n' } }
    s.addEntries([result])
    expect(s.snapshot().toolOutput.has('c1')).toBe(false)
    expect(s.snapshot().toolOutput.has('c2')).toBe(true)
  })

  it('keeps the streamed text with the branch it extends, with its reasoning, until its message is recorded', () => {
    const a = user(2, C, 'a')
    const b = user(3, C, 'b')
    const s = new ConversationStore(dto([root, a, b], { selected: a.id, running: true, agents: [HERE] }))
    s.apply({ type: 'reasoning', conversation: C, device: DEV, run: 'r1', parent: a.id, delta: 'Let me think. ' })
    s.apply({ type: 'reasoning', conversation: C, device: DEV, run: 'r1', parent: a.id, delta: 'Done.' })
    s.apply(token('Answer', a.id))
    expect(s.snapshot()).toMatchObject({ thinking: 'Let me think. Done.', streaming: 'Answer', streamParent: a.id })
    // an answer recorded on another branch does not end this stream
    s.addEntries([assistant(4, b.id, 'answer to b')])
    expect(s.snapshot()).toMatchObject({ streaming: 'Answer', streamParent: a.id })
    // the next model call of the run starts a new message after a new tip
    s.addEntries([assistant(5, a.id, 'Answer')])
    expect(s.snapshot()).toMatchObject({ streaming: '', thinking: '' })
    s.apply(token('Next', id(5)))
    expect(s.snapshot()).toMatchObject({ streaming: 'Next', thinking: '', streamParent: id(5) })
    // an agent that stops there ends it too
    const stopped: Entry = { v: 1, id: id(6), conversation: C, parents: [id(5)], author: { device: DEV, agent: 'agent#0' }, ts: 6, kind: 'agent.stopped', body: { epoch: 0, reason: 'cancelled' } }
    s.addEntries([stopped])
    expect(s.snapshot().streaming).toBe('')
  })

  it('follows tools starting and ending live, until their results are recorded', () => {
    const s = new ConversationStore(dto([root], { running: true, agents: [SERVER] }))
    s.apply({ type: 'tool-start', conversation: C, device: SERVER.device, run: 'r1', callId: 'c1', tool: 'bash', args: { command: 'ls' } })
    expect(s.snapshot().toolStatus.get('c1')).toBe('running')
    const v = s.snapshot().version
    s.apply({ type: 'tool-start', conversation: C, device: SERVER.device, run: 'r1', callId: 'c1', tool: 'bash', args: { command: 'ls' } })
    expect(s.snapshot().version).toBe(v) // nothing new
    s.apply({ type: 'tool-end', conversation: C, device: SERVER.device, run: 'r1', callId: 'c1', status: 'error' })
    expect(s.snapshot().toolStatus.get('c1')).toBe('error')
    const result: Entry = { v: 1, id: id(9), conversation: C, parents: [C], author: { device: DEV }, ts: 9, kind: 'tool.result', body: { callId: 'c1', status: 'error', output: 'no such file' } }
    s.addEntries([result])
    expect(s.snapshot().toolStatus.has('c1')).toBe(false)
  })

  it('shows the selected branch and follows it as it grows', () => {
    const a = user(2, C, 'a')
    const b = user(3, C, 'b')
    const s = new ConversationStore(dto([root, a, b]))
    expect(s.branch().at(-1)?.id).toBe(b.id) // no selection: the newest head
    s.select(a.id)
    expect(s.snapshot().selected).toBe(a.id)
    s.addEntries([assistant(4, a.id, 'answer to a')])
    expect(s.branch().map(e => e.id)).toEqual([C, a.id, id(4)])
  })

  it('uses a title set later (meta) over the root title', () => {
    const meta: Entry = { v: 1, id: id(5), conversation: C, parents: [C], author: { device: DEV }, ts: 5, kind: 'meta', body: { key: 'title', value: 'Renamed', hlc: { wall: 5, counter: 0, device: DEV } } }
    const s = new ConversationStore(dto([root]))
    s.addEntries([meta])
    expect(s.snapshot().title).toBe('Renamed')
  })

  it('keeps the view (all but the streamed text) the same object while a reply streams', () => {
    const u = user(2, C, 'hello')
    const s = new ConversationStore(dto([root, u]))
    s.apply({ type: 'agent', conversation: C, running: true, agents: [] })
    const idle = s.view()
    expect(idle).toMatchObject({ running: true, hasStreaming: false })
    s.apply(token('Hel', u.id))
    const started = s.view()
    expect(started).not.toBe(idle) // the reply appears: the chat re-renders once
    expect(started.hasStreaming).toBe(true)
    for (const d of ['lo', ' the', 're']) s.apply(token(d, u.id))
    expect(s.view()).toBe(started) // growth alone: no re-render of the chat
    expect(s.streamingText()).toBe('Hello there')
    expect(s.snapshot().streaming).toBe('Hello there')
    s.addEntries([assistant(3, u.id, 'Hello there')])
    expect(s.view()).not.toBe(started)
    expect(s.view()).toMatchObject({ hasStreaming: false })
    expect(s.streamingText()).toBe('')
  })
})

const summary = (id: string, title: string, updatedAt: number, extra: Partial<ConversationSummaryDto> = {}): ConversationSummaryDto =>
  ({ id, title, createdAt: 0, updatedAt, size: 1, heads: 1, waiting: 0, running: false, agents: [], ...extra })

describe('conversation list', () => {
  const list = [summary('1', 'Fix the build', 10), summary('2', 'Café menu', 30), summary('3', 'build a shed', 20), summary('4', '', 5)]

  it('sorts newest first', () => {
    expect(sortConversations(list).map(c => c.id)).toEqual(['2', '3', '1', '4'])
  })

  it('filters titles by every word, ignoring case and accents', () => {
    expect(filterConversations(list, 'BUILD').map(c => c.id)).toEqual(['1', '3'])
    expect(filterConversations(list, 'build fix').map(c => c.id)).toEqual(['1'])
    expect(filterConversations(list, 'cafe').map(c => c.id)).toEqual(['2'])
    expect(filterConversations(list, 'untitled').map(c => c.id)).toEqual(['4'])
    expect(filterConversations(list, '   ')).toHaveLength(4)
  })

  it('applies events: running flags and where, activity, and unknown conversations', () => {
    const a = applyListEvent(list, { type: 'agent', conversation: '3', running: true, agents: [HERE] })
    expect(a.list.find(c => c.id === '3')).toMatchObject({ running: true, agents: [HERE] })
    expect(applyListEvent(a.list, { type: 'agent', conversation: '3', running: true, agents: [HERE] }).list).toBe(a.list)
    // the agent moves: still running, somewhere else
    const moved = applyListEvent(a.list, { type: 'agent', conversation: '3', running: true, agents: [SERVER] })
    expect(moved.list.find(c => c.id === '3')).toMatchObject({ running: true, agents: [SERVER] })
    expect(placesText([HERE, SERVER])).toBe('here and on server')
    const e = applyListEvent(list, { type: 'entries', conversation: '1', entries: [user(99, C, 'x')] })
    expect(e.list.find(c => c.id === '1')).toMatchObject({ updatedAt: 99, size: 2 })
    expect(applyListEvent(list, { type: 'entries', conversation: 'new', entries: [] }).unknown).toBe(true)
    expect(applyListEvent(list, token('x', C, 'r1', 'new'))).toEqual({ list, unknown: false })
    expect(applyListEvent(list, { type: 'net', state: { online: true, peers: 0, paired: 0, bootstrap: [] } })).toEqual({ list, unknown: false })
  })

  it('formats times and counts briefly', () => {
    const now = new Date(2025, 5, 15, 12, 0, 0).getTime()
    expect(formatWhen(now - 5_000, now)).toBe('now')
    expect(formatWhen(now - 5 * 60_000, now)).toBe('5 min')
    expect(formatWhen(now - 3 * 3_600_000, now)).toBe('3 h')
    expect(formatWhen(new Date(2025, 5, 14, 23, 0).getTime(), now)).toBe('yesterday')
    expect(formatCount(999)).toBe('999')
    expect(formatCount(1234)).toBe('1.2k')
    expect(formatCount(12_345)).toBe('12k')
    expect(formatCount(2_000_000)).toBe('2M')
  })
})
