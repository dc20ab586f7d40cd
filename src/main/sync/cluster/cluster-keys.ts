import { timingSafeEqual } from 'node:crypto'
import crypto from 'hypercore-crypto'

/**
 * What is derived from a cluster's 32-byte secret (DESIGN.md, "Sync and trust"). Pure.
 *
 * - the Hyperswarm topic the cluster's devices meet on;
 * - the capability proof each side of a connection sends when it opens the `arbor/1`
 *   channel, as protomux-wakeup does: hash([NS_INITIATOR | NS_RESPONDER, secret,
 *   handshakeHash]). The Noise handshake hash is unique to the connection and the role
 *   is in the hash, so a proof can be neither replayed on another connection nor
 *   reflected back to its sender.
 */

export const SECRET_BYTES = 32

const [NS_TOPIC] = crypto.namespace('arbor/topic/v1', 1) as [Buffer]
const [NS_INITIATOR, NS_RESPONDER] = crypto.namespace('arbor/channel-proof/v1', 2) as [Buffer, Buffer]

function checkSecret (secret: Buffer): void {
  if (!Buffer.isBuffer(secret) || secret.byteLength !== SECRET_BYTES) {
    throw new TypeError(`a cluster secret is ${SECRET_BYTES} bytes`)
  }
}

/** The Hyperswarm topic of the cluster. */
export function clusterTopic (secret: Buffer): Buffer {
  checkSecret(secret)
  return crypto.hash([NS_TOPIC, secret])
}

/**
 * The proof that the side of a connection whose role is `isInitiator` holds the secret.
 * To prove: pass your own `stream.isInitiator`.
 */
export function proof (secret: Buffer, handshakeHash: Buffer, isInitiator: boolean): Buffer {
  checkSecret(secret)
  return crypto.hash([isInitiator ? NS_INITIATOR : NS_RESPONDER, secret, handshakeHash])
}

/**
 * Whether `candidate` is the proof made by the side whose role is `isInitiator`.
 * To check the remote's proof: pass `!stream.isInitiator` (its role). Constant time.
 */
export function verifyProof (secret: Buffer, handshakeHash: Buffer, isInitiator: boolean, candidate: Buffer): boolean {
  if (!Buffer.isBuffer(candidate) || candidate.byteLength !== 32) return false
  return timingSafeEqual(proof(secret, handshakeHash, isInitiator), candidate)
}
