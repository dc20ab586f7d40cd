// The renderer's API client over a fake transport: typed calls matched by id, events,
// reconnection with backoff, and what happens to requests when the connection drops.
import { describe, expect, it } from 'vitest'
import type { ClientMessage } from '../../../src/shared/api/api'
import { ApiClient, ApiError, reconnectDelay, type ConnectionStatus, type Timers, type Transport } from '../../../src/shared/api/api-client'
import { apiSocketUrl, hashWithoutToken, tokenFromHash } from '../../../src/renderer/transport-websocket'

class FakeTransport implements Transport {
  sent: ClientMessage[] = []
  private msgFns: Array<(t: string) => void> = []
  private closeFns: Array<(r?: string) => void> = []
  closedByClient = false
  send (text: string): void { this.sent.push(JSON.parse(text) as ClientMessage) }
  onMessage (fn: (t: string) => void): void { this.msgFns.push(fn) }
  onClose (fn: (r?: string) => void): void { this.closeFns.push(fn) }
  close (): void { this.closedByClient = true; this.drop('closed') }
  deliver (msg: unknown): void { for (const f of this.msgFns) f(typeof msg === 'string' ? msg : JSON.stringify(msg)) }
  drop (reason?: string): void { for (const f of this.closeFns) f(reason) }
}

/** Manual timers: nothing runs until the test advances the clock. */
class ManualTimers implements Timers {
  t = 0
  private queue: Array<{ at: number; fn: () => void; id: number }> = []
  private ids = 0
  now (): number { return this.t }
  setTimeout (fn: () => void, ms: number): unknown { const id = ++this.ids; this.queue.push({ at: this.t + ms, fn, id }); return id }
  clearTimeout (h: unknown): void { this.queue = this.queue.filter(q => q.id !== h) }
  pendingDelays (): number[] { return this.queue.map(q => q.at - this.t) }
  async advance (ms: number): Promise<void> {
    this.t += ms
    for (;;) {
      const due = this.queue.filter(q => q.at <= this.t).sort((a, b) => a.at - b.at)[0]
      if (due === undefined) break
      this.queue = this.queue.filter(q => q !== due)
      due.fn()
      await flush()
    }
  }
}

const flush = async (): Promise<void> => { for (let i = 0; i < 5; i++) await Promise.resolve() }

/** A client whose connect() hands out the transports (or failures) the test queues. */
function setup () {
  const timers = new ManualTimers()
  const outcomes: Array<FakeTransport | Error> = []
  const made: FakeTransport[] = []
  let attempts = 0
  const client = new ApiClient({
    timers,
    random: () => 0,
    initialDelayMs: 100,
    maxDelayMs: 1000,
    connect: async () => {
      attempts++
      const next = outcomes.shift() ?? new FakeTransport()
      if (next instanceof Error) throw next
      made.push(next)
      return next
    }
  })
  const states: ConnectionStatus[] = []
  client.onStatus(s => states.push(s))
  return { client, timers, outcomes, made, states, attempts: () => attempts }
}

