import { describe, expect, it } from 'vitest'
import path from 'node:path'
import Hyperswarm from 'hyperswarm'
import DHT from 'hyperdht'
import createTestnet from 'hyperdht/testnet.js'
import crypto from 'hypercore-crypto'
import { ClusterStore } from '../../../src/main/sync/cluster/cluster-store'
import { PairingError, PairingHost, createInvite, joinCluster, type PairedDevice } from '../../../src/main/sync/cluster/pairing'
import { memoryLogger } from '../../../src/shared/logger'
import { perTest } from '../../helpers/per-test'

// Pairing over Hyperswarm on a HyperDHT testnet bound to loopback (notes/holepunch.md, 1-2, 4).

// undone in reverse order of creation: pairing hosts, then swarms, then the testnet
const { dirs, defer } = perTest('arbor-pairing-')

type Bootstrap = Array<{ host: string; port: number }>

async function testnet (): Promise<Bootstrap> {
  const t = await createTestnet(3)
  defer(() => t.destroy())
  return t.bootstrap
}

function swarm (bootstrap: Bootstrap, firewall?: (key: Buffer) => boolean): Hyperswarm {
  const s = new Hyperswarm({ dht: new DHT({ bootstrap, host: '127.0.0.1' }), ...(firewall ? { firewall } : {}) })
  defer(() => s.destroy())
  return s
}

interface Device { name: string; key: Buffer; hex: string; cluster: ClusterStore; swarm: Hyperswarm }

async function device (name: string, bootstrap: Bootstrap, file?: string, firewall?: (key: Buffer) => boolean): Promise<Device> {
  const key = crypto.keyPair().publicKey
  const cluster = await ClusterStore.open({ file: file ?? path.join(await dirs.make(), 'cluster.json'), name, log: memoryLogger() })
  return { name, key, hex: key.toString('hex'), cluster, swarm: swarm(bootstrap, firewall) }
}

async function host (d: Device, onPaired?: (p: PairedDevice) => void, pollMs?: number): Promise<PairingHost> {
  const h = new PairingHost({ swarm: d.swarm, cluster: d.cluster, device: { publicKey: d.key }, log: memoryLogger(), ...(onPaired ? { onPaired } : {}), ...(pollMs ? { pollMs } : {}) })
  defer(() => h.close())
  await h.ready()
  return h
}

function join (d: Device, code: string, extra: { timeoutMs?: number; now?: () => number; pollMs?: number; signal?: AbortSignal } = {}): Promise<Buffer> {
  return joinCluster({ swarm: d.swarm, code, device: { publicKey: d.key }, name: d.name, cluster: d.cluster, timeoutMs: 15_000, ...extra })
}

async function failure (p: Promise<unknown>): Promise<PairingError> {
  const err = await p.then(() => null, (e: unknown) => e)
  expect(err).toBeInstanceOf(PairingError)
  return err as PairingError
}

