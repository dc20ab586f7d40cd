import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { MessageChannel, type MessagePort } from 'node:worker_threads'
import type { ApiEvent, ServerMessage } from '../../../src/shared/api/api'
import { memoryLogger } from '../../../src/shared/logger'
import { ArborNode } from '../../../src/main/node'
import { ServedNode } from '../../../src/main/api/served-node'
import type { FromNode, ToNode } from '../../../src/main/electron/node-process-protocol'
import { NodeProcess } from '../../../src/main/electron/node-process'
import { parentChannel } from '../../helpers/node-ports'
import { apiNodes } from '../../helpers/api-nodes'
import { until } from '../../helpers/temp-dir'

// The desktop app's node (the utilityProcess body) on plain Node: a real ArborNode in a temp
// dir, driven through real MessagePorts (worker_threads) shaped as Electron's parentPort and
// MessagePortMain. Only Electron is absent; the wire format is the WebSocket's.

const { dirs, bootstrap, defer } = apiNodes('arbor-port-')

interface Harness {
  proc: NodeProcess
  dir: string
  exits: number[]
  /** what the node said to main */
  said: FromNode[]
  post: (msg: ToNode, ports?: MessagePort[]) => void
  onSaid: (fn: (m: FromNode) => void) => void
  /** a new API channel, sent to the node as main sends one per window */
  connect: () => Client
}

async function nodeProcess (opts: { dir?: string; start?: Partial<Extract<ToNode, { type: 'start' }>>; connectFirst?: boolean } = {}): Promise<Harness & { first?: Client }> {
  const dir = opts.dir ?? await dirs.make()
  const channel = parentChannel()
  defer(() => channel.close())
  const exits: number[] = []
  const proc = new NodeProcess({
    parent: channel.parent,
    exit: code => { exits.push(code) },
    env: {},
    log: memoryLogger(),
    version: 'test',
    node: { bootstrap: bootstrap(), name: 'laptop', env: { HOME: dir }, log: memoryLogger() }
  })
  defer(() => proc.close())
  const post = (msg: ToNode, ports: MessagePort[] = []): void => { channel.main.post(msg, ports) }
  const connect = (): Client => {
    const { port1, port2 } = new MessageChannel()
    post({ type: 'connect' }, [port1])
    defer(() => { port2.close() })
    return client(port2)
  }
  // A window may be connected before the node has opened: its requests wait.
  const first = opts.connectFirst === true ? connect() : undefined
  post({ type: 'start', dataDir: dir, secrets: {}, secretsDescription: 'kept by the test', ...opts.start })
  return {
    proc,
    dir,
    exits,
    said: channel.main.received as FromNode[],
    post,
    onSaid: fn => { channel.main.onMessage(m => fn(m as FromNode)) },
    connect,
    ...(first !== undefined ? { first } : {})
  }
}

interface Client {
  port: MessagePort
  request: (method: string, params?: unknown) => Promise<ServerMessage>
  /** the result, or a thrown Error with the node's message */
  call: <T = unknown>(method: string, params?: unknown) => Promise<T>
  events: ApiEvent[]
  closed: () => boolean
}

/** The renderer's side of a port: JSON text requests, responses matched by id, events kept. */
function client (port: MessagePort): Client {
  let next = 1
  let closed = false
  const waiting = new Map<number, (m: ServerMessage) => void>()
  const events: ApiEvent[] = []
  port.on('message', (text: unknown) => {
    expect(typeof text).toBe('string') // the same JSON text frames as the WebSocket
    const m = JSON.parse(text as string) as ServerMessage
    if ('event' in m) events.push(m.event)
    else waiting.get(m.id)?.(m)
  })
  port.on('close', () => { closed = true })
  const request = (method: string, params: unknown = {}): Promise<ServerMessage> => new Promise(resolve => {
    const id = next++
    waiting.set(id, resolve)
    port.postMessage(JSON.stringify({ id, method, params }))
  })
  return {
    port,
    request,
    call: async <T>(method: string, params: unknown = {}): Promise<T> => {
      const m = await request(method, params)
      if ('error' in m) throw new Error(m.error.message)
      return (m as { result: T }).result
    },
    events,
    closed: () => closed
  }
}

