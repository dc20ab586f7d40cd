// The client's side of the node's local socket (see local-socket.ts for the protocol): kept
// apart from the server so a command that only asks "does a node run here?" (`arbor ls`) loads
// nothing of the API service.
import net from 'node:net'
import fsp from 'node:fs/promises'
import path from 'node:path'
import type { Transport } from '../../shared/api/api-client'
import { socketPath, tokenPath } from './socket-path'

export { socketPath, tokenPath } from './socket-path'

/**
 * An API session with the node serving `dataDir`, as a Transport for the shared ApiClient;
 * null if no node answers there. A refused token ends it with the node's words as the reason.
 */
export async function openLocalApi (dataDir: string): Promise<Transport | null> {
  let conn: net.Socket
  try {
    conn = await connect(socketPath(dataDir))
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ECONNREFUSED') return null
    throw err
  }
  // Listened to before anything is awaited: a node killed while the token is read must end
  // the transport (and its error must not go uncaught).
  const messageFns: Array<(text: string) => void> = []
  const closeFns: Array<(reason?: string) => void> = []
  let reason: string | undefined
  let ended: string | undefined
  conn.on('error', err => { reason ??= err.message })
  conn.on('close', () => {
    ended = reason ?? 'the Arbor node closed the connection'
    for (const fn of closeFns.splice(0)) fn(ended)
  })
  const token = await readToken(dataDir, conn)
  readLines(conn, {
    onLine: line => {
      // An error for no request is about the connection (the token was refused).
      const refusal = /^\{"id":null,"error":\{"code":"unauthenticated"/.test(line) ? (JSON.parse(line) as { error?: { message?: string } }).error?.message : undefined
      if (refusal !== undefined) { reason = refusal; return }
      for (const fn of messageFns) fn(line)
    }
  })
  if (token !== undefined) conn.write(JSON.stringify({ token }) + '\n')
  return {
    send: text => { if (ended === undefined) conn.write(text + '\n') },
    onMessage: fn => { messageFns.push(fn) },
    onClose: fn => { if (ended !== undefined) queueMicrotask(() => fn(ended)); else closeFns.push(fn) },
    close: () => { conn.end() }
  }
}

/** The token of the node on `dataDir` (undefined: a node of a version before tokens, which needs none). */
async function readToken (dataDir: string, conn: net.Socket): Promise<string | undefined> {
  const file = tokenPath(dataDir)
  try {
    return (await fsp.readFile(file, 'utf8')).trim()
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    // A newer node says what is missing.
    if (code === 'ENOENT') return undefined
    conn.destroy()
    throw new Error(`a node runs on ${path.resolve(dataDir)}, but its token cannot be read: ${(err as Error).message} (run arbor as the user the node runs as)`, { cause: err })
  }
}

function connect (socket: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const conn = net.connect(socket)
    conn.once('connect', () => { conn.off('error', reject); resolve(conn) })
    conn.once('error', reject)
  })
}

export async function isAnswering (socket: string): Promise<boolean> {
  try {
    const c = await connect(socket)
    c.destroy()
    return true
  } catch {
    return false
  }
}

/** Splits a stream into lines; past `maxPending` characters without a newline, `onOverflow` instead. */
export function readLines (stream: net.Socket, o: { onLine: (line: string) => void; maxPending?: () => number; onOverflow?: () => void }): void {
  let buf = ''
  stream.setEncoding('utf8')
  stream.on('data', (chunk: string) => {
    buf += chunk
    let i
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i)
      buf = buf.slice(i + 1)
      if (line.trim() !== '') o.onLine(line)
    }
    if (o.maxPending !== undefined && buf.length > o.maxPending()) {
      buf = ''
      o.onOverflow?.()
    }
  })
}
