// The headless node's web UI (`arbor serve`): the built renderer over HTTP and the API
// over a WebSocket at /api (DESIGN.md, "Processes": loopback by default, token + Origin
// checked). The same ClientMessage/ServerMessage JSON the Electron MessagePort carries.
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import type { Duplex } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { WebSocketServer, WebSocket, type RawData } from 'ws'
import { consoleLogger, type Logger } from '../../shared/logger'
import { ApiConnection } from './api-connection'
import { randomToken, tokenMatches } from './api-token'
import type { ApiService } from './api-service'

export const DEFAULT_WEB_PORT = 7777

/** A connection whose client reads slower than events come is closed past this much unsent data. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024
const MAX_MESSAGE_BYTES = 8 * 1024 * 1024

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.wasm': 'application/wasm'
}

const SECURITY_HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Content-Security-Policy': "frame-ancestors 'none'",
  'Referrer-Policy': 'no-referrer'
}

export interface WebServerOptions {
  api: ApiService
  /** the address to bind (default 127.0.0.1: this machine only) */
  host?: string
  /** default 7777; 0 picks a free port */
  port?: number
  /** when `port` is taken, take a free one instead of failing (for the default port) */
  fallbackPort?: boolean
  /** the built renderer (default: out/renderer of this installation) */
  root?: string
  /** the secret every WebSocket must present (default: 32 random bytes, hex) */
  token?: string
  log?: Logger
}

/** The built renderer near this module: <repo>/out/renderer from the sources, out/renderer from out/main. */
export function findRendererDir (from: string = path.dirname(fileURLToPath(import.meta.url))): string | null {
  let dir = from
  for (let i = 0; i < 8; i++) {
    // Only a directory named out holds the build (src/renderer holds the unbuilt sources).
    const candidate = path.basename(dir) === 'out' ? path.join(dir, 'renderer') : path.join(dir, 'out', 'renderer')
    if (fs.existsSync(path.join(candidate, 'index.html'))) return candidate
    const up = path.dirname(dir)
    if (up === dir) break
    dir = up
  }
  return null
}

/**
 * HTTP server for the web UI: static files of the built renderer (GET/HEAD, no directory
 * listings, nothing outside the root) and the API over WebSocket at /api. A WebSocket is
 * accepted only with the server's token (`/api?token=…`, compared in constant time) and
 * an Origin that is this server's own; anything else is refused with 403.
 */
export class WebServer {
  readonly token: string
  private readonly opts: WebServerOptions
  private readonly log: Logger
  private readonly host: string
  private readonly root: string | null
  private readonly server: http.Server
  private readonly wss: WebSocketServer
  private readonly origins = new Set<string>()
  private port_ = 0

