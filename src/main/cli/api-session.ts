// The CLI's side of the API: the shared ApiClient over the running node's local socket, or
// in process against a node this command opened. Either way the same requests and events.
import { ApiClient, type Transport } from '../../shared/api-client'
import type { ApiMethod, ApiMethods } from '../../shared/api'
import { ApiConnection } from '../api/api-connection'
import type { ApiService } from '../api/api-service'
import { NodeLostError } from './node-lost'

export interface CliApi {
  call<M extends ApiMethod> (method: M, params: ApiMethods[M]['params']): Promise<ApiMethods[M]['result']>
  close (): void
}

/** An API session with the node serving `dir` over its local socket; null if none runs there. */
export async function nodeApi (dir: string): Promise<CliApi | null> {
  const { openLocalApi } = await import('../api/local-socket-client')
  const transport = await openLocalApi(dir)
  return transport === null ? null : session(transport)
}

/** An API session in this process, against a node it opened (no socket between). */
export function inProcessApi (api: ApiService): CliApi {
  const messageFns: Array<(text: string) => void> = []
  const closeFns: Array<(reason?: string) => void> = []
  const conn = new ApiConnection(api, { send: msg => { const text = JSON.stringify(msg); for (const fn of messageFns) fn(text) } })
  return session({
    send: text => { conn.receive(text) },
    onMessage: fn => { messageFns.push(fn) },
    onClose: fn => { closeFns.push(fn) },
    close: () => { conn.close(); for (const fn of closeFns.splice(0)) fn('closed') }
  })
}

/** One connection for one command: no reconnecting; a lost connection fails what waits, saying why. */
function session (transport: Transport): CliApi {
  let lost: string | undefined
  transport.onClose(reason => { lost ??= reason ?? 'the Arbor node closed the connection' })
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
      try {
        return await client.call(method, params)
      } catch (err) {
        if (lost !== undefined) throw new NodeLostError(lost)
        throw err
      }
    },
    close: () => { client.close() }
  }
}
