// A node with its API, as an entry point opens it (Electron's node process, `arbor serve`, a
// CLI command while no node runs): the ArborNode, the one ApiService every transport of the
// process serves, and the local socket the `arbor` CLI talks to. Here, not in ArborNode, so the
// core knows nothing of its clients; the entry points add their own transports over `api`.
import { consoleLogger, type Logger } from '../../shared/logger'
import { Lifecycle } from '../../shared/lifecycle'
import type { ArborNode } from '../node'
import { ApiService } from './api-service'
import { LocalApiServer } from './local-socket'

export interface ServedNodeOptions {
  /**
   * serve the local socket the CLI talks to (default true); false for a node opened for one
   * command: another command meanwhile finds the store in use and says so
   */
  socket?: boolean
  /** the version the API's hello reports (default this Arbor's) */
  version?: string
  /** the API's and the socket's (default the console's) */
  log?: Logger
}

/**
 * Opens the node, then its API, then the local socket; closes them the other way round, the
 * socket first, so no caller reaches a node that is closing.
 */
export class ServedNode {
  readonly node: ArborNode
  private readonly opts: ServedNodeOptions
  private readonly life: Lifecycle
  private service: ApiService | null = null
  private socket: LocalApiServer | null = null

  constructor (node: ArborNode, opts: ServedNodeOptions = {}) {
    this.node = node
    this.opts = opts
    this.life = new Lifecycle(() => this.open(), () => this.shut())
  }

  ready (): Promise<void> { return this.life.ready() }

  close (): Promise<void> { return this.life.close() }

  /** The node's API, once ready: one per node (one guard per conversation's agent), every transport shares it. */
  get api (): ApiService {
    if (this.service === null) throw new Error('the node\'s API is not open')
    return this.service
  }

  private async open (): Promise<void> {
    await this.node.ready()
    const log = this.opts.log ?? consoleLogger('api')
    this.service = new ApiService(this.node, { log, ...(this.opts.version !== undefined ? { version: this.opts.version } : {}) })
    if (this.opts.socket !== false) {
      this.socket = new LocalApiServer(this.node.dataDir, this.service, log)
      await this.socket.listen()
    }
  }

  private async shut (): Promise<void> {
    await this.socket?.close()
    this.service?.close()
    await this.node.close()
  }
}
