import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import type { Entry, EntryOf } from '../../../src/shared/entry/entry'
import { FORK_NOT_RUN } from '../../../src/shared/conversation/fork-copy'
import { AGENT_BUSY_MESSAGE } from '../../../src/main/api/api-service'
import { apiNodes, rejection, scriptedModel, type ApiNode } from '../../helpers/api-nodes'
import { until } from '../../helpers/temp-dir'

// message.retry and conversation.fork against a real node (real Corestore in a temp dir) with
// the scripted model: the entries they write, where, and what they refuse.

const nodes = apiNodes('arbor-api-retry-')

/** A node with the fake model set up, and `work`, a directory for its agents (outside its data). */
async function start (): Promise<ApiNode & { work: string }> {
  const d = await nodes.start('laptop', { bootstrap: undefined, swarm: false })
  await d.api.request('settings.set', { provider: 'fake' })
  return { ...d, work: await nodes.dirs.make() }
}

const ends = (d: ApiNode, id: string): number => d.events.filter(e => e.type === 'agent' && e.conversation === id && !e.running).length

async function entries (d: ApiNode, id: string): Promise<Entry[]> {
  return (await d.api.request('conversation.open', { id })).entries
}

/** The entry a reply answered, above its run's start. */
function answered (all: Entry[], reply: Entry): string {
  let p = all.find(e => e.id === reply.parents[0])
  while (p?.kind === 'agent.started') p = all.find(e => e.id === p?.parents[0])
  return (p as Entry).id
}

describe('message.retry', () => {
  it('runs the agent again from what the reply answered: a sibling branch, the old reply kept, the new model recorded, the branch shown moved', async () => {
    const d = await start()
    const { id } = await d.api.request('conversation.create', { title: 'retry me', cwd: d.work })
    await scriptedModel(d.node, id, d.dir, { default: { text: 'answer by {{model}}' } })
    const { entry: user } = await d.api.request('message.send', { conversation: id, text: 'hello' })
    await until(() => ends(d, id) === 1, 'the first turn')
    const old = (await entries(d, id)).find(e => e.kind === 'assistant') as EntryOf<'assistant'>
    expect(old.body).toMatchObject({ text: 'answer by fake', model: 'fake' })

    const r = await d.api.request('message.retry', { conversation: id.slice(0, 10), entry: old.id.slice(0, 10), model: 'other-model' })
    expect(r).toEqual({ reply: old.id, from: user.id })
    await until(() => ends(d, id) === 2, 'the retry')
    const all = await entries(d, id)
    const replies = all.filter((e): e is EntryOf<'assistant'> => e.kind === 'assistant')
    expect(replies.map(e => e.body.text)).toEqual(['answer by fake', 'answer by other-model'])
    const fresh = replies[1] as EntryOf<'assistant'>
    expect(fresh.body.model).toBe('other-model')
    // siblings: both runs hang from the user message; the old reply is still there, unchanged
    expect(answered(all, fresh)).toBe(user.id)
    expect(answered(all, old)).toBe(user.id)
    expect(all.filter(e => e.parents[0] === user.id).map(e => e.kind)).toEqual(['agent.started', 'agent.started'])
    expect(all.find(e => e.id === old.id)).toEqual(old)
    // the branch shown is the new one (the selection is the message; the branch follows its newest child)
    const dag = await d.node.history.open(id)
    expect(dag.branch(d.node.history.selected(id)).map(e => e.id)).toContain(fresh.id)
    // the override was for that run only: the conversation's setting is as it was
    const again = await d.api.request('message.retry', { conversation: id, entry: fresh.id })
    expect(again.from).toBe(user.id)
    await until(() => ends(d, id) === 3, 'the second retry')
    expect((await entries(d, id)).filter(e => e.kind === 'assistant').map(e => (e as EntryOf<'assistant'>).body.model)).toEqual(['fake', 'other-model', 'fake'])
  })

  it('retries a reply that followed a tool result from that result: the new reply is an exact sibling', async () => {
    const d = await start()
    const { id } = await d.api.request('conversation.create', { title: 'tools', cwd: d.work })
    fs.writeFileSync(path.join(d.work, 'note.txt'), 'inside')
    await scriptedModel(d.node, id, d.dir, { rules: [{ match: 'read', reply: [{ toolCalls: [{ name: 'read_file', args: { path: 'note.txt' } }] }, { text: 'it says {{lastToolOutput}} ({{model}})' }] }] })
    await d.api.request('message.send', { conversation: id, text: 'read it' })
    await until(() => ends(d, id) === 1, 'the first turn')
    const before = await entries(d, id)
    const old = before.filter(e => e.kind === 'assistant').at(-1) as EntryOf<'assistant'>
    const result = before.find(e => e.kind === 'tool.result') as Entry
    expect(old.parents).toEqual([result.id])
    const intents = before.filter(e => e.kind === 'tool.intent').length
    expect((await d.api.request('message.retry', { conversation: id, entry: old.id, model: 'm2' })).from).toBe(result.id)
    await until(() => ends(d, id) === 2, 'the retry')
    const all = await entries(d, id)
    const fresh = all.filter(e => e.kind === 'assistant').at(-1) as EntryOf<'assistant'>
    expect(fresh.body.text).toBe('it says inside (m2)')
    expect(answered(all, fresh)).toBe(result.id)
    expect(all.filter(e => e.kind === 'tool.intent')).toHaveLength(intents) // the tool did not run again
  })

  it('refuses what is not an assistant reply, and while the agent is busy; nothing is written', async () => {
    const d = await start()
    const { id } = await d.api.request('conversation.create', { title: 'refusals', cwd: d.work })
    await scriptedModel(d.node, id, d.dir, { default: { text: 'x'.repeat(300), chunkSize: 4, delayMsPerChunk: 30 } })
    const { entry: user } = await d.api.request('message.send', { conversation: id, text: 'go' })
    await until(() => d.events.some(e => e.type === 'token' && e.conversation === id), 'the first token')
    const size = (await entries(d, id)).length
    expect(await rejection(d.api.request('message.retry', { conversation: id, entry: user.id }))).toBe(AGENT_BUSY_MESSAGE)
    await d.api.request('agent.cancel', { conversation: id })
    await until(() => ends(d, id) === 1, 'the cancel')
    expect(await rejection(d.api.request('message.retry', { conversation: id, entry: user.id }))).toBe(`entry ${user.id.slice(0, 8)} is a "user" entry, not an assistant reply: only a reply can be retried`)
    expect(await rejection(d.api.request('message.retry', { conversation: id, entry: id }))).toMatch(/is a "conversation" entry, not an assistant reply/)
    expect(await rejection(d.api.request('message.retry', { conversation: id, entry: 'ffff' }))).toMatch(/^no entry of this conversation matches "ffff"/)
    expect(await rejection(d.api.call('message.retry', { conversation: id, entry: user.id, model: ' ' }))).toMatch(/model is empty/)
    expect((await entries(d, id)).length).toBe(size + 1) // the cancel's stop only
  })
})

