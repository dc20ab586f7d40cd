// The secret a caller of the node's API presents (the web UI's WebSocket, the CLI's local socket).
import crypto from 'node:crypto'

/** 32 random bytes, hex. */
export function randomToken (): string {
  return crypto.randomBytes(32).toString('hex')
}

/** Constant-time comparison (of digests, so the lengths always match). */
export function tokenMatches (given: string, token: string): boolean {
  const a = crypto.createHash('sha256').update(given).digest()
  const b = crypto.createHash('sha256').update(token).digest()
  return crypto.timingSafeEqual(a, b)
}
