import crypto from 'hypercore-crypto'
import type { ClusterStore, InviteRecord } from '../../src/main/sync/cluster/cluster-store'
import { inviteDiscoveryKey, inviteKey, signAdd, signJoin, type AddStatement, type KeyPair } from '../../src/main/sync/cluster/membership'

/** A device's key pair and its key (hex). */
export interface TestKey { kp: KeyPair; key: string }

export function testKey (): TestKey {
  const kp = crypto.keyPair()
  return { kp, key: kp.publicKey.toString('hex') }
}

/** The add an introducer signs when `joiner` used its invite (the joiner co-signs at `joinAt`). */
export function addOf (introducer: TestKey, joiner: TestKey, name: string, at: number, joinAt = at): AddStatement {
  const nonce = crypto.randomBytes(32).toString('hex')
  const join = signJoin(joiner.kp, name, inviteDiscoveryKey(introducer.key, nonce), joinAt)
  return signAdd(introducer.kp, { device: joiner.key, name, join, nonce, at })
}

/** An invite of `host`, bound to its key as createInvite makes them. */
export function inviteOf (host: TestKey, at: number): InviteRecord {
  const nonce = crypto.randomBytes(32).toString('hex')
  return { id: crypto.randomBytes(32).toString('hex'), seed: crypto.randomBytes(32).toString('hex'), key: inviteKey(host.key, nonce).toString('hex'), nonce, createdAt: at, expiresAt: at + 600_000 }
}

/**
 * Pairing without the network: what PairingHost and joinCluster do to the two stores (the
 * host admits the co-signed request; the joiner takes in the welcome).
 */
export function pairStores (host: { store: ClusterStore; id: TestKey }, joiner: { store: ClusterStore; id: TestKey }, name: string, at = Date.now()): void {
  const inv = inviteOf(host.id, at)
  const join = signJoin(joiner.id.kp, name, crypto.discoveryKey(Buffer.from(inv.key, 'hex')).toString('hex'), at)
  host.store.admit({ key: joiner.id.key, name, join }, inv, at)
  joiner.store.adoptWelcome(host.store.welcomeFor(joiner.id.key, false), at)
}
