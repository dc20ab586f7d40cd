import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import crypto from 'hypercore-crypto'
import { clusterTopic, proof, verifyProof } from '../../../src/main/sync/cluster/cluster-keys'
import { z } from 'zod'
import { DevicesMessage } from '../../../src/main/sync/wire/arbor-messages'
import { ClusterFileError, ClusterStore, describeForget } from '../../../src/main/sync/cluster/cluster-store'
import { STATEMENT_MAX_SKEW_MS, signAdd, signName, signRemove, type KeyPair } from '../../../src/main/sync/cluster/membership'
import { createInvite, decodeInviteCode, PairingError } from '../../../src/main/sync/cluster/pairing'
import type { ClusterMembership } from '../../../src/main/sync/sync-node'
import { memoryLogger } from '../../../src/shared/logger'
import { addOf, pairStores, testKey } from '../../helpers/membership-fixtures'
import { smallDisk, smallDiskProblem } from '../../helpers/small-disk'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs('arbor-cluster-')
afterEach(() => dirs.cleanup())

const key = (): string => crypto.randomBytes(32).toString('hex')

async function fresh (device?: string, keyPair?: KeyPair, name?: string): Promise<ClusterStore> {
  const file = path.join(await dirs.make(), 'cluster.json')
  return ClusterStore.open({ file, log: memoryLogger(), ...(device !== undefined ? { device } : {}), ...(keyPair !== undefined ? { keyPair } : {}), ...(name !== undefined ? { name } : {}) })
}

describe('cluster keys', () => {
  const secret = crypto.randomBytes(32)
  const hh = crypto.randomBytes(64)

  it('derive a 32-byte topic that depends on the secret and is no plain hash of it', () => {
    const t = clusterTopic(secret)
    expect(t.byteLength).toBe(32)
    expect(clusterTopic(Buffer.from(secret)).equals(t)).toBe(true)
    expect(clusterTopic(crypto.randomBytes(32)).equals(t)).toBe(false)
    expect(crypto.hash(secret).equals(t)).toBe(false)
    expect(crypto.discoveryKey(secret).equals(t)).toBe(false)
    expect(() => clusterTopic(Buffer.alloc(16))).toThrow(/32 bytes/)
  })

  it('proofs bind the secret, the connection and the role', () => {
    const mine = proof(secret, hh, true)
    expect(mine.byteLength).toBe(32)
    expect(mine.equals(proof(secret, hh, false))).toBe(false)
    expect(verifyProof(secret, hh, true, mine)).toBe(true)
    expect(verifyProof(secret, hh, false, mine)).toBe(false) // reflected back: refused
    expect(verifyProof(secret, crypto.randomBytes(64), true, mine)).toBe(false) // replayed on another connection
    expect(verifyProof(crypto.randomBytes(32), hh, true, mine)).toBe(false)
    expect(verifyProof(secret, hh, true, mine.subarray(0, 31))).toBe(false)
    expect(verifyProof(secret, hh, true, Buffer.alloc(32))).toBe(false)
  })
})

