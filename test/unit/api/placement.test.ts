import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import type { ProtocolVersions } from '../../../src/shared/protocol-version'
import { agentStatusText } from '../../../src/main/cli/agent-status'
import type { AgentStatusDto } from '../../../src/shared/api/api'
import type { Entry } from '../../../src/shared/entry/entry'
import { apiNodes, rejection, scriptedModel, type ApiNode } from '../../helpers/api-nodes'
import { until } from '../../helpers/temp-dir'
import { DEFAULT_SUSPECT_AFTER_MS } from '../../../src/main/sync/sync-node'

// The API's placement methods (agent.status, agent.resume, agent.autoRevival) against real
// nodes with the scripted model: one alone, then two paired on a loopback testnet.

const nodes = apiNodes('arbor-api-place-')

/** A node with the fake model set up, on the testnet or with no network at all. */
async function start (name: string, network: boolean): Promise<ApiNode> {
  const d = await nodes.start(name, network ? { heartbeatMs: 200 } : { bootstrap: undefined, swarm: false })
  await d.api.request('settings.set', { provider: 'fake' })
  return d
}

/** Gives the conversation a slow scripted model (its `llm` setting). */
async function slowModel (d: ApiNode, conversation: string): Promise<void> {
  await scriptedModel(d.node, conversation, d.dir, { default: { text: 'x'.repeat(600), chunkSize: 4, delayMsPerChunk: 40 } })
}

const ended = (d: ApiNode, id: string, n: number): boolean => d.events.filter(e => e.type === 'agent' && e.conversation === id && !e.running).length >= n

describe('agent.status, agent.resume and agent.autoRevival on one device', () => {
  it('tells where the agent is and how it moved, refuses a resume with nothing to move, and resumes a waiting message', async () => {
    const d = await start('laptop', false)
    const { id } = await d.api.request('conversation.create', { title: 'alone', cwd: d.dir })
    const fresh = await d.api.request('agent.status', { conversation: id.slice(0, 10) })
    expect(fresh).toEqual({
      conversation: id, owner: null, runningHere: null, announced: [], givingWay: [], autoRevival: false,
      ownerConnected: false, ownerDown: false, online: true, waiting: null, moves: [], names: {}
    } satisfies AgentStatusDto)
    expect(await rejection(d.api.request('agent.resume', { conversation: id }))).toBe('no agent has run in this conversation yet: send a message and it starts on this device')

    await d.api.request('message.send', { conversation: id, text: 'hello' })
    await until(() => ended(d, id, 1), 'the first turn to end')
    const here = { device: d.node.device, name: 'laptop', self: true }
    const after = await d.api.request('agent.status', { conversation: id })
    expect(after).toMatchObject({ owner: { ...here, epoch: 0 }, runningHere: null, ownerConnected: true, ownerDown: false, names: { [d.node.device]: 'laptop' } })
    expect(after.moves.map(m => [m.kind, m.device, m.epoch, m.text])).toEqual([['started', d.node.device, 0, 'started on laptop, epoch 0']])
    expect(await rejection(d.api.request('agent.resume', { conversation: id }))).toBe('the agent is already on this device (epoch 0): send a message to continue')

    // a message written without starting the agent (as `arbor post` does) waits: resume answers it, one epoch up
    const tip = (await d.node.history.open(id)).branch().at(-1) as Entry
    const [waiting] = await d.node.history.append(id, [{ kind: 'user', body: { text: 'still there?' }, parents: [tip.id] }])
    d.node.history.select(id, (waiting as Entry).id)
    expect(await d.api.request('agent.resume', { conversation: id })).toEqual({ device: d.node.device, name: 'laptop', epoch: 1 })
    await until(() => ended(d, id, 2), 'the resumed agent to answer')
    const moved = await d.api.request('agent.status', { conversation: id })
    expect(moved.owner).toEqual({ ...here, epoch: 1 })
    expect(moved.moves.map(m => m.text)).toEqual(['started on laptop, epoch 0', 'resumed on laptop, epoch 1'])
    const entries = (await d.api.request('conversation.open', { id })).entries
    expect(entries.some(e => e.kind === 'assistant' && e.body.text === 'You said: still there?')).toBe(true)
    expect(entries.filter(e => e.kind === 'note')).toEqual([]) // it did not move between devices: nothing to tell the model

    expect(await rejection(d.api.call('agent.resume', { conversation: 'abcdef0123' }))).toMatch(/no conversation matches "abcdef0123"/)
    expect(await rejection(d.api.call('agent.autoRevival', { conversation: id }))).toMatch(/invalid params for agent\.autoRevival: on/)
  })

  it('turns auto-revival on and off with a setting at the tip of the shown branch, not while the agent works', async () => {
    const d = await start('laptop', false)
    const { id } = await d.api.request('conversation.create', { title: 'revive me', cwd: d.dir, autoRevival: true })
    expect((await d.api.request('agent.status', { conversation: id })).autoRevival).toBe(true)
    expect((await d.node.agentStatus(id)).autoRevival).toBe(true)

    const off = await d.api.request('agent.autoRevival', { conversation: id, on: false })
    expect(off.autoRevival).toBe(false)
    expect(d.node.history.summary(id)?.autoRevival).toBe(false)
    expect((await d.node.agentStatus(id)).autoRevival).toBe(false) // placement follows it
    const convo = await d.api.request('conversation.open', { id })
    const meta = convo.entries.at(-1) as Entry
    expect(meta).toMatchObject({ kind: 'meta', parents: [id], body: { key: 'autoRevival', value: false } })
    expect(convo.selected).toBe(meta.id) // the view stays on its branch
    // asking for what is already so writes nothing
    await d.api.request('agent.autoRevival', { conversation: id, on: false })
    expect((await d.node.history.open(id)).size).toBe(2)

    // while the agent works its turn, the setting would split the branch: refused in words
    await slowModel(d, id)
    await d.api.request('message.send', { conversation: id, text: 'take your time' })
    await until(() => d.events.some(e => e.type === 'token'), 'the agent to stream')
    const size = (await d.node.history.open(id)).size
    expect(await rejection(d.api.request('agent.autoRevival', { conversation: id, on: true }))).toBe('the agent is working here: change auto-revival when it has finished its turn (or stop it)')
    expect((await d.node.history.open(id)).size).toBe(size)
    expect((await d.api.request('agent.status', { conversation: id })).runningHere).toMatchObject({ device: d.node.device, epoch: 0 })
    expect(await rejection(d.api.request('agent.resume', { conversation: id }))).toBe('the agent already runs on this device')
    await d.api.request('agent.cancel', { conversation: id })
    await until(() => ended(d, id, 1), 'the agent to stop')
    expect((await d.api.request('agent.autoRevival', { conversation: id, on: true })).autoRevival).toBe(true)
    expect((await d.node.history.open(id)).branch(d.node.history.selected(id)).at(-1)).toMatchObject({ kind: 'meta', body: { key: 'autoRevival', value: true } })
  })
})

