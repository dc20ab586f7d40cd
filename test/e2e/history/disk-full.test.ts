/**
 * A full disk (issue 12, "Durable state"), on a file system of its own: a size-limited tmpfs.
 * Writes fail with an error that says so and names the directory; nothing acknowledged is
 * lost; reads and sync of what the device holds go on; writing resumes when space returns,
 * without a restart. State files keep their previous version and leave no temporary behind.
 *
 * How the disk is made full matters for RocksDB (under Hypercore): it preallocates its
 * write-ahead log (1.1 × its 64 MiB write buffer) when it opens one. A disk that is already
 * nearly full when the store opens cannot give it that, so the first write past the free space
 * meets the full disk itself, as a log does once it has used up what it was given. RocksDB then
 * refuses every write until it sees its write buffer's worth of free space again (it looks
 * every few seconds): the disks here are large enough to give that back.
 */
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ApiService } from '../../../src/main/api/api-service'
import { writeNodeSettings } from '../../../src/main/runtime/agent/agent-config'
import { FileSecretStore } from '../../../src/main/secrets/secret-store'
import { EncryptedSecretStore } from '../../../src/main/electron/secret-vault'
import { HistoryIndexFile, emptyIndex } from '../../../src/main/history/index/history-index'
import { HistoryStore } from '../../../src/main/history/history-store'
import { ViewState } from '../../../src/main/history/view-state'
import { ArborNode } from '../../../src/main/node'
import { ClusterStore } from '../../../src/main/sync/cluster/cluster-store'
import { LocalApiServer } from '../../../src/main/api/local-socket'
import { registerDataDir } from '../../../src/main/tools/sandbox/data-dir-registry'
import type { ApiEvent } from '../../../src/shared/api/api'
import type { Entry, EntryDraft } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { PeerNodes } from '../../helpers/peer-nodes'
import { smallDisk, smallDiskProblem, type SmallDisk } from '../../helpers/small-disk'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'

const MiB = 1024 * 1024
const FULL = (dir: string): string => `the disk holding ${dir} is full; free some space and try again in a few seconds (nothing already saved is lost)`

const { defer } = perTest()

function disk (sizeMiB: number): SmallDisk {
  const d = smallDisk(sizeMiB)
  defer(() => { d.unmount() })
  return d
}

async function rejection (p: Promise<unknown>): Promise<string> {
  try {
    await p
  } catch (err) {
    return (err as Error).message
  }
  throw new Error('expected a rejection')
}

/** A user entry after `parent`, large enough to need new pages of the disk. */
const user = (parent: string, text: string): EntryDraft => ({ kind: 'user', parents: [parent], body: { text: text + ' ' + 'x'.repeat(8192) } })

/** Retries `attempt` until it succeeds; every failure meanwhile must be the full disk. */
async function whenSpaceIsBack<T> (attempt: () => Promise<T>, full: string, what: string): Promise<T> {
  let result: { value: T } | undefined
  await until(async () => {
    try {
      result = { value: await attempt() }
      return true
    } catch (err) {
      expect((err as Error).message).toBe(full)
      return false
    }
  }, what, 20_000, 250)
  return (result as { value: T }).value
}

const skip = smallDiskProblem !== null
const why = skip ? ` (skipped: ${smallDiskProblem})` : ''

