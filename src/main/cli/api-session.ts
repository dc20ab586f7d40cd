// The CLI's side of the API: the shared ApiClient over the running node's local socket, or in
// process against a node's API: one lent to runCli (tests), or that of a node this command opens
// with the one composition root (ArborNode) when no node runs here. Either way the same
// requests and events.
import { ApiClient, type Transport } from '../../shared/api/api-client'
import type { ApiEvent, ApiMethod, ApiMethods } from '../../shared/api/api'
import type { ApiService } from '../api/api-service'
import { NodeLostError } from './node-lost'

export interface CliApi {
  call<M extends ApiMethod> (method: M, params: ApiMethods[M]['params']): Promise<ApiMethods[M]['result']>
  /** the node's events; returns the unsubscribe function */
  onEvent (fn: (ev: ApiEvent) => void): () => void
  /** resolves, saying why, when the connection to the node is lost */
  readonly lost: Promise<string>
  /**
   * true: a node runs here (it syncs, its agents go on after this command); false: the node was
   * opened for this command alone, without the network, and closes with it
   */
  readonly live: boolean
  close (): Promise<void>
}

export interface SessionOptions {
  dir: string
  /** the environment the node opened for the command gives its agents */
  env: NodeJS.ProcessEnv
  /** the API of a node in this process lent to the CLI (tests): the commands are its clients */
  api?: ApiService
  /**
   * with no node running: open one with the network on (`invite`, `join`: they need the DHT),
   * else one with no network at all
   */
  network?: { bootstrap?: string; name?: string }
}

/** The API of the node for this command: the lent one, the running one, else one opened for it. */
export async function openSession (o: SessionOptions): Promise<CliApi> {
  if (o.api !== undefined) return inProcessApi(o.api, true)
  const running = await nodeApi(o.dir).catch((err: Error) => { throw new NodeLostError(err.message) })
  if (running !== null) return running
  return commandNode(o)
}

/** An API session with the node serving `dir` over its local socket; null if none runs there. */
export async function nodeApi (dir: string): Promise<CliApi | null> {
  const { openLocalApi } = await import('../api/local-socket-client')
  const transport = await openLocalApi(dir)
  return transport === null ? null : session(transport, true)
}

/** An ArborNode for the length of one command (none runs here), through the one composition root. */
async function commandNode (o: SessionOptions): Promise<CliApi> {
  const [{ ArborNode, parseBootstrap }, { ServedNode }] = await Promise.all([import('../node'), import('../api/served-node')])
  const b = o.network?.bootstrap ?? o.env.ARBOR_BOOTSTRAP
  const node = new ArborNode({
    dataDir: o.dir,
    env: o.env,
    ...(o.network === undefined
      ? { swarm: false, online: false, forCommand: true }
      : { ...(b !== undefined ? { bootstrap: parseBootstrap(b) } : {}), ...(o.network.name !== undefined ? { name: o.network.name } : {}) })
  })
  const served = new ServedNode(node, { socket: false }) // no socket: another command meanwhile finds the store in use and says so
  await served.ready()
  const api = inProcessApi(served.api, false)
  return { ...api, close: async () => { await api.close(); await served.close() } }
}

/** An API session in this process, against a node it holds (no socket between). */
export function inProcessApi (api: ApiService, live: boolean): CliApi {
  // Loaded here, not at the top: `arbor ls` imports this file's types only, and the connection pulls in the service.
  const messageFns: Array<(text: string) => void> = []
  const closeFns: Array<(reason?: string) => void> = []
  let conn: { receive (text: string): void; close (): void } | null = null
  const connected = import('../api/api-connection').then(({ ApiConnection }) => {
    conn = new ApiConnection(api, { send: msg => { const text = JSON.stringify(msg); for (const fn of messageFns) fn(text) } })
  })
  return session({
    send: text => { void connected.then(() => { conn?.receive(text) }) },
    onMessage: fn => { messageFns.push(fn) },
    onClose: fn => { closeFns.push(fn) },
    close: () => { conn?.close(); for (const fn of closeFns.splice(0)) fn('closed') }
  }, live)
}

/** One connection for one command: no reconnecting; a lost connection fails what waits, saying why. */
function session (transport: Transport, live: boolean): CliApi {
  let lost: string | undefined
  let closing = false
  let onLost: (why: string) => void = () => {}
  const lostP = new Promise<string>(resolve => { onLost = resolve })
  transport.onClose(reason => {
    lost ??= reason ?? 'the Arbor node closed the connection'
    if (!closing) onLost(lost)
  })
  let used = false
  const client = new ApiClient({
    connect: async () => {
      if (used) throw new Error(lost ?? 'the connection to the node ended')
      used = true
      return transport
    },
    // the one attempt after a loss fails at once; close() cancels any later one
    initialDelayMs: 60_000
  }).start()
  return {
    async call (method, params) {
      // the client would keep a call made after the loss for a reconnection this session never makes
      if (lost !== undefined && !closing) throw new NodeLostError(lost)
      try {
        return await Promise.race([client.call(method, params), lostP.then(why => { throw new NodeLostError(why) })])
      } catch (err) {
        if (lost !== undefined && !closing) throw new NodeLostError(lost)
        throw err
      }
    },
    onEvent: fn => client.onEvent(fn),
    lost: lostP,
    live,
    close: async () => { closing = true; client.close() }
  }
}