describe('agent.resume across two paired devices', () => {
  it('moves the agent from the server to the laptop: the server\'s agent gives way and both devices see the move', async () => {
    const [laptop, server] = await Promise.all([start('laptop', true), start('server', true)])
    const { code } = await laptop.api.request('devices.invite', {})
    await server.api.request('devices.join', { code })
    await until(() => laptop.node.sync.peers().some(p => p.connected) && server.node.sync.peers().some(p => p.connected), 'the two devices to connect', 30_000)

    // the server's agent works slowly on a conversation both hold
    const { id } = await server.api.request('conversation.create', { title: 'on the server', cwd: server.dir })
    await slowModel(server, id)
    await until(() => laptop.node.history.summary(id)?.size === 2, 'the laptop to hold the conversation', 20_000)
    await server.api.request('message.send', { conversation: id, text: 'work on it' })
    await until(async () => (await laptop.api.request('agent.status', { conversation: id })).announced.length === 1, 'the laptop to see the server\'s agent', 20_000)
    const there = await laptop.api.request('agent.status', { conversation: id })
    expect(there).toMatchObject({
      owner: { device: server.node.device, name: 'server', self: false, epoch: 0 },
      runningHere: null, givingWay: [], ownerConnected: true, ownerDown: false, online: true
    })
    expect(there.announced).toEqual([{ device: server.node.device, name: 'server', self: false, epoch: 0 }])

    // resume on the laptop: epoch 1 here; the server's agent is healing until its step (a 6 s model call) ends
    expect(await laptop.api.request('agent.resume', { conversation: id })).toEqual({ device: laptop.node.device, name: 'laptop', epoch: 1 })
    const healing = await laptop.api.request('agent.status', { conversation: id })
    expect(healing.owner).toEqual({ device: laptop.node.device, name: 'laptop', self: true, epoch: 1 })
    expect(healing.givingWay).toEqual([{ device: server.node.device, name: 'server', self: false, epoch: 0 }])
    await until(async () => {
      const s = await server.api.request('agent.status', { conversation: id })
      return s.owner?.device === laptop.node.device && s.runningHere === null && s.moves.some(m => m.kind === 'gave-way')
    }, 'the server to give way and see the laptop\'s agent', 30_000)
    // the laptop uses its own (quick) model, not the server's slow one: its turn ends first, and the server's
    // reply, newer, is the branch shown there; the resume below is judged on it once its stop has arrived too
    await until(async () => [...(await laptop.node.history.open(id)).entries()].some(e => e.kind === 'agent.stopped' && e.author.device === server.node.device), 'the server\'s stop to reach the laptop', 20_000)
    const onServer = await server.api.request('agent.status', { conversation: id })
    expect(onServer.owner).toMatchObject({ name: 'laptop', self: false, epoch: 1 })
    expect(onServer.moves.map(m => m.text)).toEqual([
      'started on server, epoch 0',
      'resumed on laptop from server (epoch 0), epoch 1',
      'server (epoch 0) gave way to laptop (epoch 1)'
    ])
    expect(await rejection(laptop.api.request('agent.resume', { conversation: id }))).toMatch(/^the agent (already runs on this device|is already on this device \(epoch 1\): send a message to continue)$/)

    // the laptop off the network: the server's status says its agent's device is away
    await until(() => ended(laptop, id, 1), 'the laptop\'s agent to finish', 30_000)
    await laptop.api.request('agent.autoRevival', { conversation: id, on: true })
    await until(async () => (await server.api.request('agent.status', { conversation: id })).autoRevival, 'the setting to reach the server', 20_000)
    await laptop.api.request('net.set', { on: false })
    await until(async () => (await server.api.request('agent.status', { conversation: id })).ownerDown, 'the server to see the laptop down', 20_000)
    expect(await server.api.request('agent.status', { conversation: id })).toMatchObject({ ownerConnected: false, ownerDown: true, online: true, autoRevival: true })
    expect(await laptop.api.request('agent.status', { conversation: id })).toMatchObject({ owner: { self: true, epoch: 1 }, ownerConnected: true, online: false })
  }, 90_000)
})