describe('the desktop app\'s node over MessagePorts (src/main/electron/node-process.ts)', () => {
  it('opens on main\'s start, serves the API on every port main sends, and stops serving a port that closes', async () => {
    const h = await nodeProcess({ connectFirst: true })
    const ui = h.first as Client
    // asked before the node was open: answered once it is
    const hello = await ui.call<{ device: string; version: string }>('hello')
    await h.proc.ready()
    expect(hello).toEqual({ device: h.proc.arbor?.device, name: 'laptop', version: 'test' })
    expect(h.said).toContainEqual({ type: 'ready', device: hello.device })

    await ui.call('settings.set', { provider: 'fake' })
    const work = await dirs.make()
    const { id } = await ui.call<{ id: string }>('conversation.create', { title: 'Over a port', cwd: work })
    expect(await ui.call('conversations.list')).toEqual([expect.objectContaining({ id, title: 'Over a port', size: 1 })])
    await ui.call('message.send', { conversation: id, text: 'hi there' })
    await until(() => ui.events.some(e => e.type === 'agent' && !e.running), 'the agent to end')
    expect(ui.events.flatMap(e => e.type === 'token' && e.conversation === id ? [e.delta] : []).join('')).toBe('You said: hi there')
    const kinds = ui.events.flatMap(e => e.type === 'entries' && e.conversation === id ? e.entries.map(x => x.kind) : [])
    expect(kinds).toEqual(['conversation', 'user', 'agent.started', 'assistant', 'agent.stopped'])
    const open = await ui.call<{ entries: Array<{ kind: string }> }>('conversation.open', { id: id.slice(0, 8) })
    expect(open.entries.map(e => e.kind)).toEqual(kinds)

    expect(await ui.request('no.such.method')).toMatchObject({ error: { message: expect.stringMatching(/unknown method "no.such.method"/) } })
    expect(h.proc.connections).toBe(1)

    // a second window (or the same one after a reload) gets a port of its own
    const other = h.connect()
    await until(() => h.proc.connections === 2, 'the second port to be served')
    expect((await other.call<{ device: string }>('hello')).device).toBe(hello.device)
    ui.port.close()
    await until(() => h.proc.connections === 1, 'the closed port to be dropped')
    const before = ui.events.length
    await other.call('conversation.create', { title: 'after the first window went', cwd: work })
    await until(() => other.events.some(e => e.type === 'entries' && e.entries[0]?.kind === 'conversation' && e.conversation !== id), 'the event on the open port')
    expect(ui.events.length).toBe(before)
    expect(h.exits).toEqual([])
  })

  it('answers malformed frames with the wire format\'s errors', async () => {
    const h = await nodeProcess()
    await h.proc.ready()
    const { port1, port2 } = new MessageChannel()
    h.post({ type: 'connect' }, [port1])
    defer(() => { port2.close() })
    const raw: ServerMessage[] = []
    port2.on('message', (text: string) => { raw.push(JSON.parse(text) as ServerMessage) })
    port2.postMessage('{ not json')
    port2.postMessage({ id: 1, method: 'hello' })
    port2.postMessage(JSON.stringify({ method: 'hello' }))
    await until(() => raw.length === 3, 'three answers')
    expect(raw).toEqual([
      { id: -1, error: { message: expect.stringMatching(/messages are JSON text/) } },
      { id: -1, error: { message: expect.stringMatching(/messages are JSON text/) } },
      { id: -1, error: { message: 'a request needs an integer "id"' } }
    ])
  })

  it('keeps the API key with main: the key main sent is used, a new one is stored only once main says so, and main\'s refusal reaches the UI', async () => {
    const h = await nodeProcess({ start: { secrets: { apiKey: 'sk-from-the-keychain' }, secretsDescription: 'encrypted by the system keychain' } })
    let refuse: string | undefined
    const asked: Array<Extract<FromNode, { type: 'secret-set' }>> = []
    h.onSaid(m => {
      if (m.type !== 'secret-set') return
      asked.push(m)
      h.post(refuse === undefined ? { type: 'secret-saved', id: m.id } : { type: 'secret-saved', id: m.id, error: refuse })
    })
    await h.proc.ready()
    const ui = h.connect()
    expect(await ui.call('settings.get')).toEqual({ provider: 'openai', apiKeySet: true, apiKeyStorage: 'encrypted by the system keychain', maxSteps: 50 })
    await ui.call('settings.set', { provider: 'openai', baseURL: 'http://127.0.0.1:9/v1' })
    const work = await dirs.make()
    const { id } = await ui.call<{ id: string }>('conversation.create', { cwd: work })
    const keyOfAgent = async (): Promise<unknown> => ((await (h.proc.arbor as ArborNode).agentConfig(id)).config.provider as unknown as { apiKey?: string }).apiKey
    expect(await keyOfAgent()).toBe('sk-from-the-keychain')

    await ui.call('settings.set', { apiKey: 'sk-new' })
    expect(asked.at(-1)).toMatchObject({ type: 'secret-set', name: 'apiKey', value: 'sk-new' })
    expect(await keyOfAgent()).toBe('sk-new')

    refuse = 'the keychain is locked'
    expect(await ui.request('settings.set', { apiKey: 'sk-newer' })).toMatchObject({ error: { message: 'the key was not stored: the keychain is locked' } })
    expect(await keyOfAgent()).toBe('sk-new')

    refuse = undefined
    expect(await ui.call('settings.set', { apiKey: '' })).toMatchObject({ apiKeySet: false })
    expect(asked.at(-1)).toMatchObject({ name: 'apiKey', value: null })
    expect(fs.existsSync(path.join(h.dir, 'secrets.json'))).toBe(false) // never in plain text here
  })

  it('shutdown closes the node (its data directory can be opened again), closes the ports, and exits 0', async () => {
    const h = await nodeProcess()
    await h.proc.ready()
    const ui = h.connect()
    await ui.call('hello')
    h.post({ type: 'shutdown' })
    await until(() => h.exits.length > 0, 'the exit')
    expect(h.exits).toEqual([0])
    expect(h.proc.arbor).toBeNull()
    await until(() => ui.closed(), 'the port to close')
    const again = new ServedNode(new ArborNode({ dataDir: h.dir, bootstrap: bootstrap(), env: { HOME: h.dir }, log: memoryLogger() }), { log: memoryLogger() })
    await again.ready() // the store and the CLI's socket were released
    await again.close()
    await h.proc.stop() // SIGTERM after shutdown: nothing more
    expect(h.exits).toEqual([0])
  })

  it('a node that cannot open says why to main and exits 1', async () => {
    const dir = await dirs.make()
    const holder = new ArborNode({ dataDir: dir, bootstrap: bootstrap(), env: { HOME: dir }, log: memoryLogger() })
    await holder.ready()
    defer(() => holder.close())
    const h = await nodeProcess({ dir })
    await expect(h.proc.ready()).rejects.toThrow(/another Arbor process is using/)
    await until(() => h.exits.length > 0, 'the exit')
    expect(h.exits).toEqual([1])
    expect(h.said).toEqual([{ type: 'failed', message: expect.stringMatching(/another Arbor process is using .*; stop it/) }])
  })
})
