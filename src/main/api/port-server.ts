// The desktop app's API transport: each window talks to the node over a MessagePort of its
// own (DESIGN.md, "Processes"), in the same JSON text frames as the WebSocket.
import { consoleLogger, type Logger } from '../../shared/logger'
import type { MessagePortLike } from './message-port'
import { ApiConnection } from './api-connection'
import type { ApiService } from './api-service'

/** Serves the API on every port it accepts, until the port closes or the server does. */
export class PortApiServer {
  private readonly api: ApiService
  private readonly log: Logger
  private readonly connections = new Map<MessagePortLike, ApiConnection>()

  constructor (api: ApiService, opts: { log?: Logger } = {}) {
    this.api = api
    this.log = opts.log ?? consoleLogger('api')
  }

  /** Ports being served now. */
  get size (): number { return this.connections.size }

  accept (port: MessagePortLike): void {
    const conn = new ApiConnection(this.api, { log: this.log, send: msg => { port.postMessage(JSON.stringify(msg)) } })
    this.connections.set(port, conn)
    port.on('message', e => { conn.receive(e.data) })
    // The window reloaded or closed, or main replaced the channel: stop sending to it.
    port.on('close', () => { this.drop(port) })
    port.start()
  }

  close (): void {
    for (const port of [...this.connections.keys()]) {
      this.drop(port)
      port.close()
    }
  }

  private drop (port: MessagePortLike): void {
    this.connections.get(port)?.close()
    this.connections.delete(port)
  }
}