describe('acknowledged intents: a workspace step of an auto-revival conversation starts once another device holds its intent', () => {
  const WRITE = { rules: [{ match: '^write', reply: [{ toolCalls: [{ name: 'write_file', args: { path: 'marker.txt', content: 'ran\n' } }] }, { text: 'written' }] }], default: { text: 'You said: {{lastUser}}' } }
  /** where the laptop's agent works (not its data directory, which tools never see) */
  let work = ''
  const marker = (): boolean => fs.existsSync(path.join(work, 'marker.txt'))
  const waits = (d: ApiNode, id: string): number => d.events.filter(e => e.type === 'agent' && e.conversation === id && e.running).length

  async function pair (versions?: ProtocolVersions): Promise<[ApiNode, ApiNode]> {
    const [laptop, server] = await Promise.all([start('laptop', true), nodes.start('server', { heartbeatMs: 200, ...(versions !== undefined ? { protocolVersions: versions } : {}) })])
    const { code } = await laptop.api.request('devices.invite', {})
    await server.api.request('devices.join', { code })
    await until(() => laptop.node.sync.peers().some(p => p.connected && !p.suspected) && server.node.sync.peers().some(p => p.connected && !p.suspected), 'the two devices to connect', 30_000)
    return [laptop, server]
  }
  async function conversation (laptop: ApiNode, server: ApiNode, autoRevival: boolean): Promise<string> {
    work = await nodes.dirs.make()
    const { id } = await laptop.api.request('conversation.create', { title: 'acked', cwd: work, autoRevival })
    await scriptedModel(laptop.node, id, laptop.dir, WRITE)
    await until(() => server.node.history.summary(id)?.size === 2, 'the server to hold the conversation', 20_000)
    return id
  }
  const doneAfter = async (d: ApiNode, id: string, n: number): Promise<boolean> => [...(await d.node.history.open(id)).entries()].filter(e => e.kind === 'agent.stopped' && e.body.reason === 'done').length >= n

  it('with the only other device gone it waits at the step and says so (never runs it unseen); it runs once the device is back; without auto-revival nothing waits', async () => {
    const [laptop, server] = await pair()
    const id = await conversation(laptop, server, true)
    await server.api.request('net.set', { on: false })
    await until(() => !laptop.node.sync.peers().some(p => p.connected), 'the laptop to lose the server')
    await laptop.api.request('message.send', { conversation: id, text: 'write it' })
    // the intent is written, and nobody else holds it: the step waits (the lease alone let it run at once)
    await until(async () => [...(await laptop.node.history.open(id)).entries()].some(e => e.kind === 'tool.intent'), 'the intent', 10_000)
    await until(async () => (await laptop.api.request('agent.status', { conversation: id })).waiting !== null, 'the agent to say it waits', 10_000)
    await new Promise(resolve => setTimeout(resolve, 1000)) // a second in which the step does not run (the lease still holds)
    expect(marker()).toBe(false)
    const st = await laptop.api.request('agent.status', { conversation: id })
    expect(st.waiting).toMatchObject({ for: 'acknowledgement', why: 'none-connected', text: expect.stringMatching(/^waiting for another device to hold the step before running it: no other device is connected/) })
    expect(st.runningHere).toMatchObject({ self: true })
    const text = agentStatusText({ entries: [...(await laptop.node.history.open(id)).entries()], status: st, live: true, self: laptop.node.device })
    expect(text).toMatch(/\nwaiting: waiting for another device to hold the step before running it: no other device is connected/)
    expect(marker()).toBe(false)

    // a conversation without auto-revival is not held back
    const plainDir = await nodes.dirs.make()
    const plain = await laptop.api.request('conversation.create', { title: 'plain', cwd: plainDir })
    await scriptedModel(laptop.node, plain.id, laptop.dir, WRITE)
    await laptop.api.request('message.send', { conversation: plain.id, text: 'write it' })
    await until(() => doneAfter(laptop, plain.id, 1), 'the plain conversation\'s turn', 10_000)
    expect(fs.existsSync(path.join(plainDir, 'marker.txt'))).toBe(true)
    expect((await laptop.api.request('agent.status', { conversation: plain.id })).waiting).toBeNull()

    await server.api.request('net.set', { on: true })
    await until(() => doneAfter(laptop, id, 1), 'the step to run once the server holds it, and the turn to end', 30_000)
    expect(marker()).toBe(true)
    expect((await laptop.api.request('agent.status', { conversation: id })).waiting).toBeNull()
    const es = [...(await server.node.history.open(id)).entries()]
    await until(async () => [...(await server.node.history.open(id)).entries()].some(e => e.kind === 'agent.stopped'), 'the turn on the server')
    expect(es.filter(e => e.kind === 'agent.started').map(e => e.author.device)).toEqual([laptop.node.device]) // nobody revived it
  }, 90_000)

  it('a device of an older Arbor cannot hold it: the step waits and says which device to update; turning auto-revival off runs it, on the same branch', async () => {
    const [laptop, server] = await pair({ major: 1, minor: 1, oldest: 1, schema: 1 })
    const id = await conversation(laptop, server, true)
    await laptop.api.request('message.send', { conversation: id, text: 'write it' })
    await until(async () => (await laptop.api.request('agent.status', { conversation: id })).waiting !== null, 'the agent to say it waits', 10_000)
    expect((await laptop.api.request('agent.status', { conversation: id })).waiting).toMatchObject({ why: 'older-only', older: [server.node.device], text: expect.stringContaining('server runs an older Arbor that cannot (update Arbor there, or turn auto-revival off to run it now)') })
    await new Promise(resolve => setTimeout(resolve, 500))
    expect(marker()).toBe(false)

    const off = await laptop.api.request('agent.autoRevival', { conversation: id, on: false })
    expect(off.autoRevival).toBe(false)
    await until(() => doneAfter(laptop, id, 1), 'the step to run and the turn to end', 10_000)
    expect(marker()).toBe(true)
    const dag = await laptop.node.history.open(id)
    const meta = [...dag.entries()].find(e => e.kind === 'meta' && e.body.key === 'autoRevival') as Entry
    const result = [...dag.entries()].find(e => e.kind === 'tool.result') as Entry
    expect(dag.get(meta.parents[0] as string)?.kind).toBe('tool.intent') // the setting went below the waiting step
    expect(result.parents).toEqual([meta.id]) // and the step's result follows it: one branch
    expect(waits(laptop, id)).toBeGreaterThan(0)
  }, 90_000)

  it('network off by choice: nobody can revive it, so nothing waits (Available)', async () => {
    const [laptop, server] = await pair()
    const id = await conversation(laptop, server, true)
    await laptop.api.request('net.set', { on: false })
    await laptop.api.request('message.send', { conversation: id, text: 'write it' })
    await until(() => doneAfter(laptop, id, 1), 'the turn to end offline', 10_000)
    expect(marker()).toBe(true)
  }, 60_000)
})

