// A client's side of the API (src/shared/api/api.ts) over any message transport: the renderer's
// WebSocket or MessagePort, the CLI's local socket or an in-process node. DOM-free, so the UI
// and the CLI share it. Requests are matched to responses by id;
// events go to subscribers. When the transport drops, the client reconnects with backoff:
// requests made meanwhile wait for the connection, requests in flight fail (their outcome
// is unknown), and subscribers learn the state so the UI can say "reconnecting…" and reload.
import { backoffDelay } from '../backoff'
import type { ApiEvent, ApiMethod, ApiMethods, ClientMessage, ServerMessage } from './api'

/** A connected, message-oriented channel. `onClose` fires once, when it ends for any reason. */
export interface Transport {
  send (text: string): void
  onMessage (fn: (text: string) => void): void
  onClose (fn: (reason?: string) => void): void
  close? (): void
}

export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'closed'

export interface ConnectionStatus {
  state: ConnectionState
  /** failed attempts since the connection was last open */
  attempts: number
  /** when the next attempt is due (ms since epoch), while reconnecting */
  retryAt?: number
  /** why the last attempt or connection failed */
  error?: string
  /** how many times the connection has opened; > 1 means it was re-established */
  opened: number
}

export class ApiError extends Error {
  constructor (message: string, readonly method?: ApiMethod) {
    super(message)
    this.name = 'ApiError'
  }
}

export interface Timers {
  now (): number
  setTimeout (fn: () => void, ms: number): unknown
  clearTimeout (handle: unknown): void
}

export interface ApiClientOptions {
  /** opens a new transport; rejects if it cannot */
  connect: () => Promise<Transport>
  /** first retry delay, doubled per failure up to maxDelayMs (defaults 500 / 10 000) */
  initialDelayMs?: number
  maxDelayMs?: number
  /** 0..1, spreads retries of many clients; default Math.random */
  random?: () => number
  timers?: Timers
}

const defaultTimers: Timers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: h => clearTimeout(h as ReturnType<typeof setTimeout>)
}

/** The retry delay after `attempts` failures: exponential, capped, with up to 25% jitter off (a reconnect never waits past the cap). */
export function reconnectDelay (attempts: number, initialMs: number, maxMs: number, random: number): number {
  return backoffDelay({ minMs: initialMs, maxMs, jitter: -0.25 }, attempts - 1, random)
}

type Params<M extends ApiMethod> = ApiMethods[M]['params']
type Result<M extends ApiMethod> = ApiMethods[M]['result']

interface Pending {
  method: ApiMethod
  text: string
  resolve: (v: unknown) => void
  reject: (e: Error) => void
}

export class ApiClient {
  private readonly opts: Required<Omit<ApiClientOptions, 'connect'>> & Pick<ApiClientOptions, 'connect'>
  private transport: Transport | undefined
  private nextId = 1
  /** sent, waiting for a response */
  private readonly inFlight = new Map<number, Pending>()
  /** made while disconnected, sent on connect (in order) */
  private queue: Array<{ id: number; p: Pending }> = []
  private readonly eventFns = new Set<(ev: ApiEvent) => void>()
  private readonly statusFns = new Set<(s: ConnectionStatus) => void>()
  private retryTimer: unknown
  private current: ConnectionStatus = { state: 'connecting', attempts: 0, opened: 0 }
  private started = false
  private generation = 0

  constructor (opts: ApiClientOptions) {
    this.opts = {
      connect: opts.connect,
      initialDelayMs: opts.initialDelayMs ?? 500,
      maxDelayMs: opts.maxDelayMs ?? 10_000,
      random: opts.random ?? Math.random,
      timers: opts.timers ?? defaultTimers
    }
  }

  get status (): ConnectionStatus { return this.current }

  /** Connects (once; later calls do nothing). */
  start (): this {
    if (!this.started) {
      this.started = true
      void this.attempt()
    }
    return this
  }

  /** Sends a request; resolves with its result, rejects with an ApiError. */
  call<M extends ApiMethod> (method: M, params: Params<M>): Promise<Result<M>> {
    if (this.current.state === 'closed') return Promise.reject(new ApiError('the client is closed', method))
    const id = this.nextId++
    const msg: ClientMessage = { id, method, params }
    return new Promise<Result<M>>((resolve, reject) => {
      const p: Pending = { method, text: JSON.stringify(msg), resolve: v => resolve(v as Result<M>), reject }
      if (this.transport !== undefined && this.current.state === 'open') this.sendNow(id, p)
      else this.queue.push({ id, p })
    })
  }