describe('ClusterStore', () => {
  it('a missing file is an unpaired device; nothing is written until asked', async () => {
    const s = await fresh()
    expect(s.secret).toBeNull()
    expect(s.topic()).toBeNull()
    expect(s.proof(crypto.randomBytes(64), true)).toBeNull()
    expect(s.name).toBe(os.hostname())
    expect(s.devices()).toEqual([])
    await expect(fs.stat(s.file)).rejects.toThrow(/ENOENT/)
  })

  it('creates the secret once, writes atomically with mode 0600, and reloads it', async () => {
    const s = await fresh()
    const secret = s.ensureSecret()
    expect(secret.byteLength).toBe(32)
    expect(s.ensureSecret().equals(secret)).toBe(true)
    s.trust(key(), 'laptop')
    await s.save()
    expect((await fs.stat(s.file)).mode & 0o777).toBe(0o600)
    expect(await fs.readdir(path.dirname(s.file))).toEqual(['cluster.json']) // no tmp files left
    const json = JSON.parse(await fs.readFile(s.file, 'utf8')) as { v: number; secret: string }
    expect(json.v).toBe(1)
    expect(json.secret).toBe(secret.toString('hex'))

    const again = await ClusterStore.open({ file: s.file })
    expect(again.secret?.equals(secret)).toBe(true)
    expect(again.devices().map(d => d.name)).toEqual(['laptop'])
    expect(again.topic()?.equals(clusterTopic(secret))).toBe(true)
  })

  it('a file left readable by others becomes 0600 on the next save', async () => {
    const s = await fresh()
    await fs.writeFile(s.file, JSON.stringify({ v: 1, secret: null, name: 'x', devices: [], forgotten: [] }), { mode: 0o644 })
    await s.load()
    s.ensureSecret()
    await s.save()
    expect((await fs.stat(s.file)).mode & 0o777).toBe(0o600)
  })

  it.skipIf(smallDiskProblem !== null)(`a failed write (a full disk) leaves the previous file whole and no temporary${smallDiskProblem !== null ? ` (skipped: ${smallDiskProblem})` : ''}`, async () => {
    const disk = smallDisk(2)
    try {
      const file = path.join(disk.dir, 'sync', 'cluster.json')
      const s = await ClusterStore.open({ file, log: memoryLogger() })
      const secret = s.ensureSecret()
      await s.save()
      const before = await fs.readFile(s.file, 'utf8')
      disk.fill()
      s.setSecret(crypto.randomBytes(32))
      await expect(s.save()).rejects.toThrow(`the disk holding ${path.dirname(file)} is full`)
      expect(await fs.readFile(s.file, 'utf8')).toBe(before)
      expect((await fs.readdir(path.dirname(file))).filter(n => n.endsWith('.tmp'))).toEqual([])
      expect((await ClusterStore.open({ file: s.file })).secret?.equals(secret)).toBe(true)
      disk.free()
      await s.save()
      expect((await ClusterStore.open({ file: s.file })).secret?.equals(secret)).toBe(false)
    } finally {
      disk.unmount()
    }
  })

  it('serializes concurrent saves: the file ends with the last state', async () => {
    const s = await fresh()
    const keys = Array.from({ length: 20 }, key)
    await Promise.all(keys.map((k, i) => { s.trust(k, `d${i}`); return s.save() }))
    const again = await ClusterStore.open({ file: s.file })
    expect(again.devices().map(d => d.key)).toEqual(keys)
  })

  it('a corrupt file is a clear error naming the file, and is left as it was', async () => {
    const s = await fresh()
    for (const [content, why] of [
      ['{"v":1,"secret":"ab', /corrupt \(not JSON\)/],
      [JSON.stringify({ v: 1, secret: 'nothex', name: 'x', devices: [], forgotten: [] }), /corrupt \(secret/],
      [JSON.stringify({ v: 1, secret: null, name: 'x', devices: [{ key: 'k' }], forgotten: [] }), /corrupt \(devices\.0/],
      [JSON.stringify({ v: 2, secret: null }), /version 2/],
      ['[]', /corrupt/]
    ] as const) {
      await fs.writeFile(s.file, content)
      const err = await ClusterStore.open({ file: s.file }).then(() => null, (e: unknown) => e)
      expect(err).toBeInstanceOf(ClusterFileError)
      expect((err as Error).message).toContain(s.file)
      expect((err as Error).message).toMatch(why)
      expect(await fs.readFile(s.file, 'utf8')).toBe(content)
    }
  })

  it('forget: no longer trusted, recorded, not re-added by a merge; trust re-pairs explicitly', async () => {
    const me = key()
    const s = await fresh(me)
    const [a, b] = [key(), key()]
    s.trust(a, 'a', 100)
    s.trust(b, 'b', 100)
    expect(s.isTrusted(a)).toBe(true)
    expect(s.isTrusted(me)).toBe(true) // itself
    expect(s.forget(a, 200)).toBe(true)
    expect(s.isTrusted(a)).toBe(false)
    expect(s.forgotten()).toEqual([{ key: a, at: 200 }])
    // a peer that has not heard of the forget lists a again: it stays out
    expect(s.merge({ devices: [{ key: a, name: 'a', addedAt: 300 }], forgotten: [] }, b)).toBe(false)
    expect(s.isTrusted(a)).toBe(false)
    // explicit re-pairing is the way back
    s.trust(a, 'a again', 400)
    expect(s.isTrusted(a)).toBe(true)
    expect(s.forgotten()).toEqual([])
    await s.save()
    const again = await ClusterStore.open({ file: s.file })
    expect(again.devices().map(d => d.name).sort()).toEqual(['a again', 'b'])
  })

  it('merge: learns members only from signed statements of trusted peers; never itself; the unsigned lists change nothing', async () => {
    const me = testKey()
    const s = await fresh(me.key, me.kp)
    const [b, c, d, stranger] = [testKey(), testKey(), testKey(), testKey()]
    s.trust(b.key, 'b', 100)
    const cByB = addOf(b, c, 'c', 200)
    // from a device this one does not trust: nothing
    expect(s.merge({ devices: [], forgotten: [], statements: [cByB] }, stranger.key)).toBe(false)
    expect(s.isTrusted(c.key)).toBe(false)
    // unsigned lists from a trusted peer (an older Arbor): nothing either
    expect(s.merge({ devices: [{ key: c.key, name: 'c', addedAt: 50 }, { key: me.key, name: 'me?', addedAt: 1 }], forgotten: [] }, b.key)).toBe(false)
    expect(s.isTrusted(c.key)).toBe(false)
    // a signed add by a member: learnt, named as c chose (its co-signature)
    expect(s.merge({ devices: [], forgotten: [], statements: [cByB] }, b.key)).toBe(true)
    expect(s.devices().find(x => x.key === c.key)).toMatchObject({ name: 'c', addedAt: 200, addedBy: b.key })
    expect(s.devices().some(x => x.key === me.key)).toBe(false)
    // the same again changes nothing; c is passed on to this device's peers
    expect(s.merge({ devices: [], forgotten: [], statements: [cByB] }, b.key)).toBe(false)
    expect(s.devicesMessage().statements).toContainEqual(cByB)
    // b cannot rename c, nor sign c in as its own introduction with c's co-signature, nor introduce d with c's
    const renamed = { ...signName(b.kp, 'evil c', 300), device: c.key }
    const stolen = signAdd(b.kp, { device: c.key, name: 'c', join: cByB.join, nonce: crypto.randomBytes(32).toString('hex'), at: 300 })
    const dWithCsJoin = signAdd(b.kp, { device: d.key, name: 'c', join: cByB.join, nonce: cByB.nonce, at: 300 })
    expect(s.merge({ devices: [], forgotten: [], statements: [renamed, stolen, dWithCsJoin] }, b.key)).toBe(false)
    expect(s.devices().find(x => x.key === c.key)?.name).toBe('c')
    expect(s.isTrusted(d.key)).toBe(false)
    // c renames itself: honoured
    expect(s.merge({ devices: [], forgotten: [], statements: [signName(c.kp, 'c renamed', 400)] }, b.key)).toBe(true)
    expect(s.devices().find(x => x.key === c.key)?.name).toBe('c renamed')
    // an older device names itself in its own unsigned list (over its own connection): kept while it signed no name
    expect(s.merge({ devices: [{ key: b.key, name: 'b renamed by b', addedAt: 100 }], forgotten: [] }, b.key)).toBe(true)
    expect(s.devices().find(x => x.key === b.key)?.name).toBe('b renamed by b')
    // malformed statements are skipped
    expect(s.merge({ devices: [{ key: 'zz', name: 'x', addedAt: 1 }], forgotten: [{ key: d.key.slice(2), at: 5 }], statements: [{ t: 'add' }, 'x', null] }, b.key)).toBe(false)
  })

  it('merge: a removal is honoured when signed by the device itself or its introducer, passed on, and undone only by that introducer\'s re-pairing', async () => {
    const me = testKey()
    const s = await fresh(me.key, me.kp)
    const [b, c, d, e] = [testKey(), testKey(), testKey(), testKey()]
    s.trust(b.key, 'b', 100)
    s.merge({ devices: [], forgotten: [], statements: [addOf(b, c, 'c', 150), addOf(b, d, 'd', 150), addOf(b, e, 'e', 150)] }, b.key)
    expect([c, d, e].every(x => s.isTrusted(x.key))).toBe(true)
    // unsigned forgets, and a removal signed by a device that did not pair it: nothing
    expect(s.merge({ devices: [], forgotten: [{ key: c.key, at: 200 }], statements: [signRemove(d.kp, c.key, 200)] }, b.key)).toBe(false)
    expect(s.isTrusted(c.key)).toBe(true)
    // by its introducer, and by the device itself (leaving): honoured
    expect(s.merge({ devices: [], forgotten: [], statements: [signRemove(b.kp, c.key, 200), signRemove(e.kp, e.key, 250)] }, b.key)).toBe(true)
    expect(s.isTrusted(c.key)).toBe(false)
    expect(s.isTrusted(e.key)).toBe(false)
    expect(s.forgotten().map(f => f.key).sort()).toEqual([c.key, e.key].sort())
    // this device tells its own peers (signed, and in the unsigned list for older ones)
    expect(s.devicesMessage().forgotten.map(f => f.key).sort()).toEqual([c.key, e.key].sort())
    expect(s.devicesMessage().statements?.filter(x => (x as { t: string }).t === 'remove').length).toBe(2)
    // an old add again, or one by another member (even with c's fresh co-signature): c stays out
    expect(s.merge({ devices: [], forgotten: [], statements: [addOf(b, c, 'c', 180), addOf(d, c, 'c', 300)] }, b.key)).toBe(true)
    expect(s.isTrusted(c.key)).toBe(false)
    // its introducer pairs it again (a fresh co-signature, after the removal): back
    expect(s.merge({ devices: [], forgotten: [], statements: [addOf(b, c, 'c', 400)] }, b.key)).toBe(true)
    expect(s.isTrusted(c.key)).toBe(true)
    // e left: it comes back through any member
    s.merge({ devices: [], forgotten: [], statements: [addOf(d, e, 'e', 500)] }, b.key)
    expect(s.isTrusted(e.key)).toBe(true)
  })

  it('membership is transitive along a chain of pairings; a forget by the introducer travels; a forget elsewhere stays there', async () => {
    const [ka, kb, kc, kx] = [testKey(), testKey(), testKey(), testKey()]
    const a = await fresh(ka.key, ka.kp, 'a')
    const b = await fresh(kb.key, kb.kp, 'b')
    const c = await fresh(kc.key, kc.kp, 'c')
    const x = await fresh(kx.key, kx.kp, 'x')
    pairStores({ store: a, id: ka }, { store: b, id: kb }, 'b', 1)
    pairStores({ store: b, id: kb }, { store: c, id: kc }, 'c', 2)
    pairStores({ store: a, id: ka }, { store: x, id: kx }, 'x', 3)
    b.merge(a.devicesMessage(), ka.key)
    c.merge(b.devicesMessage(), kb.key)
    expect(c.devices().map(d => d.key).sort()).toEqual([ka.key, kb.key, kx.key].sort())
    expect(c.devices().find(d => d.key === kx.key)).toMatchObject({ name: 'x', addedBy: ka.key })
    a.merge(b.devicesMessage(), kb.key)
    expect(a.devices().map(d => d.key).sort()).toEqual([kb.key, kc.key, kx.key].sort())
    // c, which did not pair x, forgets it: there only, and it says who can remove it everywhere
    expect(c.forgetScope(kx.key)).toEqual({ everywhere: false, others: [{ key: ka.key, name: 'a' }], paired: [] })
    c.forget(kx.key, 9)
    b.merge(c.devicesMessage(), kc.key)
    expect(b.isTrusted(kx.key)).toBe(true)
    // a paired x: its forget travels to c through b
    expect(a.forgetScope(kx.key)).toEqual({ everywhere: true, others: [], paired: [] })
    a.forget(kx.key, 10)
    b.merge(a.devicesMessage(), ka.key)
    expect(b.isTrusted(kx.key)).toBe(false)
    c.merge(b.devicesMessage(), kb.key)
    expect(c.isTrusted(kx.key)).toBe(false)
    // and c's list does not bring x back to a
    a.merge(c.devicesMessage(), kc.key)
    expect(a.isTrusted(kx.key)).toBe(false)
  })

  it('seen is written lazily; flush writes it; devicesMessage lists this device first', async () => {
    const me = key()
    const s = await ClusterStore.open({ file: path.join(await dirs.make(), 'c.json'), device: me, name: 'desk', seenSaveDelayMs: 60_000 })
    const b = key()
    s.trust(b, 'b', 1)
    await s.flush()
    s.seen(b, 12345)
    s.seen(key(), 1) // unknown: ignored
    expect((await ClusterStore.open({ file: s.file })).devices()[0]?.lastSeen).toBeUndefined()
    await s.flush()
    expect((await ClusterStore.open({ file: s.file })).devices()[0]?.lastSeen).toBe(12345)
    expect(s.devicesMessage().devices[0]).toEqual({ key: me, name: 'desk', addedAt: 0 })
  })

  it('serves as the sync layer\'s cluster membership', async () => {
    const s = await fresh(key())
    const m: ClusterMembership = s
    s.setSecret(crypto.randomBytes(32))
    const hh = crypto.randomBytes(64)
    const p = m.proof(hh, false) as Buffer
    expect(m.verifyProof(hh, false, p)).toBe(true)
    expect(m.verifyProof(hh, true, p)).toBe(false)
    expect(m.topic()?.byteLength).toBe(32)
  })
})

// The schemas of the version before signed membership (copied as they were): what an older
// Arbor runs on the same file and on the same channel.
const OldHex32 = z.string().regex(/^[0-9a-f]{64}$/)
const OldTime = z.number().finite().nonnegative()
const OldClusterFile = z.object({
  v: z.literal(1),
  secret: OldHex32.nullable(),
  name: z.string(),
  devices: z.array(z.object({ key: OldHex32, name: z.string(), addedAt: OldTime, lastSeen: OldTime.optional() })),
  forgotten: z.array(z.object({ key: OldHex32, at: OldTime })),
  invites: z.array(z.object({
    id: OldHex32, seed: OldHex32, key: OldHex32, createdAt: OldTime, expiresAt: OldTime, usedBy: OldHex32.optional(), usedAt: OldTime.optional()
  })).default([])
})
const OldDevicesMessage = z.object({
  devices: z.array(z.object({ key: OldHex32, name: z.string().max(200), addedAt: z.number() })).max(1000),
  forgotten: z.array(z.object({ key: OldHex32, at: z.number() })).max(10_000)
})

describe('membership across versions, dates and names', () => {
  it('a cluster file of the previous version loads: its devices stay trusted, its forgets stay; an older Arbor loads the new file', async () => {
    const me = testKey()
    const [b, c, gone] = [testKey(), testKey(), testKey()]
    const file = path.join(await dirs.make(), 'cluster.json')
    const secret = crypto.randomBytes(32).toString('hex')
    await fs.writeFile(file, JSON.stringify({ v: 1, secret, name: 'desk', devices: [{ key: b.key, name: 'b', addedAt: 5, lastSeen: 7 }, { key: c.key, name: 'c', addedAt: 6 }], forgotten: [{ key: gone.key, at: 3 }], invites: [] }))
    const s = await ClusterStore.open({ file, device: me.key, keyPair: me.kp, log: memoryLogger() })
    expect(s.devices()).toEqual([{ key: b.key, name: 'b', addedAt: 5, lastSeen: 7 }, { key: c.key, name: 'c', addedAt: 6 }])
    expect(s.forgotten()).toEqual([{ key: gone.key, at: 3 }])
    // trusted by the user's acts here: a forget is local (nobody signed their pairing)
    expect(s.forgetScope(b.key)).toEqual({ everywhere: false, others: [], paired: [] })
    s.forget(c.key, 10)
    s.merge({ devices: [], forgotten: [], statements: [addOf(b, testKey(), 'tablet', 20)] }, b.key)
    await s.save()
    const written = JSON.parse(await fs.readFile(file, 'utf8')) as unknown
    // an older Arbor reads it: the members as its trusted devices, the forgets as forgotten
    const old = OldClusterFile.parse(written)
    expect(old.devices.map(d => d.key).sort()).toEqual(s.devices().map(d => d.key).sort())
    expect(old.forgotten.map(f => f.key).sort()).toEqual([gone.key, c.key].sort())
    // and this version reads back the same state
    const again = await ClusterStore.open({ file, device: me.key, log: memoryLogger() })
    expect(again.devices()).toEqual(s.devices())
    expect(again.forgotten().sort((x, y) => x.at - y.at)).toEqual(s.forgotten().sort((x, y) => x.at - y.at))
    expect(again.statements()).toEqual(s.statements())
  })

  it('the devices message still parses for an older peer (which drops the statements); its own lists are ignored here and logged once', async () => {
    const me = testKey()
    const log = memoryLogger()
    const s = await ClusterStore.open({ file: path.join(await dirs.make(), 'c.json'), device: me.key, keyPair: me.kp, name: 'desk', log })
    s.setSecret(crypto.randomBytes(32))
    const b = testKey()
    s.trust(b.key, 'b', 1)
    s.merge({ devices: [], forgotten: [], statements: [addOf(b, testKey(), 'phone', 2)] }, b.key)
    const msg = s.devicesMessage()
    expect(DevicesMessage.parse(msg)).toEqual(msg)
    const old = OldDevicesMessage.parse(msg)
    expect(old).not.toHaveProperty('statements')
    expect(old.devices.map(d => d.name)).toEqual(['desk', 'b', 'phone'])
    // what an older peer sends: parsed, and changes nothing here
    const stranger = testKey()
    const fromOld = DevicesMessage.parse({ devices: [{ key: stranger.key, name: 'x', addedAt: 3 }], forgotten: [{ key: b.key, at: 4 }] })
    expect(s.merge(fromOld, b.key)).toBe(false)
    expect(s.merge(fromOld, b.key)).toBe(false)
    expect(s.isTrusted(stranger.key) || !s.isTrusted(b.key)).toBe(false)
    const warned = log.lines.filter(l => l.message.includes('without signed statements'))
    expect(warned).toEqual([expect.objectContaining({ level: 'warn', message: expect.stringMatching(/^b listed 1 device to add and 1 to remove without signed statements \(it runs an older Arbor\); ignored/) as unknown })])
  })

  it('a forget made without the key pair (a CLI command with no node) is signed when the key pair comes; the file says which device it is', async () => {
    const me = testKey()
    const b = testKey()
    const file = path.join(await dirs.make(), 'cluster.json')
    const node = await ClusterStore.open({ file, device: me.key, keyPair: me.kp, log: memoryLogger() })
    const x = testKey()
    pairStores({ store: node, id: me }, { store: await fresh(x.key, x.kp), id: x }, 'x', 5)
    node.trust(b.key, 'b', 6)
    await node.close()
    const cli = await ClusterStore.open({ file, log: memoryLogger() })
    expect(cli.device).toBe(me.key)
    expect(cli.forgetScope(x.key).everywhere).toBe(true)
    cli.forget(x.key, 10)
    expect(cli.statements().some(st => st.t === 'remove')).toBe(false)
    await cli.close()
    const later = await ClusterStore.open({ file, device: me.key, log: memoryLogger() })
    later.useKeyPair(me.kp)
    const removal = later.statements().find(st => st.t === 'remove')
    expect(removal).toMatchObject({ device: x.key, by: me.key, at: 10 })
    // a peer honours it (this device paired x)
    const peer = await fresh(b.key, b.kp)
    peer.trust(me.key, 'me', 1)
    peer.merge(later.devicesMessage(), me.key)
    expect(peer.isTrusted(x.key)).toBe(false)
  })

  it('a statement dated more than the skew ahead is not honoured until it is due; then the change is reported', async () => {
    let now = 1_000_000
    const me = testKey()
    const s = await ClusterStore.open({ file: path.join(await dirs.make(), 'c.json'), device: me.key, keyPair: me.kp, log: memoryLogger(), now: () => now })
    const [b, c] = [testKey(), testKey()]
    s.trust(b.key, 'b', now)
    s.merge({ devices: [], forgotten: [], statements: [addOf(b, c, 'c', now)] }, b.key)
    const events: number[] = []
    s.on('devices', () => events.push(now))
    // within the skew: honoured at once
    expect(s.merge({ devices: [], forgotten: [], statements: [signName(c.kp, 'c soon', now + STATEMENT_MAX_SKEW_MS)] }, b.key)).toBe(true)
    expect(s.devices().find(d => d.key === c.key)?.name).toBe('c soon')
    // beyond: kept, not honoured while ahead
    const at = now + STATEMENT_MAX_SKEW_MS + 60_000
    s.merge({ devices: [], forgotten: [], statements: [signRemove(b.kp, c.key, at)] }, b.key)
    expect(s.isTrusted(c.key)).toBe(true)
    now = at - STATEMENT_MAX_SKEW_MS - 1
    expect(s.isTrusted(c.key)).toBe(true)
    now = at - STATEMENT_MAX_SKEW_MS
    expect(s.isTrusted(c.key)).toBe(false)
    // a forget here after a statement dated ahead (within the skew) still takes effect
    const d = testKey()
    now += 1
    s.merge({ devices: [], forgotten: [], statements: [addOf(b, d, 'd', now + STATEMENT_MAX_SKEW_MS - 1)] }, b.key)
    expect(s.isTrusted(d.key)).toBe(true)
    s.forget(d.key)
    expect(s.isTrusted(d.key)).toBe(false)
    expect(events.length).toBeGreaterThanOrEqual(2)
    await s.close()
  })

  it('a newcomer named like a member (or like this device) is shown with who added it and its key', async () => {
    const me = testKey()
    const s = await ClusterStore.open({ file: path.join(await dirs.make(), 'c.json'), device: me.key, keyPair: me.kp, name: 'desk', log: memoryLogger() })
    const [laptop, cloud, fake, fake2] = [testKey(), testKey(), testKey(), testKey()]
    s.trust(laptop.key, 'laptop', 1)
    s.trust(cloud.key, 'cloud', 1)
    s.merge({ devices: [], forgotten: [], statements: [addOf(cloud, fake, 'Laptop ', 2), addOf(cloud, fake2, 'desk', 2)] }, cloud.key)
    expect(s.merge({ devices: [], forgotten: [], statements: [addOf(cloud, fake, 'Laptop', 2)] }, cloud.key)).toBe(true)
    const names = Object.fromEntries(s.devices().map(d => [d.key, d.name]))
    expect(names).toEqual({
      [laptop.key]: `laptop (${laptop.key.slice(0, 8)})`,
      [cloud.key]: 'cloud',
      [fake.key]: `Laptop (added by cloud, ${fake.key.slice(0, 8)})`,
      [fake2.key]: `desk (added by cloud, ${fake2.key.slice(0, 8)})`
    })
  })
})

describe('what arbor forget says', () => {
  it('says whether the forget reaches every device, who else could make it, and what the device paired', () => {
    expect(describeForget('cloud', { everywhere: true, others: [], paired: [] }, false)).toBe('forgot cloud: it is no longer accepted here, and your other devices drop it as they hear of it (this device paired it)')
    expect(describeForget('cloud', { everywhere: true, others: [], paired: ['laptop (added by cloud, 1234abcd)'] }, true)).toBe('forgot cloud: it is no longer accepted here; this device paired it, so your other devices drop it too once this device\'s node runs (`arbor serve`) and reaches them. It paired laptop (added by cloud, 1234abcd): they stay; if you do not know them, forget them here too, which now removes them everywhere')
    expect(describeForget('cloud', { everywhere: false, others: [{ key: 'k', name: 'server' }], paired: [] }, false)).toBe('forgot cloud here: this device no longer accepts it. server paired it — forget it there to remove it from every device')
    expect(describeForget('cloud', { everywhere: false, others: [], paired: [] }, false)).toMatch(/^forgot cloud here: this device no longer accepts it\. It was paired before devices signed their pairings \(or by an older Arbor\), so each device decides for itself: forget it on each of your devices to remove it everywhere$/)
  })
})

describe('invite codes', () => {
  it('createInvite makes the secret, remembers the invite in the file, and the code decodes', async () => {
    const s = await fresh()
    const t = Date.now()
    const { code, expiresAt, id } = await createInvite(s, { expiresMs: 60_000 })
    expect(s.secret).not.toBeNull()
    expect(expiresAt).toBeGreaterThanOrEqual(t + 60_000)
    expect(code).toMatch(/^[ybndrfg8ejkmcpqxot1uwisza345h769]+$/)
    const d = decodeInviteCode(`  ${code.toUpperCase()}\n`)
    expect(d.id).toBe(id)
    expect(Math.abs(d.expiresAt - expiresAt)).toBeLessThan(1000)
    const again = await ClusterStore.open({ file: s.file })
    expect(again.invites()).toEqual([expect.objectContaining({ id, expiresAt })])
    expect(again.secret?.equals(s.secret as Buffer)).toBe(true)
  })

  it('anything else is "not an Arbor invite code"', async () => {
    const s = await fresh()
    const { code } = await createInvite(s)
    for (const bad of ['', 'hello world', 'ybndrfg8', code.slice(0, -4), code + 'yy', code.replace(/^./, '0'), '{"invite":1}']) {
      const err = (() => { try { decodeInviteCode(bad); return null } catch (e) { return e } })()
      expect(err, bad).toBeInstanceOf(PairingError)
      expect((err as PairingError).code).toBe('BAD_CODE')
      expect((err as Error).message).toBe('that is not an Arbor invite code')
    }
  })
})
