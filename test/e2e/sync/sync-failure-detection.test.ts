// Failure detection between two SyncNodes on an in-process link, on a manual clock:
// a silent peer is suspected exactly when the detection window since it was last heard
// ends, not at the next heartbeat tick.
import { expect, it } from 'vitest'
import crypto from 'hypercore-crypto'
import { HistoryStore } from '../../../src/main/history/history-store'
import { SyncNode, type PeerEvent } from '../../../src/main/sync/sync-node'
import { ManualClock } from '../../../src/shared/clock'
import { memoryLogger } from '../../../src/shared/logger'
import { TestCluster } from '../../helpers/test-cluster'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'
import { InProcessNetwork } from '../../helpers/in-process-network'

const { dirs, defer } = perTest()

it('a silent peer is suspected when the window since it was last heard ends', async () => {
  const [ha, hb] = await Promise.all([0, 1].map(async () => { const h = new HistoryStore({ dir: await dirs.make(), log: memoryLogger() }); await h.ready(); return h })) as [HistoryStore, HistoryStore]
  defer(() => ha.close(), () => hb.close())
  const cluster = new TestCluster(crypto.randomBytes(32), [ha.device, hb.device])
  const clock = new ManualClock(0)
  const opts = { cluster, swarm: false, log: memoryLogger(), heartbeatMs: 1000, suspectAfterMs: 2500, clock }
  const a = new SyncNode({ history: ha, ...opts })
  const b = new SyncNode({ history: hb, ...opts })
  await a.ready(); await b.ready()
  defer(() => a.close(), () => b.close())
  const net = new InProcessNetwork().add('a', a).add('b', b)
  defer(() => net.close())
  await net.connect('a', 'b')
  await until(() => a.peers().some(p => p.connected) && b.peers().some(p => p.connected), 'the sessions to open')
  const events: Array<PeerEvent & { at: number }> = []
  a.on('peer', (ev: PeerEvent) => events.push({ ...ev, at: clock.now() }))

  // heartbeats at 1000: a last hears b then; then b falls silent (its messages take a minute)
  await clock.advance(1000)
  await until(() => a.peers()[0]?.lastHeard === 1000, 'a to hear b\'s heartbeat')
  net.delay('a', 'b', 60_000)
  for (let i = 0; i < 40 && !a.peers()[0]?.suspected; i++) await clock.advance(100)
  // suspected at 1000 + 2500, not at the heartbeat tick after it (4000)
  expect(events.find(e => e.state === 'suspected')?.at).toBe(3500)
  expect(a.peers()[0]?.suspectedSince).toBe(3500)
})
