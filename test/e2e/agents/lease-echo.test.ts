// Issue 13, the lease when a peer's echoes never come: a laptop whose first connection to a
// 1.3 peer carries nothing from the laptop to the peer (a one-way link: the peer's packets
// arrive, the laptop's are lost), so the peer never echoes, never hears the laptop, and after
// a window takes it for dead and may revive its agents. The laptop must not go on holding its
// lease as a device before leases would (+∞: "no peer ever spoke leases"). Told apart: a
// device alone by choice (network off, no paired device) holds it; a peer of an older Arbor
// (before 1.3, which may not echo) holds nothing back, as before leases.
import { expect, it } from 'vitest'
import crypto from 'hypercore-crypto'
import { HistoryStore } from '../../../src/main/history/history-store'
import { SyncNode, thisVersion, type PeerEvent } from '../../../src/main/sync/sync-node'
import { memoryLogger } from '../../../src/shared/logger'
import type { ProtocolVersions } from '../../../src/shared/protocol-version'
import { TestCluster } from '../../helpers/test-cluster'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'
import { InProcessNetwork } from '../../helpers/in-process-network'

const { dirs, defer } = perTest()
const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

/** A laptop and a peer (speaking `peerVersions`) whose link carries nothing from the laptop from the moment the laptop's session opens. */
async function oneWay (peerVersions: ProtocolVersions = thisVersion()): Promise<{ laptop: SyncNode; peer: SyncNode }> {
  const [hl, hp] = await Promise.all([0, 1].map(async () => { const h = new HistoryStore({ dir: await dirs.make(), log: memoryLogger() }); await h.ready(); return h })) as [HistoryStore, HistoryStore]
  defer(() => hl.close(), () => hp.close())
  const cluster = new TestCluster(crypto.randomBytes(32), [hl.device, hp.device])
  const opts = { cluster, swarm: false, log: memoryLogger(), heartbeatMs: 100, suspectAfterMs: 500 }
  const laptop = new SyncNode({ history: hl, ...opts })
  const peer = new SyncNode({ history: hp, ...opts, versions: peerVersions })
  await laptop.ready(); await peer.ready()
  defer(() => laptop.close(), () => peer.close())
  const net = new InProcessNetwork().add('laptop', laptop).add('peer', peer)
  defer(() => net.close())
  // The laptop's first heartbeat is on its way as its session opens (sent before the event): held with all that follows.
  laptop.on('peer', (ev: PeerEvent) => { if (ev.state === 'connected') net.freeze('peer', true, ['in']) })
  await net.connect('laptop', 'peer')
  await until(() => laptop.peers().some(p => p.connected), 'the laptop\'s session to open')
  return { laptop, peer }
}

it('a connected 1.3 peer that never echoes (a one-way link from the start): the lease expires instead of holding for ever', async () => {
  const { laptop, peer } = await oneWay()
  // the peer never heard the laptop: a window after its start, it may revive the laptop's agents
  await until(() => peer.isDown(laptop.history.device), 'the peer to take the laptop for dead', 5000)
  expect(laptop.peers().map(p => p.connected)).toEqual([true])
  expect(laptop.holdsLease(), 'the laptop acts while its peer may revive its agents').toBe(false)
  // alone by choice: nobody can revive its agents, so it acts
  await laptop.setOnline(false)
  expect(laptop.holdsLease()).toBe(true)
})

it('a peer of an older Arbor (1.2, which may not echo) holds nothing back, as before leases', async () => {
  const { laptop } = await oneWay({ ...thisVersion(), minor: 2 })
  await sleep(800) // past the window
  expect(laptop.peers().map(p => [p.connected, p.version?.protocol])).toEqual([[true, '1.2']])
  expect(laptop.holdsLease()).toBe(true)
})

it('no paired device: the lease holds (nobody could revive its agents)', async () => {
  const h = new HistoryStore({ dir: await dirs.make(), log: memoryLogger() })
  await h.ready()
  defer(() => h.close())
  const node = new SyncNode({ history: h, cluster: new TestCluster(crypto.randomBytes(32), [h.device]), swarm: false, log: memoryLogger(), heartbeatMs: 100, suspectAfterMs: 500 })
  await node.ready()
  defer(() => node.close())
  await sleep(800)
  expect(node.holdsLease()).toBe(true)
})
