// The node as the desktop app runs it: the body of the utilityProcess Electron main spawns
// and supervises (DESIGN.md, "Processes"). Plain Node apart from the parentPort it is given,
// so it runs and is tested without Electron; src/main/electron/node-entry.ts starts it.
import { consoleLogger, type Logger } from '../../shared/logger'
import { PortApiServer } from '../api/port-server'
import { ArborNode, parseBootstrap, type ArborNodeOptions } from '../node'
import { ServedNode } from '../api/served-node'
import type { MessagePortLike } from '../api/message-port'
import type { FromNode, ParentPortLike, ToNode } from './node-process-protocol'
import { ParentSecretStore } from './parent-secret-store'

export interface NodeProcessOptions {
  parent: ParentPortLike
  /** ends the process: 0 after a clean shutdown, 1 when the node could not open or close */
  exit: (code: number) => void
  /** ARBOR_BOOTSTRAP (default process.env) */
  env?: NodeJS.ProcessEnv
  log?: Logger
  /** more ArborNode options (tests: a private DHT); main sends the data directory and the secrets */
  node?: Omit<ArborNodeOptions, 'dataDir' | 'secrets'>
  version?: string
}

type Listener = (e: { data: unknown; ports: MessagePortLike[] }) => void

/**
 * Waits for main's `start`, opens the node, then serves the API on every port main sends
 * (one per window, a new one per reload or node restart). `shutdown` (or stop(), which
 * SIGTERM calls) closes the node — agents record that they stopped — and exits.
 */
export class NodeProcess {
  private readonly opts: NodeProcessOptions
  private readonly log: Logger
  private readonly listener: Listener
  /** ports that came before the node was open */
  private readonly early: MessagePortLike[] = []
  /** the node with its API and local socket */
  private served: ServedNode | null = null
  private server: PortApiServer | null = null
  private secrets: ParentSecretStore | null = null
  private opening: Promise<void> | null = null
  private closing: Promise<void> | null = null
  private exiting: Promise<void> | null = null
  private readonly started: Promise<void>
  private resolveStarted!: () => void
  private rejectStarted!: (err: Error) => void

  constructor (opts: NodeProcessOptions) {
    this.opts = opts
    this.log = opts.log ?? consoleLogger('node-process')
    this.started = new Promise((resolve, reject) => { this.resolveStarted = resolve; this.rejectStarted = reject })
    this.started.catch(() => undefined) // reported through the parent; ready() callers see it too
    this.listener = e => { this.receive(e.data, e.ports) }
    opts.parent.on('message', this.listener)
  }

  /** Resolves once main's `start` came and the node is open and serving; rejects if it could not open. */
  ready (): Promise<void> { return this.started }

  /** The open node (null before `start` and after close). */
  get arbor (): ArborNode | null { return this.served?.node ?? null }

  /** Ports being served now. */
  get connections (): number { return this.server?.size ?? 0 }

  /** Whether it is closing (a shutdown message or stop() came). */
  get stopping (): boolean { return this.closing !== null }

  /** Closes the node, then exits (0, or 1 if closing failed). Calls after the first do nothing more. */
  stop (): Promise<void> {
    if (this.exiting === null) {
      this.exiting = this.close().then(
        () => { this.opts.exit(0) },
        (err: Error) => { this.log.error(`the node did not close cleanly: ${err.stack ?? err.message}`); this.opts.exit(1) }
      )
    }
    return this.exiting
  }

  close (): Promise<void> {
    if (this.closing === null) this.closing = this.shut()
    return this.closing
  }

  private receive (data: unknown, ports: MessagePortLike[]): void {
    const msg = data as ToNode | null
    switch (msg?.type) {
      case 'start':
        if (this.opening !== null || this.closing !== null) { this.log.warn('a second start message was ignored'); return }
        this.opening = this.open(msg)
        this.opening.then(() => { this.resolveStarted() }, (err: Error) => { this.failed(err, msg.dataDir) })
        return
      case 'connect':
        for (const port of ports) this.connect(port)
        return
      case 'shutdown':
        void this.stop()
        return
      case 'secret-saved':
        this.secrets?.saved(msg.id, msg.error)
        return
      default:
        this.log.warn(`main sent a message the node does not know: ${JSON.stringify(data)?.slice(0, 200)}`)
    }
  }

  private connect (port: MessagePortLike): void {
    if (this.closing !== null) { port.close(); return }
    if (this.server === null) { this.early.push(port); return }
    this.server.accept(port)
  }

  private async open (start: Extract<ToNode, { type: 'start' }>): Promise<void> {
    this.secrets = new ParentSecretStore({ post: m => { this.post(m) }, secrets: start.secrets, description: start.secretsDescription })
    const env = this.opts.env ?? process.env
    const bootstrap = env.ARBOR_BOOTSTRAP !== undefined && env.ARBOR_BOOTSTRAP !== '' ? { bootstrap: parseBootstrap(env.ARBOR_BOOTSTRAP) } : {}
    const node = new ArborNode({ ...bootstrap, ...this.opts.node, dataDir: start.dataDir, secrets: this.secrets })
    // with its local socket, so `arbor` commands go through this node
    const served = new ServedNode(node, { ...(this.opts.version !== undefined ? { version: this.opts.version } : {}), ...(this.opts.node?.log !== undefined ? { log: this.opts.node.log } : {}) })
    this.served = served
    await served.ready()
    if (this.closing !== null) throw new Error('the node was asked to stop while it opened')
    // the node's own API, which its local socket serves too (one per node)
    this.server = new PortApiServer(served.api, { log: this.log })
    for (const port of this.early.splice(0)) this.server.accept(port)
    this.post({ type: 'ready', device: node.device })
    this.log.info(`serving ${start.dataDir}`)
  }

  /** The node could not open: main hears why (it shows the user), then this process ends. */
  private failed (err: Error, dataDir: string): void {
    this.rejectStarted(err)
    if (this.closing !== null) return // it was stopping anyway
    this.log.error(`the node could not open ${dataDir}: ${err.stack ?? err.message}`)
    this.post({ type: 'failed', message: err.message })
    void this.close().catch(() => undefined).then(() => { this.opts.exit(1) })
  }

  private post (msg: FromNode): void {
    this.opts.parent.postMessage(msg)
  }

  private async shut (): Promise<void> {
    this.opts.parent.off('message', this.listener)
    if (this.opening === null) this.rejectStarted(new Error('the node was stopped before main started it'))
    for (const port of this.early.splice(0)) port.close()
    await this.opening?.catch(() => undefined)
    this.server?.close()
    this.secrets?.close()
    const served = this.served
    this.served = null
    await served?.close()
  }
}