describe('message.retry across two paired devices', () => {
  it('refuses on the laptop a retry of a conversation whose agent runs on the server, saying so and pointing to /resume', async () => {
    const [laptop, server] = await Promise.all([nodes.start('laptop', { heartbeatMs: 200 }), nodes.start('server', { heartbeatMs: 200 })])
    await Promise.all([laptop.api.request('settings.set', { provider: 'fake' }), server.api.request('settings.set', { provider: 'fake' })])
    const { code } = await laptop.api.request('devices.invite', {})
    await server.api.request('devices.join', { code })
    await until(() => laptop.node.sync.peers().some(p => p.connected) && server.node.sync.peers().some(p => p.connected), 'the two devices to connect', 30_000)
    const work = await nodes.dirs.make()
    const { id } = await server.api.request('conversation.create', { title: 'on the server', cwd: work })
    await server.api.request('message.send', { conversation: id, text: 'hi' })
    await until(() => ends(server, id) === 1, 'the server\'s turn')
    const reply = (await entries(server, id)).find(e => e.kind === 'assistant') as Entry
    await until(() => laptop.node.history.summary(id)?.size === (server.node.history.summary(id)?.size ?? 0), 'the laptop to hold the turn', 20_000)
    const size = laptop.node.history.summary(id)?.size
    expect(await rejection(laptop.api.request('message.retry', { conversation: id, entry: reply.id }))).toBe('the agent of this conversation runs on server: retry there, or /resume (`arbor resume`) to move it to this device first')
    expect(laptop.node.history.summary(id)?.size).toBe(size)
    expect(laptop.node.agents.isRunning(id)).toBe(false)
  }, 60_000)
})

