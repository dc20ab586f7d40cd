// One client's session with the API, whatever carries it: a WebSocket (`arbor serve`) or an
// Electron MessagePort (the desktop app). Both transports hand it the frames they receive and
// give it a way to send; the dispatch and the event forwarding live here once.
import type { ServerMessage } from '../../shared/api/api'
import { consoleLogger, type Logger } from '../../shared/logger'
import { ApiError, type ApiService } from './api-service'

export interface ApiConnectionOptions {
  /** sends one message to the client (the transport serialises it as JSON text) */
  send: (msg: ServerMessage) => void
  log?: Logger
}

const NOT_JSON = 'messages are JSON text: {"id": number, "method": string, "params": object}'

/**
 * Requests in (`{id, method, params}` as JSON text), one response per request out, and
 * every API event in between. close() when the client goes: its events stop, its long
 * requests (devices.join) are aborted, and answers still on their way are dropped.
 */
export class ApiConnection {
  private readonly api: ApiService
  private readonly sendFn: (msg: ServerMessage) => void
  private readonly log: Logger
  private readonly gone = new AbortController()
  private readonly unsubscribe: () => void

  constructor (api: ApiService, opts: ApiConnectionOptions) {
    this.api = api
    this.sendFn = opts.send
    this.log = opts.log ?? consoleLogger('api')
    this.unsubscribe = api.subscribe(event => { this.send({ event }) })
  }

  get closed (): boolean { return this.gone.signal.aborted }

  /** One frame from the client; anything but JSON text with an integer id is answered with an error. */
  receive (data: unknown): void {
    if (this.closed) return
    let msg: unknown
    try {
      if (typeof data !== 'string') throw new Error('not text')
      msg = JSON.parse(data)
    } catch {
      this.send({ id: -1, error: { message: NOT_JSON } })
      return
    }
    const m = msg as { id?: unknown; method?: unknown; params?: unknown } | null
    const id = m !== null && typeof m === 'object' && Number.isSafeInteger(m.id) ? m.id as number : -1
    if (id === -1) { this.send({ id, error: { message: 'a request needs an integer "id"' } }); return }
    this.api.call(m?.method, m?.params, { signal: this.gone.signal })
      .then(result => { this.send({ id, result: result ?? null }) })
      .catch((err: unknown) => {
        if (!(err instanceof ApiError)) this.log.warn(`${String(m?.method)} failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`)
        this.send({ id, error: { message: err instanceof Error ? err.message : String(err) } })
      })
  }

  close (): void {
    if (this.closed) return
    this.unsubscribe()
    this.gone.abort()
  }

  private send (msg: ServerMessage): void {
    if (this.closed) return
    try {
      this.sendFn(msg)
    } catch (err) {
      // A transport that broke under us: its own close handling ends the session.
      this.log.warn(`could not send to a client: ${(err as Error).message}`)
    }
  }
}