describe('pairing devices over a HyperDHT testnet (loopback)', () => {
  it('A invites, B joins: both trust each other, share the secret, B learns A\'s other devices; the code is one-time', async () => {
    const bootstrap = await testnet()
    const [a, b, c] = [await device('desk', bootstrap), await device('laptop', bootstrap), await device('phone', bootstrap)]
    const tablet = crypto.keyPair().publicKey.toString('hex')
    a.cluster.trust(tablet, 'tablet') // paired earlier
    const paired: PairedDevice[] = []
    const h = await host(a, p => paired.push(p))
    const { code } = await createInvite(a.cluster)
    await h.flushed()

    const t0 = performance.now()
    const inviter = await join(b, code)
    const ms = performance.now() - t0
    console.log(`pairing over the testnet: ${ms.toFixed(0)} ms`)

    expect(inviter.equals(a.key)).toBe(true)
    expect(b.cluster.secret?.equals(a.cluster.secret as Buffer)).toBe(true)
    expect(b.cluster.isTrusted(a.hex)).toBe(true)
    expect(a.cluster.isTrusted(b.hex)).toBe(true)
    expect(b.cluster.isTrusted(tablet)).toBe(true)
    expect(b.cluster.devices().find(d => d.key === a.hex)?.name).toBe('desk')
    expect(a.cluster.devices().find(d => d.key === b.hex)?.name).toBe('laptop')
    expect(paired).toEqual([{ key: b.hex, name: 'laptop' }])
    expect(b.cluster.topic()?.equals(a.cluster.topic() as Buffer)).toBe(true)
    // both sides wrote it down
    const bAgain = await ClusterStore.open({ file: b.cluster.file })
    expect(bAgain.secret?.equals(a.cluster.secret as Buffer)).toBe(true)
    expect(bAgain.isTrusted(a.hex)).toBe(true)
    const aAgain = await ClusterStore.open({ file: a.cluster.file })
    expect(aAgain.isTrusted(b.hex)).toBe(true)
    expect(aAgain.invites()[0]?.usedBy).toBe(b.hex)

    // the same code again, from another device: refused, and C learns nothing
    const err = await failure(join(c, code))
    expect(err.code).toBe('USED')
    expect(err.message).toMatch(/already been used/)
    expect(c.cluster.secret).toBeNull()
    expect(a.cluster.isTrusted(c.hex)).toBe(false)
    expect(paired.length).toBe(1)
  })

  it('an expired invite fails: detected locally from the code, or refused by the inviting device', async () => {
    const bootstrap = await testnet()
    const [a, b] = [await device('desk', bootstrap), await device('laptop', bootstrap)]
    await host(a)

    const { code } = await createInvite(a.cluster, { expiresMs: 60_000 })
    const local = await failure(join(b, code, { now: () => Date.now() + 120_000 }))
    expect(local.code).toBe('EXPIRED')
    expect(local.message).toMatch(/^that invite expired at .*: ask for a new one$/)

    // B's clock is behind: it cannot tell, A refuses
    const short = await createInvite(a.cluster, { expiresMs: 1000 })
    await new Promise(resolve => setTimeout(resolve, 1100))
    const refused = await failure(join(b, short.code, { now: () => Date.now() - 60_000 }))
    expect(refused.code).toBe('EXPIRED')
    expect(refused.message).toMatch(/inviting device says that invite has expired/)
    expect(b.cluster.secret).toBeNull()
    expect(a.cluster.isTrusted(b.hex)).toBe(false)
  })

  it('a malformed code fails at once and clearly', async () => {
    const bootstrap = await testnet()
    const b = await device('laptop', bootstrap)
    for (const code of ['not a code', 'ybndrfg8ejkm', '']) {
      const err = await failure(join(b, code))
      expect(err.code).toBe('BAD_CODE')
      expect(err.message).toBe('that is not an Arbor invite code')
    }
  })

  it('nobody answering is a timeout; a node restarted within the expiry still accepts its invite', async () => {
    const bootstrap = await testnet()
    const [a, b] = [await device('desk', bootstrap), await device('laptop', bootstrap)]
    const { code } = await createInvite(a.cluster) // A's host is not running
    const err = await failure(join(b, code, { timeoutMs: 1500 }))
    expect(err.code).toBe('TIMEOUT')
    expect(err.message).toBe('no device answered the invite within 2 s: is the inviting device online?')

    // cancelling stops the attempt at once
    const ac = new AbortController()
    const t0 = performance.now()
    const attempt = join(b, code, { signal: ac.signal })
    setTimeout(() => ac.abort(), 100)
    expect((await failure(attempt)).code).toBe('CANCELLED')
    expect(performance.now() - t0).toBeLessThan(2000)
    expect(b.cluster.secret).toBeNull()

    // A "restarts": a new store read from its file, a new swarm, a new host
    const a2 = await device('desk', bootstrap, a.cluster.file)
    a2.key = a.key
    a2.hex = a.hex
    await host(a2)
    const inviter = await join(b, code)
    expect(inviter.equals(a.key)).toBe(true)
    expect(a2.cluster.isTrusted(b.hex)).toBe(true)
    expect(b.cluster.secret?.equals(a2.cluster.secret as Buffer)).toBe(true)
  })

  it('pairs without a connection, through the DHT records, when a firewall refuses strangers', async () => {
    const bootstrap = await testnet()
    const a = await device('desk', bootstrap, undefined, () => true) // refuses every connection
    const b = await device('laptop', bootstrap)
    for (let i = 0; i < 5; i++) a.cluster.trust(crypto.keyPair().publicKey, `device with a longish name ${i}`)
    a.cluster.forget(crypto.keyPair().publicKey)
    await host(a, undefined, 300)
    const { code } = await createInvite(a.cluster)
    const t0 = performance.now()
    const inviter = await join(b, code, { pollMs: 300 })
    console.log(`pairing through DHT records: ${(performance.now() - t0).toFixed(0)} ms`)
    expect(inviter.equals(a.key)).toBe(true)
    expect(b.cluster.devices().length).toBe(6)
    expect(b.cluster.forgotten().length).toBe(1)
    expect(a.swarm.connections.size).toBe(0)
  })
})
