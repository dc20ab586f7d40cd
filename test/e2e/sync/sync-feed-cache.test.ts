// What a device heard of a peer's feed list is kept (FeedsSince, sync-peers.json), so a reconnect
// after the peer's list changed while connected sends only the digest: whatever changed while the
// peer kept announcing (a syncing peer announces every few ms) must be in what was kept when the
// connection closes.
import { describe, expect, it } from 'vitest'
import crypto from 'hypercore-crypto'
import { HistoryStore } from '../../../src/main/history/history-store'
import { SyncNode } from '../../../src/main/sync/sync-node'
import { SyncSession } from '../../../src/main/sync/wire/sync-session'
import { memoryLogger } from '../../../src/shared/logger'
import { MemoryLink } from '../../helpers/in-process-network'
import { TestCluster, type TestDevices } from '../../helpers/test-cluster'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'

const { dirs, defer } = perTest()

interface Device { history: HistoryStore; node: SyncNode }

async function device (secret: Buffer, devices: TestDevices): Promise<Device> {
  const history = new HistoryStore({ dir: await dirs.make(), log: memoryLogger() })
  await history.ready()
  const cluster = new TestCluster(secret, devices)
  cluster.add(history.device)
  const node = new SyncNode({ history, cluster, swarm: false, log: memoryLogger() })
  await node.ready()
  defer(async () => { await node.close(); await history.close() })
  return { history, node }
}

async function connect (a: Device, b: Device): Promise<{ link: MemoryLink; b: SyncSession }> {
  const link = new MemoryLink(a.history.keyPair, b.history.keyPair)
  defer(() => link.destroy())
  if (!await link.opened()) throw new Error('the Noise handshake failed')
  const sa = a.node.attach(link.a)
  const sb = b.node.attach(link.b)
  if (sa === null || sb === null) throw new Error('a node refused the connection')
  return { link, b: sb }
}

describe('the cache of peers\' feed lists', () => {
  it('after a peer\'s list changed while connected, a reconnect with nothing new sends only the digest', async () => {
    const secret = crypto.randomBytes(32)
    const devices: TestDevices = new Map()
    const a = await device(secret, devices)
    const b = await device(secret, devices)
    const one = await a.history.createConversation({ title: 'one' })
    await a.history.append(one.id, [{ kind: 'user', body: { text: 'hi' }, parents: [one.id] }])
    const first = await connect(a, b)
    await until(() => b.history.summary(one.id)?.size === 2, 'b to hold the first conversation')
    // changes announced one by one while connected: the cache was digested before them
    const two = await a.history.createConversation({ title: 'two' })
    await a.history.append(one.id, [{ kind: 'user', body: { text: 'again' }, parents: [one.id] }])
    await until(() => b.history.summary(two.id)?.size === 1 && b.history.summary(one.id)?.size === 3, 'b to hold what a added')
    await until(() => [...first.b.remoteFeeds.values()].reduce((n, f) => n + f.length, 0) === a.history.feeds().reduce((n, f) => n + a.history.availableLength(f.key), 0), 'b to hear a\'s lengths')
    await first.link.cut()

    const wants: string[] = []
    const send = Object.getOwnPropertyDescriptor(SyncSession.prototype, 'send')?.value as (this: SyncSession, i: number, data: unknown) => void
    Object.defineProperty(SyncSession.prototype, 'send', {
      configurable: true,
      writable: true,
      value: function (this: SyncSession, i: number, data: unknown) { if (i === 7) wants.push(this.remoteDevice); send.call(this, i, data) }
    })
    defer(() => { Object.defineProperty(SyncSession.prototype, 'send', { configurable: true, writable: true, value: send }) })
    const again = await connect(a, b)
    // known from the cache as the digest arrives, or from the full list it asked for: a want comes first
    await until(() => again.b.opened && again.b.remoteFeeds.size === a.history.feeds().length, 'b to know a\'s feeds again')
    expect(wants.filter(d => d === a.history.device)).toEqual([])
  })
})
