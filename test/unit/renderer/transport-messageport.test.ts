import { afterEach, describe, expect, it } from 'vitest'
import { ApiClient, type ConnectionStatus } from '../../../src/shared/api/api-client'
import { MessagePortConnector, type BridgeWindow } from '../../../src/renderer/transport-messageport'
import type { ClientMessage } from '../../../src/shared/api/api'
import { until } from '../../helpers/temp-dir'

// The desktop transport over real MessagePorts (Node's web-compatible ones): ports arrive as
// window messages from the preload; the node's end is played by the test.

const closers: Array<() => void> = []
afterEach(() => { for (const c of closers.splice(0).reverse()) c() })

/** A window: the preload posts to it; only messages whose source is this window count. */
type TestWindow = BridgeWindow & { deliver: (data: unknown, ports?: MessagePort[], source?: unknown) => void }

function bridgeWindow (): TestWindow {
  const target = new EventTarget()
  const win: TestWindow = {
    addEventListener: (type: 'message', fn: (e: MessageEvent) => void) => { target.addEventListener(type, fn as EventListener) },
    removeEventListener: (type: 'message', fn: (e: MessageEvent) => void) => { target.removeEventListener(type, fn as EventListener) },
    deliver: (data: unknown, ports: MessagePort[] = [], source: unknown = win) => {
      target.dispatchEvent(Object.assign(new Event('message'), { data, ports, source }))
    }
  }
  return win
}

/** The node's end of a new API channel: answers hello with `name`; returns its end for the test. */
function nodeEnd (name: string): { page: MessagePort; node: MessagePort; received: ClientMessage[] } {
  const { port1, port2 } = new MessageChannel()
  const received: ClientMessage[] = []
  port1.onmessage = ev => {
    const msg = JSON.parse(ev.data as string) as ClientMessage
    received.push(msg)
    port1.postMessage(JSON.stringify({ id: msg.id, result: { device: name, name, version: 'test' } }))
  }
  closers.push(() => { port1.close(); port2.close() })
  return { page: port2, node: port1, received }
}

function desktopClient (win: BridgeWindow): { client: ApiClient; statuses: ConnectionStatus[]; connector: MessagePortConnector } {
  const connector = new MessagePortConnector(win)
  const client = new ApiClient({ connect: connector.connect, initialDelayMs: 5, maxDelayMs: 20, random: () => 0 })
  const statuses: ConnectionStatus[] = []
  client.onStatus(s => { statuses.push(s) })
  closers.push(() => { client.close(); connector.close() })
  return { client, statuses, connector }
}

