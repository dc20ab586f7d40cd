import crypto from 'hypercore-crypto'
import type { DevicesMessage } from '../../src/main/sync/arbor-messages'
import type { ClusterMembership } from '../../src/main/sync/sync-node'

/**
 * An in-memory cluster for sync tests that do not exercise pairing: every device given
 * is trusted, and the proofs are real hashes over the shared secret.
 */
export class TestCluster implements ClusterMembership {
  readonly devices = new Map<string, { name: string; addedAt: number }>()
  constructor (public secret: Buffer | null, devices: string[], readonly name = 'test') {
    for (const d of devices) this.devices.set(d, { name: d.slice(0, 6), addedAt: 0 })
  }

  isTrusted (device: string): boolean { return this.devices.has(device) }
  devicesMessage (): DevicesMessage {
    return { devices: [...this.devices].map(([key, d]) => ({ key, name: d.name, addedAt: d.addedAt })), forgotten: [] }
  }

  merge (msg: DevicesMessage): boolean {
    let changed = false
    for (const d of msg.devices) if (!this.devices.has(d.key)) { this.devices.set(d.key, { name: d.name, addedAt: d.addedAt }); changed = true }
    return changed
  }

  seen (): void {}
  topic (): Buffer | null { return this.secret === null ? null : crypto.hash([Buffer.from('test-topic'), this.secret]) }
  proof (hh: Buffer, isInitiator: boolean): Buffer | null {
    return this.secret === null ? null : crypto.hash([Buffer.from(isInitiator ? 'i' : 'r'), this.secret, hh])
  }

  verifyProof (hh: Buffer, isInitiator: boolean, proof: Buffer): boolean {
    const want = this.proof(hh, isInitiator)
    return want !== null && want.equals(proof)
  }
}