describe('conversation.fork', () => {
  it('copies the branch root → entry into a new conversation of this device, parents remapped, recording where it came from; the source unchanged', async () => {
    const d = await start()
    const { id } = await d.api.request('conversation.create', { title: 'source', cwd: d.work })
    await scriptedModel(d.node, id, d.dir, { default: { text: 'reply to {{lastUser}}' } })
    await d.api.request('message.send', { conversation: id, text: 'one' })
    await until(() => ends(d, id) === 1, 'turn one')
    await d.api.request('message.send', { conversation: id, text: 'two' })
    await until(() => ends(d, id) === 2, 'turn two')
    const source = await entries(d, id)
    const at = source.filter(e => e.kind === 'assistant')[0] as Entry // fork after the first reply
    const { id: fid, copied } = await d.api.request('conversation.fork', { conversation: id, entry: at.id.slice(0, 10) })
    expect(await entries(d, id)).toEqual(source)
    const fork = await d.api.request('conversation.open', { id: fid })
    expect(fork.title).toBe('source (fork)')
    const root = fork.entries[0] as EntryOf<'conversation'>
    expect(root.body.forkedFrom).toEqual({ conversation: id, entry: at.id })
    expect(root.author.device).toBe(d.node.device)
    const copies = fork.entries.filter(e => e.kind !== 'meta' && e.kind !== 'conversation')
    expect(copied).toBe(copies.length)
    expect(copies.map(e => [e.kind, (e.body as { text?: string }).text])).toEqual([['user', 'one'], ['assistant', 'reply to one']])
    // a chain: each the child of the one before, under the new root; all of the new conversation
    expect(copies[0]?.parents).toEqual([fid])
    expect(copies[1]?.parents).toEqual([copies[0]?.id])
    for (const e of fork.entries) { expect(e.conversation).toBe(fid); expect(e.author.device).toBe(d.node.device) }
    // this device's own model setting came along: the fork answers with the same script
    expect(fork.entries.some(e => e.kind === 'meta' && e.body.key === 'llm')).toBe(true)
    expect(fork.cwd).toBe(d.work)
    await d.api.request('message.send', { conversation: fid, text: 'three' })
    await until(() => ends(d, fid) === 1, 'the fork\'s turn')
    expect((await entries(d, fid)).filter(e => e.kind === 'assistant').map(e => (e as EntryOf<'assistant'>).body.text)).toEqual(['reply to one', 'reply to three'])
    expect(await rejection(d.api.request('conversation.fork', { conversation: id, entry: 'ffff' }))).toMatch(/^no entry of this conversation matches "ffff"/)
  })

  it('a call the source left open is recorded in the fork as not run, and nothing runs it there (a resume is refused)', async () => {
    const d = await start()
    const { id } = await d.api.request('conversation.create', { title: 'calls', cwd: d.work })
    fs.writeFileSync(path.join(d.work, 'secret.txt'), 'the contents')
    // a read: a call the planner re-runs freely if it is this device's own and has no result
    await scriptedModel(d.node, id, d.dir, { rules: [{ match: 'read', reply: [{ toolCalls: [{ name: 'read_file', args: { path: 'secret.txt' } }] }, { text: 'done' }] }] })
    await d.api.request('message.send', { conversation: id, text: 'read it' })
    await until(() => ends(d, id) === 1, 'the turn')
    const call = (await entries(d, id)).find(e => e.kind === 'assistant') as EntryOf<'assistant'>
    expect(call.body.toolCalls).toHaveLength(1)
    // forked at the reply, before its call's intent and result: the copy is this device's own entry
    const { id: fid } = await d.api.request('conversation.fork', { conversation: id, entry: call.id })
    const resumed = await d.api.request('agent.resume', { conversation: fid }).then(() => 'resumed', (err: Error) => err.message)
    await until(() => !d.node.agents.isRunning(fid), 'no agent in the fork')
    const fork = await entries(d, fid)
    expect(fork.filter(e => e.kind === 'tool.result' && e.body.status === 'ok')).toEqual([]) // the call never ran in the fork
    expect(resumed).toMatch(/^no agent has run in this conversation yet/)
    expect(fork.find(e => e.kind === 'tool.result')).toMatchObject({ body: { callId: call.body.toolCalls?.[0]?.id, status: 'cancelled', output: FORK_NOT_RUN } })
  })
})
