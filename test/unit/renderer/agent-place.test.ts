// The chat's words for where the agent runs: the agent bar, healing, messages sent to another
// device's agent, the message box's commands, and the transcript's lifecycle lines.
import { describe, expect, it } from 'vitest'
import type { AgentRefDto, AgentStatusDto, ApiEvent } from '../../../src/shared/api/api'
import type { Entry, EntryDraft } from '../../../src/shared/entry/entry'
import { affectsPlacement, commandHelp, parseCommand, placeView, sentText, stillWaiting, unknownCommandText } from '../../../src/renderer/chat/agent-place'
import { noticeFor } from '../../../src/renderer/transcript/notices'
import { waitText } from '../../../src/shared/conversation/agent-wait'

const LAPTOP = 'a'.repeat(64)
const SERVER = 'b'.repeat(64)
const C = 'c'.repeat(64)
const laptop = (epoch: number): AgentRefDto => ({ device: LAPTOP, name: 'laptop', self: true, epoch })
const server = (epoch: number): AgentRefDto => ({ device: SERVER, name: 'server', self: false, epoch })

function status (over: Partial<AgentStatusDto>): AgentStatusDto {
  return { conversation: C, owner: null, runningHere: null, announced: [], givingWay: [], autoRevival: false, ownerConnected: false, ownerDown: false, online: true, waiting: null, moves: [], names: {}, ...over }
}

describe('placeView', () => {
  it('says where the agent is, its epoch and its state, and offers Resume only when it is elsewhere', () => {
    expect(placeView(status({}))).toEqual({ text: 'Agent: not started yet — your first message starts it on this device', tone: 'muted', healing: [], canResume: false })
    expect(placeView(status({ owner: laptop(2), ownerConnected: true }))).toMatchObject({ text: 'Agent: this device · epoch 2', tone: 'ok', canResume: false })
    expect(placeView(status({ owner: laptop(2), runningHere: laptop(2), ownerConnected: true })).text).toBe('Agent: this device · epoch 2 · working')
    expect(placeView(status({ owner: server(1), ownerConnected: true }))).toEqual({ text: 'Agent: server · epoch 1', tone: 'ok', healing: [], canResume: true })
    expect(placeView(status({ owner: server(1), announced: [server(1)], ownerConnected: true })).text).toBe('Agent: server · epoch 1 · working')
    expect(placeView(status({ owner: server(1), ownerDown: true }))).toMatchObject({ text: 'Agent: server · epoch 1 (not responding)', tone: 'warn', canResume: true })
    expect(placeView(status({ owner: server(1) })).text).toBe('Agent: server · epoch 1 (not connected)')
    expect(placeView(status({ owner: server(1), ownerDown: true, online: false })).text).toBe('Agent: server · epoch 1 (not connected: this device is offline)')
  })

  it('says when the agent here waits for another device to hold its step, and why', () => {
    const wait = { for: 'acknowledgement' as const, since: 1, why: 'older-only' as const, older: [SERVER] }
    const text = waitText(wait, d => d === SERVER ? 'server' : d)
    expect(text).toBe('waiting for another device to hold the step before running it: server runs an older Arbor that cannot (update Arbor there, or turn auto-revival off to run it now)')
    expect(placeView(status({ owner: laptop(0), runningHere: laptop(0), ownerConnected: true, autoRevival: true, waiting: { ...wait, text } }))).toEqual({ text: 'Agent: this device · epoch 0 · waiting', tone: 'warn', healing: [], canResume: false, waiting: text })
    expect(waitText({ ...wait, why: 'none-connected', older: [] }, d => d)).toMatch(/: no other device is connected \(it goes on when one connects, or turn auto-revival off to run it now\)$/)
  })

  it('names the agents giving way while two sides heal', () => {
    const v = placeView(status({ owner: server(3), announced: [server(3)], runningHere: laptop(2), givingWay: [laptop(2)], ownerConnected: true }))
    expect(v.healing).toEqual(["healing: this device's agent is giving way"])
    expect(v.canResume).toBe(false) // one works here already (and stops at its next step)
    expect(placeView(status({ owner: laptop(3), runningHere: laptop(3), announced: [server(2)], givingWay: [server(2)], ownerConnected: true })).healing).toEqual(["healing: server's agent is giving way"])
  })
})