  /** Subscribes to node events; returns the unsubscribe function. */
  onEvent (fn: (ev: ApiEvent) => void): () => void {
    this.eventFns.add(fn)
    return () => { this.eventFns.delete(fn) }
  }

  /** Subscribes to connection status changes; returns the unsubscribe function. */
  onStatus (fn: (s: ConnectionStatus) => void): () => void {
    this.statusFns.add(fn)
    return () => { this.statusFns.delete(fn) }
  }

  /** Skips the wait before the next reconnection attempt. */
  retryNow (): void {
    if (this.current.state !== 'reconnecting' || this.retryTimer === undefined) return
    this.opts.timers.clearTimeout(this.retryTimer)
    this.retryTimer = undefined
    void this.attempt()
  }

  close (): void {
    if (this.current.state === 'closed') return
    this.generation++
    if (this.retryTimer !== undefined) this.opts.timers.clearTimeout(this.retryTimer)
    this.retryTimer = undefined
    const t = this.transport
    this.transport = undefined
    this.setStatus({ state: 'closed', attempts: 0, opened: this.current.opened })
    this.failAll('the client is closed')
    t?.close?.()
  }

  private sendNow (id: number, p: Pending): void {
    this.inFlight.set(id, p)
    try {
      this.transport?.send(p.text)
    } catch (err) {
      this.inFlight.delete(id)
      p.reject(new ApiError(`could not send ${p.method}: ${String((err as Error)?.message ?? err)}`, p.method))
    }
  }

  private async attempt (): Promise<void> {
    const gen = ++this.generation
    this.retryTimer = undefined
    let t: Transport
    try {
      t = await this.opts.connect()
    } catch (err) {
      if (gen !== this.generation) return
      this.scheduleRetry(String((err as Error)?.message ?? err))
      return
    }
    if (gen !== this.generation) { t.close?.(); return }
    this.transport = t
    let closed = false
    t.onMessage(text => { if (!closed) this.receive(text) })
    t.onClose(reason => {
      if (closed) return
      closed = true
      if (this.transport !== t) return
      this.transport = undefined
      this.failInFlight(`connection lost${reason !== undefined && reason !== '' ? ` (${reason})` : ''}`)
      if (this.current.state !== 'closed') this.scheduleRetry(reason)
    })
    if (closed) return // closed during the handlers' setup
    this.setStatus({ state: 'open', attempts: 0, opened: this.current.opened + 1 })
    const queued = this.queue
    this.queue = []
    for (const { id, p } of queued) this.sendNow(id, p)
  }

  private scheduleRetry (error?: string): void {
    const attempts = this.current.attempts + 1
    const delay = reconnectDelay(attempts, this.opts.initialDelayMs, this.opts.maxDelayMs, this.opts.random())
    const status: ConnectionStatus = { state: 'reconnecting', attempts, opened: this.current.opened, retryAt: this.opts.timers.now() + delay }
    if (error !== undefined && error !== '') status.error = error
    this.setStatus(status)
    this.retryTimer = this.opts.timers.setTimeout(() => { void this.attempt() }, delay)
  }

  private receive (text: string): void {
    let msg: ServerMessage
    try {
      msg = JSON.parse(text) as ServerMessage
    } catch {
      return // not ours to crash on: a garbled frame is dropped
    }
    if (msg === null || typeof msg !== 'object') return
    if ('event' in msg) {
      if (msg.event === null || typeof msg.event !== 'object') return
      for (const fn of [...this.eventFns]) {
        try { fn(msg.event) } catch (err) { console.error('arbor: event handler failed', err) }
      }
      return
    }
    if (typeof (msg as { id?: unknown }).id !== 'number') return
    const p = this.inFlight.get(msg.id)
    if (p === undefined) return
    this.inFlight.delete(msg.id)
    if ('error' in msg) p.reject(new ApiError(String(msg.error?.message ?? 'request failed'), p.method))
    else p.resolve(msg.result)
  }

  private failInFlight (why: string): void {
    const pending = [...this.inFlight.values()]
    this.inFlight.clear()
    for (const p of pending) p.reject(new ApiError(`${p.method}: ${why}; it may or may not have taken effect`, p.method))
  }

  private failAll (why: string): void {
    this.failInFlight(why)
    const queued = this.queue
    this.queue = []
    for (const { p } of queued) p.reject(new ApiError(`${p.method}: ${why}`, p.method))
  }

  private setStatus (s: ConnectionStatus): void {
    this.current = s
    for (const fn of [...this.statusFns]) {
      try { fn(s) } catch (err) { console.error('arbor: status handler failed', err) }
    }
  }
}
