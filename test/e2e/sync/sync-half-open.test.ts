// A connection whose other end never opens the arbor channel (Hyperswarm can leave each of
// two devices that dialled each other at once holding a connection the other dropped) is
// dropped after the open timeout, so the swarm connects again instead of waiting on it.
import { expect, it } from 'vitest'
import crypto from 'hypercore-crypto'
import { HistoryStore } from '../../../src/main/history/history-store'
import { SyncNode } from '../../../src/main/sync/sync-node'
import { memoryLogger } from '../../../src/shared/logger'
import { TestCluster } from '../../helpers/test-cluster'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'
import { InProcessNetwork } from '../../helpers/in-process-network'

const { dirs, defer } = perTest()

it('a connection whose arbor channel never opens is dropped after openTimeoutMs', async () => {
  const [a, b] = await Promise.all([0, 1].map(async () => { const h = new HistoryStore({ dir: await dirs.make(), log: memoryLogger() }); await h.ready(); return h })) as [HistoryStore, HistoryStore]
  defer(() => a.close(), () => b.close())
  const cluster = new TestCluster(crypto.randomBytes(32), [a.device, b.device])
  const log = memoryLogger()
  const na = new SyncNode({ history: a, cluster, swarm: false, log, openTimeoutMs: 300 })
  await na.ready()
  defer(() => na.close())
  // b's end of the connection is there (the handshake completes) but nothing answers on it
  const silent = { history: b, attach: () => null } as unknown as SyncNode
  const net = new InProcessNetwork().add('a', na).add('b', silent)
  defer(() => net.close())
  await net.connect('a', 'b')
  expect(net.isConnected('a', 'b')).toBe(true)
  await until(() => !net.isConnected('a', 'b'), 'a to drop the connection', 3000)
  expect(log.lines.some(l => l.message.includes('did not open within 300 ms'))).toBe(true)
  expect(na.peers().every(p => !p.connected)).toBe(true)
})