describe('the lease: a device that cannot hear its peers records what the user asks and waits before acting', () => {
  it('a resume on a device cut off from the others (not by choice) is written at once; its agent waits for them, and goes on once they have been gone a full window (dead or cut off: never blocked for ever)', async () => {
    const [laptop, server] = await Promise.all([start('laptop', true), start('server', true)])
    const { code } = await laptop.api.request('devices.invite', {})
    await server.api.request('devices.join', { code })
    await until(() => laptop.node.sync.peers().some(p => p.connected && !p.suspected) && server.node.sync.peers().some(p => p.connected && !p.suspected), 'the two devices to connect', 30_000)
    const { id } = await server.api.request('conversation.create', { title: 'moving', cwd: await nodes.dirs.make(), autoRevival: true })
    await server.api.request('message.send', { conversation: id, text: 'hello' })
    const stopped = async (d: ApiNode): Promise<number> => [...(await d.node.history.open(id)).entries()].filter(e => e.kind === 'agent.stopped').length
    await until(async () => (await stopped(server)) === 1, 'the server\'s first turn', 20_000)
    await until(async () => laptop.node.history.summary(id) !== undefined && (await stopped(laptop)) === 1, 'the laptop to hold the turn', 20_000)

    // the laptop acts under a lease the server renews (its echoes reached it)
    const expiry = (): number => (laptop.node.sync as unknown as { lease: { expiresAt: () => { mono: number } } }).lease.expiresAt().mono
    await until(() => Number.isFinite(expiry()), 'the server to echo the laptop\'s heartbeats', 20_000)
    // the server leaves the network: the laptop is alone, but not by choice (its network is on)
    await server.api.request('net.set', { on: false })
    await until(() => !laptop.node.sync.peers().some(p => p.connected), 'the laptop to lose the server', 20_000)
    const lostAt = Date.now()
    const lease = (): string => { const l = laptop.node.sync as unknown as { lease: { expiresAt: () => unknown }, instant: () => unknown }; return JSON.stringify({ expires: l.lease.expiresAt(), now: l.instant(), peers: laptop.node.sync.peers() }) }
    await until(() => !laptop.node.sync.holdsLease(), 'the laptop\'s lease to expire', 20_000).catch(err => { throw new Error(`${(err as Error).message}: ${lease()}`) })
    expect(await laptop.api.request('agent.resume', { conversation: id })).toMatchObject({ device: laptop.node.device, epoch: 1 })
    // the move is in its history at once, whatever the lease: the user asked for it here
    await until(async () => [...(await laptop.node.history.open(id)).entries()].some(e => e.kind === 'agent.started' && e.author.device === laptop.node.device && e.body.epoch === 1), 'the resumed agent\'s start', 5_000)
    // the server, gone, is owed the lease until this device has suspected it a full window
    // (from the lost connection): the agent waits, says so, then goes on and finds nothing to answer
    await until(async () => (await stopped(laptop)) === 2, 'the agent to go on once the server has been gone a full window', 30_000)
    const goneOn = [...(await laptop.node.history.open(id)).entries()].filter(e => e.kind === 'agent.stopped').at(-1) as Entry
    expect(goneOn.ts - lostAt).toBeGreaterThanOrEqual(DEFAULT_SUSPECT_AFTER_MS - 500) // not before the window (lostAt is read a poll late at most)
    expect((await laptop.api.request('agent.status', { conversation: id })).waiting).toBeNull()
  }, 120_000)
})