describe('the renderer\'s MessagePort transport', () => {
  it('waits for the port main sends, then speaks the API over it', async () => {
    const win = bridgeWindow()
    const { client } = desktopClient(win)
    client.start()
    const hello = client.call('hello', {})
    await new Promise(resolve => setTimeout(resolve, 20))
    expect(client.status.state).toBe('connecting') // no port yet: the request waits
    const a = nodeEnd('node-a')
    win.deliver({ type: 'arbor:api-port' }, [a.page])
    expect(await hello).toMatchObject({ device: 'node-a' })
    expect(a.received).toEqual([{ id: 1, method: 'hello', params: {} }])
    expect(client.status).toMatchObject({ state: 'open', opened: 1 })
  })

  it('ignores messages that are not the preload\'s (another source, or no port)', async () => {
    const win = bridgeWindow()
    const { client } = desktopClient(win)
    client.start()
    const stranger = nodeEnd('stranger')
    win.deliver({ type: 'arbor:api-port' }, [stranger.page], { not: 'this window' })
    win.deliver({ type: 'arbor:api-port' }, [])
    win.deliver('arbor:api-port')
    await new Promise(resolve => setTimeout(resolve, 20))
    expect(client.status.state).toBe('connecting')
    const real = nodeEnd('real')
    win.deliver({ type: 'arbor:api-port' }, [real.page])
    expect(await client.call('hello', {})).toMatchObject({ device: 'real' })
    expect(stranger.received).toEqual([])
  })

  it('the node going down shows as reconnecting with main\'s reason; the port to the restarted node reconnects it', async () => {
    const win = bridgeWindow()
    const { client, statuses } = desktopClient(win)
    client.start()
    win.deliver({ type: 'arbor:api-port' }, [nodeEnd('first').page])
    await until(() => client.status.state === 'open', 'the first connection')

    win.deliver({ type: 'arbor:node-down', reason: 'the node stopped unexpectedly (exit code 1); restarting it' })
    expect(client.status).toMatchObject({ state: 'reconnecting', error: 'the node stopped unexpectedly (exit code 1); restarting it' })
    const waiting = client.call('hello', {}) // made while it is down: sent once it is back
    await new Promise(resolve => setTimeout(resolve, 30))
    expect(client.status.state).toBe('reconnecting')

    const second = nodeEnd('second')
    win.deliver({ type: 'arbor:api-port' }, [second.page])
    expect(await waiting).toMatchObject({ device: 'second' })
    expect(client.status).toMatchObject({ state: 'open', opened: 2 })
    expect(statuses.map(s => s.state)).toEqual(['open', 'reconnecting', 'open'])
  })

  it('a new port replaces the one before it (main reconnected the page), even without a node-down', async () => {
    const win = bridgeWindow()
    const { client } = desktopClient(win)
    client.start()
    const first = nodeEnd('first')
    win.deliver({ type: 'arbor:api-port' }, [first.page])
    await until(() => client.status.state === 'open', 'the first connection')
    win.deliver({ type: 'arbor:api-port' }, [nodeEnd('second').page])
    expect(client.status).toMatchObject({ state: 'reconnecting', error: 'the node restarted' })
    expect(await client.call('hello', {})).toMatchObject({ device: 'second' })
    expect(client.status.opened).toBe(2)
    expect(first.received).toEqual([])
  })

  it('a port that comes while nobody waits is kept for the next connect; a node-down drops it', async () => {
    const win = bridgeWindow()
    const { connector } = desktopClient(win)
    const dead = nodeEnd('dead')
    let deadClosed = false
    dead.node.addEventListener('close', () => { deadClosed = true })
    win.deliver({ type: 'arbor:api-port' }, [dead.page])
    win.deliver({ type: 'arbor:node-down', reason: 'gone' })
    await until(() => deadClosed, 'the stale port to be closed')
    const kept = nodeEnd('kept')
    win.deliver({ type: 'arbor:api-port' }, [kept.page])
    const t = await connector.connect()
    const answers: string[] = []
    t.onMessage(text => { answers.push(text) })
    t.send(JSON.stringify({ id: 7, method: 'hello', params: {} }))
    await until(() => answers.length === 1, 'the answer')
    expect(JSON.parse(answers[0] as string)).toMatchObject({ id: 7, result: { device: 'kept' } })
  })

  it('a transport closes its port when the client closes it, and reports a peer that closed', async () => {
    const win = bridgeWindow()
    const { connector } = desktopClient(win)
    const a = nodeEnd('a')
    win.deliver({ type: 'arbor:api-port' }, [a.page])
    const t = await connector.connect()
    const reasons: Array<string | undefined> = []
    t.onClose(r => { reasons.push(r) })
    a.node.close() // the node's end went away
    await until(() => reasons.length === 1, 'the close')
    expect(reasons).toEqual(['the node closed the connection'])
    expect(() => t.send('{}')).toThrow(/the connection to the node is closed/)
    t.onClose(r => { reasons.push(r) }) // a late listener still hears it
    expect(reasons).toHaveLength(2)

    const b = nodeEnd('b')
    let bClosed = false
    b.node.addEventListener('close', () => { bClosed = true })
    win.deliver({ type: 'arbor:api-port' }, [b.page])
    const u = await connector.connect()
    u.close?.()
    await until(() => bClosed, 'the node\'s end to see the close')
  })
})
