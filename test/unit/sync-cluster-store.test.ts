import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import crypto from 'hypercore-crypto'
import { clusterTopic, proof, verifyProof } from '../../src/main/sync/cluster-keys'
import { ClusterFileError, ClusterStore } from '../../src/main/sync/cluster-store'
import { createInvite, decodeInviteCode, PairingError } from '../../src/main/sync/pairing'
import type { ClusterMembership } from '../../src/main/sync/sync-node'
import { memoryLogger } from '../../src/shared/logger'
import { tempDirs } from '../helpers/temp-dir'

const dirs = tempDirs('arbor-cluster-')
afterEach(() => dirs.cleanup())

const key = (): string => crypto.randomBytes(32).toString('hex')

async function fresh (device?: string): Promise<ClusterStore> {
  const file = path.join(await dirs.make(), 'cluster.json')
  return ClusterStore.open({ file, log: memoryLogger(), ...(device !== undefined ? { device } : {}) })
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

  it('a failed write leaves the previous file whole', async () => {
    const s = await fresh()
    const secret = s.ensureSecret()
    await s.save()
    const before = await fs.readFile(s.file, 'utf8')
    // the next tmp file's path is taken by a directory: the write fails before the rename
    const dir = path.dirname(s.file)
    for (let n = 1; n < 50; n++) await fs.mkdir(path.join(dir, `cluster.json.${process.pid}.${n}.tmp`), { recursive: true })
    s.setSecret(crypto.randomBytes(32))
    await expect(s.save()).rejects.toThrow()
    expect(await fs.readFile(s.file, 'utf8')).toBe(before)
    expect((await ClusterStore.open({ file: s.file })).secret?.equals(secret)).toBe(true)
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

  it('merge: learns members from trusted peers only, never itself, and names only from the device itself', async () => {
    const me = key()
    const s = await fresh(me)
    const [b, c, d, stranger] = [key(), key(), key(), key()]
    s.trust(b, 'b', 100)
    expect(s.merge({ devices: [{ key: c, name: 'c', addedAt: 50 }], forgotten: [] }, stranger)).toBe(false)
    expect(s.isTrusted(c)).toBe(false)
    const changed = s.merge({
      devices: [{ key: me, name: 'me?', addedAt: 1 }, { key: b, name: 'b renamed by b', addedAt: 100 }, { key: c, name: 'c', addedAt: 50 }],
      forgotten: []
    }, b)
    expect(changed).toBe(true)
    expect(s.devices().find(x => x.key === b)?.name).toBe('b renamed by b')
    expect(s.devices().find(x => x.key === c)).toMatchObject({ name: 'c', addedAt: 50 })
    expect(s.devices().some(x => x.key === me)).toBe(false)
    // b cannot rename c; the same message again changes nothing
    expect(s.merge({ devices: [{ key: c, name: 'evil c', addedAt: 50 }], forgotten: [] }, b)).toBe(false)
    expect(s.devices().find(x => x.key === c)?.name).toBe('c')
    // invalid entries are skipped
    expect(s.merge({ devices: [{ key: 'zz', name: 'x', addedAt: 1 }], forgotten: [{ key: d.slice(2), at: 5 }] }, b)).toBe(false)
  })

  it('merge: removals propagate (and are passed on), unless the device was re-paired after the forget', async () => {
    const s = await fresh(key())
    const [b, c, d, e] = [key(), key(), key(), key()]
    s.trust(b, 'b', 100)
    s.trust(c, 'c', 100)
    s.trust(d, 'd', 500) // re-paired here after b forgot it at 300
    expect(s.merge({ devices: [], forgotten: [{ key: c, at: 200 }, { key: d, at: 300 }, { key: e, at: 250 }] }, b)).toBe(true)
    expect(s.isTrusted(c)).toBe(false)
    expect(s.isTrusted(d)).toBe(true)
    expect(s.isTrusted(e)).toBe(false)
    // c and e are now forgotten here too, so this device tells its own peers
    expect(s.devicesMessage().forgotten.map(f => f.key).sort()).toEqual([c, e].sort())
    expect(s.merge({ devices: [{ key: e, name: 'e', addedAt: 1 }], forgotten: [] }, b)).toBe(false)
    // a later forget of the same key moves the time forward; an older one is no change
    expect(s.merge({ devices: [], forgotten: [{ key: c, at: 150 }] }, b)).toBe(false)
    expect(s.merge({ devices: [], forgotten: [{ key: c, at: 900 }] }, b)).toBe(true)
    expect(s.forgotten().find(f => f.key === c)?.at).toBe(900)
  })

  it('merge is transitive along a chain of devices', async () => {
    const [ka, kb, kc, kx] = [key(), key(), key(), key()]
    const a = await fresh(ka)
    const b = await fresh(kb)
    const c = await fresh(kc)
    a.trust(kb, 'b', 1); b.trust(ka, 'a', 1); b.trust(kc, 'c', 2); c.trust(kb, 'b', 2)
    a.trust(kx, 'x', 3)
    b.merge(a.devicesMessage(), ka)
    c.merge(b.devicesMessage(), kb)
    expect(c.devices().map(d => d.key).sort()).toEqual([ka, kb, kx].sort())
    expect(a.devices().length).toBe(2)
    a.merge(b.devicesMessage(), kb)
    expect(a.devices().map(d => d.key).sort()).toEqual([kb, kc, kx].sort())
    // a forgets x: the removal travels to c through b
    a.forget(kx, 10)
    b.merge(a.devicesMessage(), ka)
    c.merge(b.devicesMessage(), kb)
    expect(c.isTrusted(kx)).toBe(false)
    // and c's (now stale-free) list does not bring x back to a
    a.merge(c.devicesMessage(), kc)
    expect(a.isTrusted(kx)).toBe(false)
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
