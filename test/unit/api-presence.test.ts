import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import createTestnet from 'hyperdht/testnet.js'
import type { AgentPlaceDto, ApiEvent } from '../../src/shared/api'
import type { Entry } from '../../src/shared/entry'
import { tickHlc } from '../../src/shared/hlc'
import { memoryLogger } from '../../src/shared/logger'
import { ApiService } from '../../src/main/api/api-service'
import { ArborNode } from '../../src/main/node'
import { tempDirs, until } from '../helpers/temp-dir'

// The API of two paired nodes on a loopback testnet: where a conversation's agent runs (the
// presence the other device announces), its live events relayed from there, and the network.

const dirs = tempDirs('arbor-presence-')
let testnet: { bootstrap: Array<{ host: string; port: number }>; destroy: () => Promise<void> }
const open: Array<{ node: ArborNode; api: ApiService }> = []

beforeAll(async () => { testnet = await createTestnet(3) })
afterAll(async () => { await testnet.destroy() })
afterEach(async () => {
  for (const { node, api } of open.splice(0)) { api.close(); await node.close() }
  await dirs.cleanup()
})

interface Device { node: ArborNode; api: ApiService; events: ApiEvent[]; dir: string }

async function start (name: string): Promise<Device> {
  const dir = await dirs.make()
  const node = new ArborNode({ dataDir: dir, api: false, bootstrap: testnet.bootstrap, name, env: { HOME: dir }, log: memoryLogger(), heartbeatMs: 200 })
  await node.ready()
  const api = new ApiService(node, { version: 'test' })
  open.push({ node, api })
  const events: ApiEvent[] = []
  api.subscribe(ev => { events.push(ev) })
  return { node, api, events, dir }
}

const connected = (d: Device): boolean => d.events.some(e => e.type === 'net' && e.state.peers === 1) && d.node.sync.peers().some(p => p.connected)

/** The last `agent` event a device sent for a conversation. */
const lastAgent = (d: Device, id: string): { running: boolean; agents: AgentPlaceDto[] } | undefined =>
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
    const script = path.join(server.dir, 'slow.json')
    fs.writeFileSync(script, JSON.stringify({ default: { reasoning: 'Thinking it over.', text: 'x'.repeat(2000), chunkSize: 4, delayMsPerChunk: 50 } }))
    const tip = (await server.node.history.open(id)).branch().at(-1) as Entry
    await server.node.history.append(id, [{ kind: 'meta', body: { key: 'llm', value: { provider: 'fake', script }, hlc: tickHlc(null, Date.now(), server.node.device) }, parents: [tip.id] }])
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

async function rejection (p: Promise<unknown>): Promise<string> {
  const err = await p.then(() => null, (e: unknown) => e)
  expect(err).toBeInstanceOf(Error)
  return (err as Error).message
}