describe('sentText', () => {
  it('says where a message went, and what to do when that device is away', () => {
    expect(sentText({ device: SERVER, name: 'server', reachable: true })).toBe('Sent to the agent on server')
    expect(sentText({ device: SERVER, name: 'server', reachable: false })).toBe('server is not connected: the message waits for it — type /resume to run the agent here')
  })
})

describe('the message box commands', () => {
  it('knows /resume, refuses a one-word unknown command, and sends anything else', () => {
    expect(parseCommand('/resume')).toEqual({ kind: 'command', name: '/resume' })
    expect(parseCommand('  /Resume \n')).toEqual({ kind: 'command', name: '/resume' })
    expect(parseCommand('/resum')).toEqual({ kind: 'unknown', name: '/resum' })
    expect(parseCommand('/resume now please')).toBeNull()
    expect(parseCommand('/usr/bin is missing')).toBeNull()
    expect(parseCommand('/etc/hosts')).toBeNull()
    expect(parseCommand('resume')).toBeNull()
    expect(unknownCommandText('/resum')).toBe('/resum is not a command (the commands are /resume, /compact); to send it as a message, write more than the one word')
    // /compact takes what to focus on; a message that starts with its word is still a message only when longer than a command
    expect(parseCommand('/compact')).toEqual({ kind: 'command', name: '/compact' })
    expect(parseCommand(' /compact  the file layout\n')).toEqual({ kind: 'command', name: '/compact', text: 'the file layout' })
    expect(parseCommand('/compactify')).toEqual({ kind: 'unknown', name: '/compactify' })
  })

  it('helps while a command is typed', () => {
    expect(commandHelp('/')).toBe('/resume — run the agent on this device from now on · /compact — summarise the conversation before the latest message, to free the model\'s context (/compact what to focus on) (Enter)')
    expect(commandHelp('/re')).toBe('/resume — run the agent on this device from now on (Enter)')
    expect(commandHelp('/x')).toBe('No command /x: the commands are /resume, /compact')
    expect(commandHelp('/resume now')).toBeUndefined()
    expect(commandHelp('hello')).toBeUndefined()
    expect(commandHelp('')).toBeUndefined()
  })
})

let n = 0
const entry = (device: string, draft: Omit<EntryDraft, 'parents'>): Entry =>
  ({ v: 1, id: (++n).toString(16).padStart(64, '0'), conversation: C, parents: ['d'.repeat(64)], author: { device }, ts: n, kind: draft.kind, body: draft.body }) as Entry

describe('affectsPlacement', () => {
  it('asks again on this conversation\'s lifecycle entries, its agent events, peers and the network', () => {
    const started = entry(SERVER, { kind: 'agent.started', body: { epoch: 1, reason: 'resume' } })
    const said = entry(SERVER, { kind: 'assistant', body: { text: 'hi' } })
    const setting = entry(LAPTOP, { kind: 'meta', body: { key: 'autoRevival', value: true, hlc: { wall: 1, counter: 0, device: LAPTOP } } })
    const cases: Array<[ApiEvent, boolean]> = [
      [{ type: 'entries', conversation: C, entries: [said, started] }, true],
      [{ type: 'entries', conversation: C, entries: [setting] }, true],
      [{ type: 'entries', conversation: C, entries: [said] }, false],
      [{ type: 'entries', conversation: 'e'.repeat(64), entries: [started] }, false],
      [{ type: 'agent', conversation: C, running: true, agents: [] }, true],
      [{ type: 'agent', conversation: 'e'.repeat(64), running: true, agents: [] }, false],
      [{ type: 'peer', device: SERVER, state: 'suspected' }, true],
      [{ type: 'net', state: { online: false, peers: 0, paired: 1, bootstrap: [] } }, true],
      [{ type: 'token', conversation: C, device: SERVER, run: 'r', parent: said.id, delta: 'x' }, false]
    ]
    for (const [ev, want] of cases) expect(affectsPlacement(ev, C), JSON.stringify(ev).slice(0, 80)).toBe(want)
  })
})

