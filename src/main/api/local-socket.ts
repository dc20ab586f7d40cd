import net from 'node:net'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { isMainThread } from 'node:worker_threads'
import type { Logger } from '../../shared/logger'
import { writeStateFile } from '../disk/state-file'
import { isAnswering, readLines, socketPath, tokenPath } from './local-socket-client'
import { randomToken, tokenMatches } from './api-token'
import { ApiConnection } from './api-connection'
import type { ApiService } from './api-service'

/**
 * The node's local socket in its data directory: how the `arbor` CLI talks to a running
 * node (only one process can open the history). Newline-delimited JSON. A connection first
 * presents the node's token, `{token}`, read from the token file beside the socket (new on
 * every start, readable by the node's user only); a wrong or missing token gets
 * `{id: null, error}` and the connection is closed before any request is read. Then the
 * connection is an API session (ApiConnection: `{id, method, params}` requests, one
 * `{id, result}` or `{id, error}` each, `{event}` in between), as over the WebSocket.
 */

/** An unauthenticated connection is closed after this long without its token, or a first frame this long. */
const AUTH_TIMEOUT_MS = 10_000
const MAX_AUTH_FRAME = 1024

const REFUSED = 'this is not your Arbor node\'s token: '

export class LocalApiServer {
  readonly path: string
  readonly tokenFile: string
  private server: net.Server | null = null
  private token: string | null = null
  private readonly sockets = new Set<net.Socket>()

  constructor (dataDir: string, private readonly api: ApiService, private readonly log?: Logger) {
    this.path = socketPath(dataDir)
    this.tokenFile = tokenPath(dataDir)
  }

  async listen (): Promise<void> {
    // A socket file left by a node that was killed: remove it if nobody answers on it.
    if (process.platform !== 'win32' && fs.existsSync(this.path)) {
      if (await isAnswering(this.path)) throw new Error(`another Arbor node is already running on ${path.dirname(this.path)}`)
      fs.rmSync(this.path, { force: true })
    }
    // The token exists before the socket does: no connection is ever served without it.
    const token = randomToken()
    await writeStateFile(this.tokenFile, token + '\n', { mode: 0o600 })
    this.token = token
    const server = net.createServer(socket => this.serve(socket))
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        listenPrivately(server, this.path, () => { server.off('error', reject); resolve() })
      })
    } catch (err) {
      this.token = null
      await fsp.rm(this.tokenFile, { force: true })
      throw err
    }
    this.server = server
  }

  async close (): Promise<void> {
    for (const s of this.sockets) s.destroy()
    const server = this.server
    this.server = null
    if (server !== null) await new Promise<void>(resolve => server.close(() => resolve()))
    if (this.token !== null) {
      this.token = null
      await fsp.rm(this.tokenFile, { force: true })
    }
  }

  private serve (socket: net.Socket): void {
    this.sockets.add(socket)
    let session: ApiConnection | null = null
    let authenticated = false
    let refused = false
    const send = (msg: unknown): void => { if (!socket.destroyed) socket.write(JSON.stringify(msg) + '\n') }
    const refuse = (why: string): void => {
      if (refused) return
      refused = true
      clearTimeout(timer)
      this.log?.warn(`refused a connection to the local socket: ${why}`)
      send({ id: null, error: { code: 'unauthenticated', message: REFUSED + why } })
      socket.destroySoon() // after the refusal is written
    }
    const timer = setTimeout(() => { refuse(`none came within ${AUTH_TIMEOUT_MS / 1000} s`) }, AUTH_TIMEOUT_MS)
    timer.unref()
    socket.on('close', () => {
      clearTimeout(timer)
      this.sockets.delete(socket)
      session?.close() // the client went away: its long requests stop
    })
    socket.on('error', () => { /* reported by 'close' */ })
    readLines(socket, {
      maxPending: () => authenticated ? Infinity : MAX_AUTH_FRAME,
      onOverflow: () => { refuse(`the first frame is over ${MAX_AUTH_FRAME} bytes; it must be {"token": …}`) },
      onLine: line => {
        if (refused) return
        let req: { id?: unknown; method?: unknown; params?: unknown; token?: unknown }
        try {
          const parsed: unknown = JSON.parse(line)
          if (parsed === null || typeof parsed !== 'object') throw new Error('not an object')
          req = parsed as typeof req
        } catch {
          if (!authenticated) refuse('the first frame is not a JSON object; it must be {"token": …}')
          else session?.receive(line) // the session answers what is not a request
          return
        }
        if (!authenticated) {
          const token = this.token
          if (token !== null && typeof req.token === 'string' && tokenMatches(req.token, token)) {
            authenticated = true
            clearTimeout(timer)
            // Only now does the connection hear events or reach a method.
            session = new ApiConnection(this.api, { send, ...(this.log !== undefined ? { log: this.log } : {}) })
            return
          }
          refuse(typeof req.token === 'string'
            ? `the node on ${path.dirname(this.tokenFile)} has another (it is in ${this.tokenFile}, readable by the node's user only)`
            : `the connection did not present one; a client sends {"token": …} from ${this.tokenFile} as its first frame`)
          return
        }
        session?.receive(line)
      }
    })
  }
}

/**
 * Listens with the umask 077: bind (synchronous inside listen) creates the socket for this
 * user only, so there is no moment in which another user could connect before a chmod.
 */
function listenPrivately (server: net.Server, file: string, onListening: () => void): void {
  if (process.platform === 'win32') { server.listen(file, onListening); return }
  if (!isMainThread) {
    // A worker cannot set the umask: chmod after bind, as before; the token still guards the moment between.
    server.listen(file, () => { fs.chmodSync(file, 0o600); onListening() })
    return
  }
  const umask = process.umask(0o077)
  try {
    server.listen(file, onListening)
  } finally {
    process.umask(umask)
  }
}
