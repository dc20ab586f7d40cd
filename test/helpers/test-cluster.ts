import { EventEmitter } from 'node:events'
import crypto from 'hypercore-crypto'
import type { DevicesMessage } from '../../src/main/sync/wire/arbor-messages'
import type { ClusterMembership } from '../../src/main/sync/sync-node'

export type TestDevices = Map<string, { name: string; addedAt: number }>

/**
 * An in-memory cluster for sync tests (and bench/sync) that do not exercise pairing: every
 * device given is trusted, and the proofs are real hashes over the shared secret. Given a
 * TestDevices map rather than keys, it trusts what is in that map, shared with whoever else
 * holds it (a device added there is trusted by all of them at once).
 */
export class TestCluster extends EventEmitter<{ devices: [] }> implements ClusterMembership {
  readonly devices: TestDevices
  constructor (public secret: Buffer | null, devices: string[] | TestDevices, readonly name = 'test') {
    super()
    this.devices = devices instanceof Map ? devices : new Map()
    if (Array.isArray(devices)) for (const d of devices) this.add(d)
  }

  /** Trusts a device (named by the start of its key) unless it is trusted already; the nodes on this cluster hear of it (`devices`), as from a ClusterStore. */
  add (device: string): void {
    if (this.devices.has(device)) return
    this.devices.set(device, { name: device.slice(0, 6), addedAt: 0 })
    this.emit('devices')
  }

  isTrusted (device: string): boolean { return this.devices.has(device) }
  devicesMessage (): DevicesMessage {
    return { devices: [...this.devices].map(([key, d]) => ({ key, name: d.name, addedAt: d.addedAt })), forgotten: [] }
  }

  merge (msg: DevicesMessage): boolean {
    let changed = false
    for (const d of msg.devices) if (!this.devices.has(d.key)) { this.devices.set(d.key, { name: d.name, addedAt: d.addedAt }); changed = true }
    if (changed) this.emit('devices')
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
