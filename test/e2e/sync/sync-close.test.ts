import { afterEach, it, expect } from 'vitest'
import crypto from 'hypercore-crypto'
import { HistoryStore } from '../../../src/main/history/history-store'
import { SyncNode } from '../../../src/main/sync/sync-node'
import { memoryLogger } from '../../../src/shared/logger'
import { TestCluster } from '../../helpers/test-cluster'
import { tempDirs, until } from '../../helpers/temp-dir'
import { InProcessNetwork } from '../../helpers/in-process-network'

const dirs = tempDirs()
afterEach(() => dirs.cleanup())

it('a store closes promptly while a peer feed waits for blocks that never arrive, and reopens to finish later', async () => {
  const [a, b] = await Promise.all([0, 1].map(async () => { const h = new HistoryStore({ dir: await dirs.make(), log: memoryLogger() }); await h.ready(); return h })) as [HistoryStore, HistoryStore]
  const cluster = new TestCluster(crypto.randomBytes(32), [a.device, b.device])
  const na = new SyncNode({ history: a, cluster, swarm: false, log: memoryLogger() })
  const nb = new SyncNode({ history: b, cluster, swarm: false, log: memoryLogger() })
  await na.ready(); await nb.ready()
  const net = new InProcessNetwork().add('a', na).add('b', nb)
  await net.connect('a', 'b')
  const root = await a.createConversation({ title: 'x' })
  await until(() => b.summary(root.id)?.size === 1, 'b to get the root')
  // b learns that a's feed grew, and the link dies before the blocks arrive
  const feed = (a.feeds(root.id)[0] as { key: string }).key
  const onB = b.corestore.get({ key: Buffer.from(feed, 'hex') })
  await onB.ready()
  onB.on('append', () => net.cut('a', 'b'))
  await a.append(root.id, [{ kind: 'user', body: { text: 'lost in flight' }, parents: [root.id] }, ...Array.from({ length: 299 }, (_, i) => ({ kind: 'user' as const, body: { text: 'more ' + i }, parents: ['$' + i] }))])
  await until(() => !net.isConnected('a', 'b'), 'the cut')
  expect(onB.contiguousLength).toBeLessThan(302)
  await onB.close()
  await net.close()
  await na.close(); await nb.close()
  const t0 = Date.now()
  await b.close()
  expect(Date.now() - t0).toBeLessThan(2000)

  // later, with the link back, b finishes the feed
  const b2 = new HistoryStore({ dir: b.dir, log: memoryLogger() })
  await b2.ready()
  const nb2 = new SyncNode({ history: b2, cluster, swarm: false, log: memoryLogger() })
  const na2 = new SyncNode({ history: a, cluster, swarm: false, log: memoryLogger() })
  await nb2.ready(); await na2.ready()
  const net2 = new InProcessNetwork().add('a', na2).add('b', nb2)
  await net2.connect('a', 'b')
  await until(() => b2.summary(root.id)?.size === 301, 'b to finish the feed', 15_000)
  await net2.close()
  await na2.close(); await nb2.close()
  await b2.close(); await a.close()
})
