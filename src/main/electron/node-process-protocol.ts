// What Electron main and the node (its utilityProcess) say to each other over the node's
// parentPort (DESIGN.md, "Processes"). The API itself does not pass here: each window gets
// a MessagePort of its own, handed over with a `connect` message.
import type { MessagePortLike } from '../api/message-port'
import type { SecretName, Secrets } from '../secrets/secret-store'

/** main → node */
export type ToNode =
  /** the first message: what the node needs to open (secrets never travel on argv or in the environment) */
  | { type: 'start'; dataDir: string; secrets: Secrets; secretsDescription: string }
  /** ports[0] is a window's end of a new API channel */
  | { type: 'connect' }
  /** close the node cleanly, then exit */
  | { type: 'shutdown' }
  /** the answer to a secret-set */
  | { type: 'secret-saved'; id: number; error?: string }

/** node → main */
export type FromNode =
  /** the node is open and serving the API on the ports it is given */
  | { type: 'ready'; device: string }
  /** the node could not open (it exits next); the message is for the user */
  | { type: 'failed'; message: string }
  /** keep this secret (main encrypts it); null removes it */
  | { type: 'secret-set'; id: number; name: SecretName; value: string | null }

/** `process.parentPort` in an Electron utilityProcess. */
export interface ParentPortLike {
  postMessage (message: unknown): void
  on (event: 'message', listener: (e: { data: unknown; ports: MessagePortLike[] }) => void): unknown
  off (event: 'message', listener: (e: { data: unknown; ports: MessagePortLike[] }) => void): unknown
}
