import { describe, expect, it } from 'vitest'
import type { AgentPlaceDto, ApiEvent } from '../../../src/shared/api/api'
import type { Entry } from '../../../src/shared/entry/entry'
import { apiNodes, rejection, scriptedModel, type ApiNode } from '../../helpers/api-nodes'
import { until } from '../../helpers/temp-dir'

// The API of two paired nodes on a loopback testnet: where a conversation's agent runs (the
// presence the other device announces), its live events relayed from there, and the network.

const nodes = apiNodes('arbor-presence-')
const start = (name: string): Promise<ApiNode> => nodes.start(name, { heartbeatMs: 200 })

const connected = (d: ApiNode): boolean => d.events.some(e => e.type === 'net' && e.state.peers === 1) && d.node.sync.peers().some(p => p.connected)

/** The last `agent` event a device sent for a conversation. */
const lastAgent = (d: ApiNode, id: string): { running: boolean; agents: AgentPlaceDto[] } | undefined =>
  d.events.findLast((e): e is Extract<ApiEvent, { type: 'agent' }> => e.type === 'agent' && e.conversation === id)

describe('the API of two paired devices', () => {
  it('shows where an agent runs from presence, relays its stream, sends messages to it, and follows the network', async () => {
    const [laptop, server] = await Promise.all([start('laptop'), start('server')])
    const { code } = await laptop.api.request('devices.invite', {})
    await server.api.request('devices.join', { code })
    await until(() => connected(laptop) && connected(server), 'the two devices to connect', 30_000)
    expect(await laptop.api.request('net.get', {})).toMatchObject({ online: true, peers: 1, paired: 1 })

    // a conversation on the server with a slow scripted model that thinks first
    await server.api.request('settings.set', { provider: 'fake' })
    const { id } = await server.api.request('conversation.create', { title: 'on the server', cwd: server.dir })
    await scriptedModel(server.node, id, server.dir, { default: { reasoning: 'Thinking it over.', text: 'x'.repeat(2000), chunkSize: 4, delayMsPerChunk: 50 } })
    await until(async () => (await laptop.api.request('conversations.list', {})).some(c => c.id === id && c.size === 2), 'the laptop to hold the conversation', 20_000)
    await server.api.request('message.send', { conversation: id, text: 'go slowly' })

    // the laptop learns where it runs: events, the list, the conversation, the devices
    const there: AgentPlaceDto = { device: server.node.device, name: 'server', self: false }
    await until(() => lastAgent(laptop, id)?.running === true, 'the laptop to see the server\'s agent', 20_000)
    expect(lastAgent(laptop, id)).toMatchObject({ running: true, agents: [there] })
    expect((await laptop.api.request('conversations.list', {})).find(c => c.id === id)).toMatchObject({ running: true, agents: [there] })
    expect(await laptop.api.request('conversation.open', { id })).toMatchObject({ running: true, agents: [there] })
    const rows = await laptop.api.request('devices.list', {})
    expect(rows.find(r => r.device === server.node.device)?.agents).toEqual([{ conversation: id, title: 'on the server' }])
    expect(rows.find(r => r.self)?.agents).toEqual([])
    expect((await server.api.request('devices.list', {})).find(r => r.self)?.agents).toEqual([{ conversation: id, title: 'on the server' }])

    // its stream arrives, naming the device, the run and the branch it extends
    await until(() => laptop.events.some(e => e.type === 'token' && e.conversation === id), 'the server\'s tokens on the laptop', 20_000)
    const started = (await server.api.request('conversation.open', { id })).entries.find(e => e.kind === 'agent.started') as Entry
    const relayed = laptop.events.filter(e => (e.type === 'token' || e.type === 'reasoning') && e.conversation === id)
    expect(relayed.every(e => 'parent' in e && e.parent === started.id && e.device === server.node.device)).toBe(true)
    expect(relayed.filter(e => e.type === 'reasoning').map(e => 'delta' in e ? e.delta : '').join('')).toBe('Thinking it over.')
    expect(new Set(relayed.map(e => 'run' in e ? e.run : '')).size).toBe(1)

    // one agent per side: a message posted on the laptop goes to the server's agent; none starts here
    const sent = await laptop.api.request('message.send', { conversation: id, text: 'me too' })
    expect(sent.agent).toEqual({ device: server.node.device, name: 'server', reachable: true })
    expect(laptop.node.agents.isRunning(id)).toBe(false)
    expect(await rejection(laptop.api.request('agent.cancel', { conversation: id }))).toBe('the agent of this conversation runs on server; stop it there')

    // offline, the laptop knows of no agent there; back online, presence tells it again
    await laptop.api.request('net.set', { on: false })
    expect(laptop.events.findLast(e => e.type === 'net')).toMatchObject({ state: { online: false, peers: 0, paired: 1 } })
    await until(() => lastAgent(laptop, id)?.running === false, 'the laptop to forget the server\'s agent', 10_000)
    expect(lastAgent(laptop, id)?.agents).toEqual([])
    await laptop.api.request('net.set', { on: true })
    await until(() => lastAgent(laptop, id)?.running === true, 'the laptop to hear of the agent again', 30_000)
    expect(laptop.events.findLast(e => e.type === 'net')).toMatchObject({ state: { online: true, peers: 1, paired: 1 } })

    // the server stops it; then its agent takes up the laptop's message, and is stopped too: it runs nowhere
    await server.api.request('agent.cancel', { conversation: id })
    const answering = async (): Promise<boolean> => {
      const dag = await server.node.history.open(id)
      return [...dag.entries()].some(e => e.kind === 'agent.started' && dag.pathTo(e.id).some(p => p.id === sent.entry.id))
    }
    await until(answering, 'the server\'s agent to take up the laptop\'s message', 20_000)
    await until(() => server.node.agents.isRunning(id), 'the server\'s agent to run', 20_000)
    await server.api.request('agent.cancel', { conversation: id })
    await until(() => lastAgent(laptop, id)?.running === false, 'the laptop to see the agent stop', 20_000)
    expect((await laptop.api.request('conversations.list', {})).find(c => c.id === id)).toMatchObject({ running: false, agents: [] })
  }, 90_000)
})
