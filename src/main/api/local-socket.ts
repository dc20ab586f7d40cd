import net from 'node:net'
import fs from 'node:fs'
import path from 'node:path'

/**
 * The node's local socket in its data directory: how the `arbor` CLI talks to a running
 * node (only one process can open the history). Newline-delimited JSON: a request
 * `{id, method, params}`; any number of `{id, event}` notifications; then `{id, result}`
 * or `{id, error}`. A `{id, method: 'cancel'}` aborts request `id`.
 */
export type ApiHandler = (params: unknown, ctx: { notify: (event: unknown) => void; signal: AbortSignal }) => Promise<unknown>

/** The socket path for a data directory (a named pipe on Windows). */
export function socketPath (dataDir: string): string {
  if (process.platform === 'win32') return `\\\\.\\pipe\\arbor-${Buffer.from(path.resolve(dataDir)).toString('hex').slice(-40)}`
  return path.join(path.resolve(dataDir), 'arbor.sock')
}

export class LocalApiServer {
  private server: net.Server | null = null
  private readonly sockets = new Set<net.Socket>()

  constructor (readonly path: string, private readonly handlers: Record<string, ApiHandler>) {}

  async listen (): Promise<void> {
    // A socket file left by a node that was killed: remove it if nobody answers on it.
    if (process.platform !== 'win32' && fs.existsSync(this.path)) {
      if (await isAnswering(this.path)) throw new Error(`another Arbor node is already running on ${path.dirname(this.path)}`)
      fs.rmSync(this.path, { force: true })
    }
    const server = net.createServer(socket => this.serve(socket))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.path, () => { server.off('error', reject); resolve() })
    })
    if (process.platform !== 'win32') fs.chmodSync(this.path, 0o600) // only this user may drive the node
    this.server = server
  }

  async close (): Promise<void> {
    for (const s of this.sockets) s.destroy()
    const server = this.server
    this.server = null
    if (server !== null) await new Promise<void>(resolve => server.close(() => resolve()))
  }

  private serve (socket: net.Socket): void {
    this.sockets.add(socket)
    const running = new Map<number, AbortController>()
    const send = (msg: unknown): void => { if (!socket.destroyed) socket.write(JSON.stringify(msg) + '\n') }
    socket.on('close', () => {
      this.sockets.delete(socket)
      for (const c of running.values()) c.abort() // the client went away: stop its work
    })
    socket.on('error', () => { /* reported by 'close' */ })
    readLines(socket, line => {
      let req: { id?: unknown; method?: unknown; params?: unknown }
      try {
        req = JSON.parse(line) as typeof req
      } catch {
        send({ id: null, error: { message: 'not JSON' } })
        return
      }
      const id = typeof req.id === 'number' ? req.id : -1
      if (req.method === 'cancel') { running.get(id)?.abort(); return }
      const handler = typeof req.method === 'string' && Object.hasOwn(this.handlers, req.method) ? this.handlers[req.method] : undefined
      if (handler === undefined) { send({ id, error: { message: `unknown method ${String(req.method)}` } }); return }
      const controller = new AbortController()
      running.set(id, controller)
      handler(req.params, { notify: event => send({ id, event }), signal: controller.signal })
        .then(result => send({ id, result: result ?? null }))
        .catch((err: unknown) => send({ id, error: { message: err instanceof Error ? err.message : String(err) } }))
        .finally(() => running.delete(id))
    })
  }
}

/** Calls a method on the node serving `socket`; null if no node answers there. */
export async function callNode (socket: string, method: string, params: unknown, opts: { onEvent?: (e: unknown) => void; signal?: AbortSignal } = {}): Promise<{ result: unknown } | null> {
  let conn: net.Socket
  try {
    conn = await connect(socket)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ECONNREFUSED') return null
    throw err
  }
  return new Promise((resolve, reject) => {
    const id = 1
    const onAbort = (): void => { conn.write(JSON.stringify({ id, method: 'cancel' }) + '\n') }
    opts.signal?.addEventListener('abort', onAbort)
    let done = false
    const finish = (fn: () => void): void => {
      if (done) return
      done = true
      opts.signal?.removeEventListener('abort', onAbort)
      conn.end()
      fn()
    }
    conn.on('error', err => finish(() => reject(err)))
    conn.on('close', () => finish(() => reject(new Error('the Arbor node closed the connection before answering'))))
    readLines(conn, line => {
      const msg = JSON.parse(line) as { id: number; event?: unknown; result?: unknown; error?: { message: string } }
      if (msg.id !== id) return
      if ('event' in msg) opts.onEvent?.(msg.event)
      else if (msg.error !== undefined) finish(() => reject(new Error(msg.error?.message)))
      else finish(() => resolve({ result: msg.result }))
    })
    conn.write(JSON.stringify({ id, method, params }) + '\n')
  })
}

function connect (socket: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const conn = net.connect(socket)
    conn.once('connect', () => { conn.off('error', reject); resolve(conn) })
    conn.once('error', reject)
  })
}

async function isAnswering (socket: string): Promise<boolean> {
  try {
    const c = await connect(socket)
    c.destroy()
    return true
  } catch {
    return false
  }
}

function readLines (stream: net.Socket, onLine: (line: string) => void): void {
  let buf = ''
  stream.setEncoding('utf8')
  stream.on('data', (chunk: string) => {
    buf += chunk
    let i
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i)
      buf = buf.slice(i + 1)
      if (line.trim() !== '') onLine(line)
    }
  })
}
