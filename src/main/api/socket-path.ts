// Where a data directory's node listens, apart from the socket code: asking whether one may run
// there (`arbor ls`, every command first) loads nothing of node:net.
import fs from 'node:fs'
import path from 'node:path'

/** The socket path for a data directory (a named pipe on Windows). */
export function socketPath (dataDir: string): string {
  if (process.platform === 'win32') return `\\\\.\\pipe\\arbor-${Buffer.from(path.resolve(dataDir)).toString('hex').slice(-40)}`
  return path.join(path.resolve(dataDir), 'arbor.sock')
}

/** The file holding the token a caller of the local socket presents. */
export function tokenPath (dataDir: string): string {
  return path.join(path.resolve(dataDir), 'arbor.sock.token')
}

/**
 * false when no node can be listening for `dataDir` (there is no socket file: connecting would
 * say ENOENT); true when one may, and only connecting tells (a named pipe on Windows: always).
 */
export function nodeMaySocket (dataDir: string): boolean {
  if (process.platform === 'win32') return true
  try {
    fs.lstatSync(socketPath(dataDir))
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ENOENT'
  }
}