describe('stillWaiting', () => {
  it('keeps a message waiting for another device\'s agent until it answers, or an agent elsewhere takes over', () => {
    const agent = { device: SERVER, name: 'server', reachable: true }
    const before = entry(LAPTOP, { kind: 'assistant', body: { text: 'earlier' } })
    const msg = entry(LAPTOP, { kind: 'user', body: { text: 'hi' } })
    const started = entry(SERVER, { kind: 'agent.started', body: { epoch: 0, reason: 'user' } })
    const answer = entry(SERVER, { kind: 'assistant', body: { text: 'hello' } })
    const note = entry(LAPTOP, { kind: 'note', body: { text: 'now runs on laptop' } })
    const resumed = entry(LAPTOP, { kind: 'agent.started', body: { epoch: 1, reason: 'resume' } })
    expect(stillWaiting([before, msg], msg.id, agent)).toBe(true)
    expect(stillWaiting([before, msg, started], msg.id, agent)).toBe(true) // it started on it: no answer yet
    expect(stillWaiting([before, msg, started, answer], msg.id, agent)).toBe(false)
    expect(stillWaiting([before, msg, note, resumed], msg.id, agent)).toBe(false) // resumed here
    expect(stillWaiting([before], msg.id, agent)).toBe(false) // another branch
  })
})

describe('lifecycle lines in the transcript', () => {
  const ctx = { self: LAPTOP, name: (d: string) => d === SERVER ? 'server' : d === LAPTOP ? 'laptop' : d.slice(0, 8) }
  it('say where the agent moved and why, with device names', () => {
    expect(noticeFor(entry(LAPTOP, { kind: 'agent.started', body: { epoch: 2, reason: 'resume', previous: { device: SERVER, epoch: 1 } } }), ctx))
      .toEqual({ tone: 'info', text: 'Agent moved to this device (resumed from server) · epoch 2', system: true })
    expect(noticeFor(entry(SERVER, { kind: 'agent.started', body: { epoch: 3, reason: 'revival', previous: { device: LAPTOP, epoch: 2 } } }), ctx)?.text)
      .toBe('Agent moved to server (revived after this device stopped responding) · epoch 3')
    expect(noticeFor(entry(SERVER, { kind: 'agent.started', body: { epoch: 3, reason: 'revival', previous: { device: LAPTOP, epoch: 2 } } }), { name: ctx.name })?.text)
      .toBe('Agent moved to server (revived after laptop stopped responding) · epoch 3')
    expect(noticeFor(entry(SERVER, { kind: 'agent.started', body: { epoch: 1, reason: 'restart' } }), ctx)?.text).toBe('Agent restarted on server after a crash · epoch 1')
    expect(noticeFor(entry(LAPTOP, { kind: 'agent.stopped', body: { epoch: 2, reason: 'superseded', by: { device: SERVER, epoch: 3 } } }), ctx))
      .toEqual({ tone: 'warn', text: "Agent on this device gave way: server's agent (epoch 3) took over", system: true })
    expect(noticeFor(entry(SERVER, { kind: 'agent.stopped', body: { epoch: 1, reason: 'crash-loop', message: 'boom' } }), ctx))
      .toEqual({ tone: 'error', text: 'The agent on server kept crashing and was stopped', detail: 'boom', system: true })
    expect(noticeFor(entry(SERVER, { kind: 'agent.started', body: { epoch: 1, reason: 'user' } }), ctx)).toBeUndefined()
  })
})
