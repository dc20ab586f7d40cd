// HistoryStores with SyncNodes in one cluster on an in-process network (not linked yet): the
// set-up of the sync tests that need only history and sync, no agents.
import crypto from 'hypercore-crypto'
import { HistoryStore } from '../../src/main/history/history-store'
import { SyncNode } from '../../src/main/sync/sync-node'
import { memoryLogger } from '../../src/shared/logger'
import { InProcessNetwork } from './in-process-network'
import { TestCluster, type TestDevices } from './test-cluster'
import type { PerTest } from './per-test'

export interface SyncDevice { history: HistoryStore; node: SyncNode; log: ReturnType<typeof memoryLogger> }

export interface SyncDevicesOptions {
  /** a device's data directory, by name (default: a fresh one) */
  at?: Record<string, string>
  idleCloseMs?: number
  /** the nodes' bounds on feeds pending from peers (SyncNodeOptions.pendingFeeds) */
  pendingFeeds?: { perPeer: number; total: number }
}

/** Ready devices named `names`, closed (network, nodes, stores) after the test. */
export async function syncDevices (t: PerTest, names: string[], o: SyncDevicesOptions = {}): Promise<{ net: InProcessNetwork; d: SyncDevice[] }> {
  const trusted: TestDevices = new Map()
  const secret = crypto.randomBytes(32)
  const net = new InProcessNetwork()
  const d: SyncDevice[] = []
  t.defer(async () => {
    await net.close()
    for (const x of d) await x.node.close()
    for (const x of d) await x.history.close()
  })
  for (const name of names) {
    const history = new HistoryStore({ dir: o.at?.[name] ?? await t.dirs.make(), log: memoryLogger(), ...(o.idleCloseMs !== undefined ? { idleCloseMs: o.idleCloseMs } : {}) })
    await history.ready()
    const cluster = new TestCluster(secret, trusted)
    cluster.add(history.device)
    const log = memoryLogger()
    const node = new SyncNode({ history, cluster, swarm: false, log, ...(o.pendingFeeds !== undefined ? { pendingFeeds: o.pendingFeeds } : {}) })
    await node.ready()
    net.add(name, node)
    d.push({ history, node, log })
  }
  return { net, d }
}