describe.skipIf(skip)(`a full disk${why}`, () => {
  it('HistoryStore: appends fail in words, reads go on, appends resume without a restart, and a reopen keeps every acknowledged entry', async () => {
    const d = disk(128)
    const dir = path.join(d.dir, 'data')
    d.fill(4 * MiB) // nearly full before the store opens (see the top of this file)
    const log = memoryLogger()
    const store = new HistoryStore({ dir, log, indexDelayMs: 20, manifestDelayMs: 20 })
    defer(async () => { if (!store.closed) await store.close() })
    await store.ready()
    const root = await store.createConversation({ title: 'on a small disk' })
    const acknowledged: Entry[] = [root]
    for (let i = 0; i < 5; i++) acknowledged.push(...await store.append(root.id, [user((acknowledged.at(-1) as Entry).id, `before ${i}`)]))

    d.fill()
    const full = FULL(dir)
    // every write says so, again and again (RocksDB's error is sticky), and nothing half-written joins
    for (let i = 0; i < 3; i++) expect(await rejection(store.append(root.id, [user((acknowledged.at(-1) as Entry).id, `refused ${i}`)]))).toBe(full)
    expect(await rejection(store.createConversation({ title: 'refused' }))).toBe(full)
    // reads: the list, the summary and the tree of what was acknowledged
    const dag = await store.open(root.id)
    expect(acknowledged.every(e => dag.isJoined(e.id))).toBe(true)
    expect(dag.size).toBe(acknowledged.length)
    expect(store.list().map(s => s.id)).toEqual([root.id])
    expect(store.summary(root.id)?.size).toBe(acknowledged.length)

    d.free()
    const resumed = await whenSpaceIsBack(() => store.append(root.id, [user((acknowledged.at(-1) as Entry).id, 'after')]), full, 'appends to resume once space is back')
    acknowledged.push(...resumed)
    const second = await store.createConversation({ title: 'after' })
    acknowledged.push(second)
    await store.close()

    const again = new HistoryStore({ dir, log: memoryLogger() })
    defer(async () => { if (!again.closed) await again.close() })
    await again.ready()
    const reopened = await again.open(root.id)
    for (const e of acknowledged.filter(e => e.conversation === root.id)) expect(reopened.isJoined(e.id)).toBe(true)
    expect(reopened.size).toBe(acknowledged.length - 1)
    expect(again.list().map(s => s.id).sort()).toEqual([root.id, second.id].sort())
  })

  it('HistoryStore: closed while the disk is full, it opens again once space is back with every acknowledged entry', async () => {
    const d = disk(128)
    const dir = path.join(d.dir, 'data')
    d.fill(4 * MiB)
    const store = new HistoryStore({ dir, log: memoryLogger(), indexDelayMs: 20, manifestDelayMs: 20 })
    defer(async () => { if (!store.closed) await store.close() })
    await store.ready()
    const root = await store.createConversation({ title: 'closed when full' })
    const acknowledged: Entry[] = [root]
    for (let i = 0; i < 5; i++) acknowledged.push(...await store.append(root.id, [user((acknowledged.at(-1) as Entry).id, `entry ${i}`)]))
    store.select(root.id, (acknowledged.at(-1) as Entry).id)
    d.fill()
    expect(await rejection(store.append(root.id, [user(root.id, 'refused')]))).toBe(FULL(dir))
    await store.close() // the index and view state cannot be saved: it closes anyway, lock released
    d.free()
    const again = new HistoryStore({ dir, log: memoryLogger() })
    defer(async () => { if (!again.closed) await again.close() })
    await again.ready()
    const dag = await again.open(root.id)
    expect(acknowledged.every(e => dag.isJoined(e.id))).toBe(true)
    expect(dag.size).toBe(acknowledged.length)
    expect((await again.append(root.id, [user((acknowledged.at(-1) as Entry).id, 'after')])).length).toBe(1)
  })

  it('a node through the API: message.send answers in words, reads and sync go on, sending works again when space returns', async () => {
    const d = disk(128)
    const dir = path.join(d.dir, 'data')
    d.fill(8 * MiB)
    const peers = new PeerNodes()
    defer(() => peers.close())
    const laptop = await peers.add('laptop', { dataDir: dir, settings: { provider: 'fake' } })
    const api = new ApiService(laptop.node, { version: 'test' })
    defer(() => { api.close() })
    const events: ApiEvent[] = []
    api.subscribe(ev => { events.push(ev) })
    const turns = (): number => events.filter(e => e.type === 'agent' && !e.running).length

    const { id } = await api.request('conversation.create', { title: 'on a small disk' })
    await api.request('message.send', { conversation: id, text: 'first' })
    await until(() => turns() === 1, 'the first turn to end')
    const acknowledged = (await api.request('conversation.open', { id })).entries.map(e => e.id)
    expect(acknowledged.length).toBeGreaterThanOrEqual(3) // root, message, answer

    d.fill()
    const full = FULL(dir)
    expect(await rejection(api.request('message.send', { conversation: id, text: 'refused ' + 'x'.repeat(8192) }))).toBe(full)
    expect(await rejection(api.request('conversation.create', { title: 'refused' }))).toBe(full)
    // reads go on
    expect((await api.request('conversation.open', { id })).entries.map(e => e.id)).toEqual(acknowledged)
    expect((await api.request('conversations.list', {})).map(c => c.id)).toEqual([id])
    // sync of what it holds: a device that joins now receives every acknowledged entry
    const phone = await peers.add('phone')
    await until(async () => {
      if (phone.node.history.summary(id) === undefined) return false
      const dag = await phone.node.history.open(id)
      return acknowledged.every(e => dag.isJoined(e))
    }, 'the phone to receive every acknowledged entry from the full laptop', 15_000)

    d.free()
    const sent = await whenSpaceIsBack(() => api.request('message.send', { conversation: id, text: 'second' }), full, 'message.send to work again once space is back')
    await until(() => turns() === 2, 'the second turn to end')
    const now = (await api.request('conversation.open', { id })).entries.map(e => e.id)
    expect(now).toEqual(expect.arrayContaining([...acknowledged, sent.entry.id]))
    expect(now.length).toBeGreaterThan(acknowledged.length + 1) // the agent answered too
    // Hypercore drops a connection when it cannot store a peer's progress hint (the phone
    // telling what it now has): the swarm connects again, as healAll does here.
    await peers.net.healAll()
    await until(async () => { const dag = await phone.node.history.open(id); return now.every(e => dag.isJoined(e)) }, 'the phone to receive what was written after', 15_000)

    // closed and opened again, without a kill: every acknowledged entry is there
    api.close()
    peers.net.remove('laptop')
    await laptop.node.close()
    const reopened = new ArborNode({ dataDir: dir, name: 'laptop', swarm: false, env: laptop.env, log: memoryLogger() })
    defer(() => reopened.close())
    await reopened.ready()
    const dag = await reopened.history.open(id)
    expect(now.every(e => dag.isJoined(e))).toBe(true)
  })

  it('state files: a write on a full disk fails in words, keeps the previous file and leaves no temporary; the next one works', async () => {
    const d = disk(4)
    const data = path.join(d.dir, 'data')
    await fsp.mkdir(data, { recursive: true })
    const log = memoryLogger()
    const cluster = await ClusterStore.open({ file: path.join(data, 'sync', 'cluster.json'), log })
    const secrets = new FileSecretStore(data)
    const vault = new EncryptedSecretStore(data, {
      isAsyncEncryptionAvailable: async () => true,
      encryptStringAsync: async (s: string) => Buffer.from(`sealed:${s}`),
      decryptStringAsync: async (b: Buffer) => ({ shouldReEncrypt: false, result: b.toString().slice(7) })
    }, log)
    const index = new HistoryIndexFile(path.join(data, 'index'))
    const view = new ViewState(path.join(data, 'view-state.json'))
    const registry = path.join(d.dir, 'registry')
    const socket = new LocalApiServer(data, {} as ApiService, log) // only its token file is written here: no connection reaches the API

    // the first version of each, on a disk with room
    cluster.ensureSecret()
    await cluster.save()
    await secrets.set('apiKey', 'sk-first')
    await vault.set('apiKey', 'sk-first')
    await writeNodeSettings(data, { provider: 'fake', model: 'first' })
    await index.save({ ...emptyIndex('a'.repeat(64)), manifestIndexed: 1 })
    view.select('c'.repeat(64), 'first')
    await view.save()
    registerDataDir(data, registry)

    const files = [cluster.file, secrets.file, vault.file, path.join(data, 'settings.json'), index.files.snapshot, index.files.journal, view.file]
    const before = files.map(f => fs.readFileSync(f, 'utf8'))
    const registered = fs.readdirSync(registry).map(n => fs.readFileSync(path.join(registry, n), 'utf8'))

    d.fill()
    const full = (file: string): string => FULL(path.dirname(file))
    cluster.setName('second')
    expect(await rejection(cluster.save())).toBe(full(cluster.file))
    expect(await rejection(secrets.set('apiKey', 'sk-second'))).toBe(full(secrets.file))
    expect(await rejection(vault.set('apiKey', 'sk-second'))).toBe(full(vault.file))
    expect(await rejection(writeNodeSettings(data, { provider: 'fake', model: 'second' }))).toBe(full(path.join(data, 'settings.json')))
    // the index appends the changed records to its journal: a save needing new pages fails, and the journal is cut back
    const changed = { ...emptyIndex('a'.repeat(64)), manifestIndexed: 2, conversations: { ['d'.repeat(64)]: { id: 'd'.repeat(64), title: 'y'.repeat(16384), createdAt: 1, updatedAt: 1, heads: [], size: 1, waiting: 0 } } }
    index.changed('conversation', 'd'.repeat(64))
    expect(await rejection(index.save(changed))).toBe(full(index.files.journal))
    view.select('c'.repeat(64), 'second')
    expect(await rejection(view.save())).toBe(full(view.file))
    expect(() => { registerDataDir(data, registry) }).toThrow(full(path.join(registry, 'x')))
    expect(await rejection(socket.listen())).toBe(full(socket.tokenFile))

    expect(files.map(f => fs.readFileSync(f, 'utf8'))).toEqual(before)
    expect(fs.readdirSync(registry).map(n => fs.readFileSync(path.join(registry, n), 'utf8'))).toEqual(registered)
    const temporaries = (dir: string): string[] => fs.readdirSync(dir, { recursive: true }).map(String).filter(n => n.endsWith('.tmp'))
    expect(temporaries(d.dir)).toEqual([])
    expect(fs.existsSync(socket.tokenFile)).toBe(false)

    d.free()
    await cluster.save()
    await secrets.set('apiKey', 'sk-second')
    await vault.set('apiKey', 'sk-second')
    await writeNodeSettings(data, { provider: 'fake', model: 'second' })
    await view.save() // still dirty: the selection made while the disk was full is saved now
    await index.save(changed) // the record that was not saved goes with the next save
    expect((await new HistoryIndexFile(index.dir).load(null)).state?.conversations['d'.repeat(64)]?.title).toHaveLength(16384)
    expect((await ClusterStore.open({ file: cluster.file })).name).toBe('second')
    expect(await secrets.get('apiKey')).toBe('sk-second')
    expect(await vault.get('apiKey')).toBe('sk-second')
    const reread = new ViewState(view.file)
    await reread.load()
    expect(reread.selected('c'.repeat(64))).toBe('second')
  })
})