describe('ApiClient', () => {
  it('matches responses to requests by id, whatever their order', async () => {
    const { client, made } = setup()
    client.start()
    await flush()
    const t = made[0] as FakeTransport
    const list = client.call('conversations.list', { query: 'x' })
    const hello = client.call('hello', {})
    expect(t.sent).toEqual([
      { id: 1, method: 'conversations.list', params: { query: 'x' } },
      { id: 2, method: 'hello', params: {} }
    ])
    t.deliver({ id: 2, result: { device: 'd', name: 'laptop', version: '0.1.0' } })
    t.deliver({ id: 1, error: { message: 'no such thing' } })
    await expect(hello).resolves.toEqual({ device: 'd', name: 'laptop', version: '0.1.0' })
    await expect(list).rejects.toThrow(new ApiError('no such thing', 'conversations.list'))
  })

  it('delivers events to subscribers until they unsubscribe, and ignores garbage', async () => {
    const { client, made } = setup()
    client.start()
    await flush()
    const t = made[0] as FakeTransport
    const seen: unknown[] = []
    const off = client.onEvent(ev => seen.push(ev))
    t.deliver('not json')
    t.deliver({ id: 99, result: 1 }) // nobody asked
    t.deliver(null)
    t.deliver({ event: { type: 'token', conversation: 'c', delta: 'hi' } })
    off()
    t.deliver({ event: { type: 'token', conversation: 'c', delta: 'again' } })
    expect(seen).toEqual([{ type: 'token', conversation: 'c', delta: 'hi' }])
  })

  it('keeps a throwing subscriber from breaking the others', async () => {
    const { client, made } = setup()
    client.start()
    await flush()
    const seen: string[] = []
    const orig = console.error
    console.error = () => undefined
    try {
      client.onEvent(() => { throw new Error('bad handler') })
      client.onEvent(ev => seen.push(ev.type))
      ;(made[0] as FakeTransport).deliver({ event: { type: 'agent', conversation: 'c', running: true } })
    } finally { console.error = orig }
    expect(seen).toEqual(['agent'])
  })

  it('queues calls made before the connection opens and sends them once it does', async () => {
    const { client, made } = setup()
    const p = client.call('hello', {})
    client.start()
    await flush()
    const t = made[0] as FakeTransport
    expect(t.sent.map(m => m.method)).toEqual(['hello'])
    t.deliver({ id: t.sent[0]!.id, result: { device: 'd', name: 'n', version: 'v' } })
    await expect(p).resolves.toMatchObject({ name: 'n' })
  })

  it('fails calls in flight when the connection drops, reconnects with backoff, then sends queued calls', async () => {
    const { client, timers, made, outcomes, states } = setup()
    client.start()
    await flush()
    expect(client.status).toMatchObject({ state: 'open', opened: 1 })
    const inFlight = client.call('message.send', { conversation: 'c', text: 'hi' })
    outcomes.push(new Error('refused'), new Error('refused'))
    ;(made[0] as FakeTransport).drop('code 1006')
    await expect(inFlight).rejects.toThrow(/connection lost \(code 1006\); it may or may not have taken effect/)
    expect(client.status).toMatchObject({ state: 'reconnecting', attempts: 1, error: 'code 1006', retryAt: 100 })

    const queued = client.call('conversations.list', {})
    await timers.advance(100) // attempt 1 fails → wait 200
    expect(client.status).toMatchObject({ state: 'reconnecting', attempts: 2, error: 'refused' })
    expect(timers.pendingDelays()).toEqual([200])
    await timers.advance(200) // attempt 2 fails → wait 400
    expect(timers.pendingDelays()).toEqual([400])
    await timers.advance(400) // attempt 3 succeeds
    expect(client.status).toMatchObject({ state: 'open', attempts: 0, opened: 2 })
    const t2 = made[1] as FakeTransport
    expect(t2.sent.map(m => m.method)).toEqual(['conversations.list'])
    t2.deliver({ id: t2.sent[0]!.id, result: [] })
    await expect(queued).resolves.toEqual([])
    expect(states.map(s => s.state)).toEqual(['open', 'reconnecting', 'reconnecting', 'reconnecting', 'open'])
  })

  it('retries at once when asked', async () => {
    const { client, timers, outcomes, attempts } = setup()
    outcomes.push(new Error('down'))
    client.start()
    await flush()
    expect(client.status.state).toBe('reconnecting')
    client.retryNow()
    await flush()
    expect(attempts()).toBe(2)
    expect(client.status.state).toBe('open')
    expect(timers.pendingDelays()).toEqual([])
  })

  it('closes: rejects everything pending and stops reconnecting', async () => {
    const { client, made, timers, attempts } = setup()
    client.start()
    await flush()
    const p = client.call('hello', {})
    client.close()
    await expect(p).rejects.toThrow(/closed/)
    expect((made[0] as FakeTransport).closedByClient).toBe(true)
    await timers.advance(10_000)
    expect(attempts()).toBe(1)
    await expect(client.call('hello', {})).rejects.toThrow(/closed/)
  })
})

describe('reconnectDelay', () => {
  it('doubles from the initial delay up to the cap, with jitter only downwards', () => {
    expect([1, 2, 3, 4, 5, 6].map(n => reconnectDelay(n, 500, 10_000, 0))).toEqual([500, 1000, 2000, 4000, 8000, 10_000])
    expect(reconnectDelay(100, 500, 10_000, 0)).toBe(10_000)
    expect(reconnectDelay(1, 500, 10_000, 1)).toBe(375)
  })
})

describe('WebSocket address', () => {
  it('takes the token from the fragment and builds the same-origin /api address', () => {
    expect(tokenFromHash('#token=abc123')).toBe('abc123')
    expect(tokenFromHash('#x=1&token=ff')).toBe('ff')
    expect(tokenFromHash('')).toBeUndefined()
    expect(tokenFromHash('#token=')).toBeUndefined()
    expect(hashWithoutToken('#token=abc')).toBe('')
    expect(hashWithoutToken('#x=1&token=abc')).toBe('#x=1')
    expect(apiSocketUrl('http://127.0.0.1:4567/#token=abc', 'abc')).toBe('ws://127.0.0.1:4567/api?token=abc')
    expect(apiSocketUrl('https://box.example:8443/some/page?q=1', 'a b')).toBe('wss://box.example:8443/api?token=a+b')
    expect(apiSocketUrl('http://localhost:80/', undefined)).toBe('ws://localhost/api')
  })
})