  constructor (opts: WebServerOptions) {
    this.opts = opts
    this.log = opts.log ?? consoleLogger('web')
    this.host = opts.host ?? '127.0.0.1'
    this.token = opts.token ?? randomToken()
    this.root = opts.root !== undefined ? path.resolve(opts.root) : findRendererDir()
    this.server = http.createServer((req, res) => {
      this.serveStatic(req, res).catch(err => {
        if ((err as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE') return // the client went away
        this.log.error(`serving ${req.url ?? ''} failed: ${(err as Error).message}`)
        if (!res.headersSent) send(res, 500, 'internal error')
        else res.destroy()
      })
    })
    this.wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES })
    this.server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => { this.upgrade(req, socket, head) })
  }

  async listen (): Promise<void> {
    const port = this.opts.port ?? DEFAULT_WEB_PORT
    try {
      await this.listenOn(port)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || this.opts.fallbackPort !== true || port === 0) throw err
      this.log.warn(`port ${port} is in use; the web UI takes a free port`)
      await this.listenOn(0)
    }
    this.port_ = (this.server.address() as { port: number }).port
    for (const h of ownHosts(this.host)) this.origins.add(`http://${h}:${this.port_}`)
  }

  private listenOn (port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => { reject(err) }
      this.server.once('error', onError)
      this.server.listen(port, this.host, () => { this.server.off('error', onError); resolve() })
    })
  }

  get port (): number { return this.port_ }

  /** This server as a browser reaches it. */
  get origin (): string {
    return `http://${displayHost(this.host)}:${this.port_}`
  }

  /** The address to open: the token rides in the fragment, which browsers never send. */
  get url (): string { return `${this.origin}/#token=${this.token}` }

  async close (): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate()
    await new Promise<void>(resolve => this.wss.close(() => resolve()))
    if (!this.server.listening) return
    const closed = new Promise<void>(resolve => this.server.close(() => resolve()))
    this.server.closeAllConnections()
    await closed
  }

  // ------------------------------------------------------------ WebSocket

  private upgrade (req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => { /* a client that went away */ })
    let url: URL
    try {
      url = new URL(req.url ?? '/', 'http://arbor.invalid')
    } catch {
      refuse(socket, 400, 'bad request')
      return
    }
    if (url.pathname !== '/api') { refuse(socket, 404, 'not found'); return }
    const origin = req.headers.origin?.toLowerCase()
    if (origin === undefined || !this.origins.has(origin)) { refuse(socket, 403, 'this origin may not use the API'); return }
    if (!tokenMatches(url.searchParams.get('token') ?? '', this.token)) { refuse(socket, 403, 'a valid token is needed: open the address `arbor serve` printed'); return }
    this.wss.handleUpgrade(req, socket, head, ws => { this.serveClient(ws) })
  }

  private serveClient (ws: WebSocket): void {
    const conn = new ApiConnection(this.opts.api, {
      log: this.log,
      send: msg => {
        if (ws.readyState !== WebSocket.OPEN) return
        if (ws.bufferedAmount > MAX_BUFFERED_BYTES) { ws.close(1013, 'the client reads too slowly'); return }
        ws.send(JSON.stringify(msg))
      }
    })
    ws.on('close', () => { conn.close() })
    ws.on('error', err => { this.log.warn(`a web client's connection failed: ${err.message}`) })
    ws.on('message', (data: RawData, isBinary: boolean) => { conn.receive(isBinary ? data : rawText(data)) })
  }

  // ------------------------------------------------------------ static files

  private async serveStatic (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD')
      send(res, 405, 'method not allowed')
      return
    }
    const root = this.root
    if (root === null) {
      send(res, 503, 'the web UI is not built in this installation: run `npm run build`')
      return
    }
    let rel: string
    try {
      rel = decodeURIComponent((req.url ?? '/').split(/[?#]/)[0] as string)
    } catch {
      send(res, 400, 'bad request')
      return
    }
    if (rel.includes('\0')) { send(res, 404, 'not found'); return }
    if (rel === '/' || rel === '') rel = '/index.html'
    const file = await inside(root, path.join(root, rel))
    if (file === null) { send(res, 404, 'not found'); return }
    const type = CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream'
    const stat = await fsp.stat(file)
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'Content-Type': type,
      'Content-Length': stat.size,
      // Vite names assets by content hash; index.html must always be asked for again.
      'Cache-Control': rel.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache'
    })
    if (req.method === 'HEAD') { res.end(); return }
    await pipeline(fs.createReadStream(file), res)
  }
}

/** The real path of `file` if it is a regular file under `root` (symbolic links resolved); else null. */
async function inside (root: string, file: string): Promise<string | null> {
  try {
    const [realRoot, real] = await Promise.all([fsp.realpath(root), fsp.realpath(file)])
    if (!real.startsWith(realRoot + path.sep)) return null
    return (await fsp.stat(real)).isFile() ? real : null
  } catch {
    return null
  }
}

function send (res: http.ServerResponse, status: number, text: string): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' })
  res.end(text + '\n')
}

function refuse (socket: Duplex, status: number, text: string): void {
  const body = text + '\n'
  socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
}

function rawText (data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8')
  return Buffer.from(data as ArrayBuffer).toString('utf8')
}

const isWildcard = (host: string): boolean => host === '0.0.0.0' || host === '::' || host === ''
const isLoopback = (host: string): boolean => host === 'localhost' || host === '::1' || /^127\./.test(host)

function urlHost (host: string): string {
  return host.includes(':') ? `[${host}]` : host.toLowerCase()
}

function displayHost (host: string): string {
  return isWildcard(host) ? '127.0.0.1' : urlHost(host)
}

/** The host names a browser may reach this server by: its Origins are the only ones allowed. */
function ownHosts (host: string): string[] {
  const out = new Set<string>([urlHost(host)])
  if (isLoopback(host) || isWildcard(host)) for (const h of ['127.0.0.1', 'localhost', '[::1]']) out.add(h)
  if (isWildcard(host)) {
    out.add(os.hostname().toLowerCase())
    for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) out.add(urlHost(a.address.replace(/%.*$/, '')))
  }
  out.delete('0.0.0.0')
  out.delete('[::]')
  return [...out]
}
