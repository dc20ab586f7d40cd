import { describe, expect, it } from 'vitest'
import createTestnet from 'hyperdht/testnet.js'
import crypto from 'hypercore-crypto'
import { HistoryStore } from '../../../src/main/history/history-store'
import { SyncNode, type PeerEvent } from '../../../src/main/sync/sync-node'
import type { Entry } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { TestCluster } from '../../helpers/test-cluster'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'

const { dirs, defer } = perTest()

async function testnet () {
  const t = await createTestnet(3)
  defer(() => t.destroy())
  return t.bootstrap as Array<{ host: string; port: number }>
}

async function device () {
  const history = new HistoryStore({ dir: await dirs.make(), log: memoryLogger() })
  await history.ready()
  return history
}

async function node (history: HistoryStore, cluster: TestCluster, bootstrap: Array<{ host: string; port: number }>, opts: { online?: boolean } = {}) {
  const n = new SyncNode({ history, cluster, bootstrap, log: memoryLogger(), heartbeatMs: 100, suspectAfterMs: 600, ...opts })
  await n.ready()
  return n
}

const user = (text: string, parent: string) => ({ kind: 'user' as const, body: { text }, parents: [parent] })

describe('sync over Hyperswarm on a HyperDHT testnet (loopback)', () => {
  it('paired devices converge; a live entry arrives within 100 ms; an unpaired device learns nothing', async () => {
    const bootstrap = await testnet()
    const [ha, hb, hx] = [await device(), await device(), await device()]
    defer(() => ha.close(), () => hb.close(), () => hx.close())
    const secret = crypto.randomBytes(32)
    const a = await node(ha, new TestCluster(secret, [ha.device, hb.device]), bootstrap)
    const b = await node(hb, new TestCluster(secret, [ha.device, hb.device]), bootstrap)
    // x knows the topic secret but is not paired: the firewalls drop it
    const x = await node(hx, new TestCluster(secret, [hx.device, ha.device, hb.device]), bootstrap)
    defer(() => a.close(), () => b.close(), () => x.close())

    const root = await ha.createConversation({ title: 'shared' })
    let parent = root.id
    for (let i = 0; i < 20; i++) parent = ((await ha.append(root.id, [user(`m${i}`, parent)]))[0] as Entry).id
    await until(() => hb.summary(root.id)?.size === 21, 'b to hold a\'s conversation', 15_000)

    // live: an append on a shows up in b's open conversation
    const dagB = await hb.open(root.id)
    const t0 = performance.now()
    const arrived = new Promise<number>(resolve => hb.subscribe(ev => { if (ev.conversation === root.id && ev.joined.some(e => e.body && (e.body as { text?: string }).text === 'live')) resolve(performance.now() - t0) }))
    await ha.append(root.id, [user('live', parent)])
    const latency = await arrived
    expect(latency).toBeLessThan(100)
    expect(dagB.size).toBe(22)

    // b writes a branch; a gets it
    await hb.append(root.id, [user('from b', root.id)])
    await until(() => ha.summary(root.id)?.size === 23, 'a to get b\'s branch')
    expect((await ha.open(root.id)).snapshot()).toEqual((await hb.open(root.id)).snapshot())

    // the unpaired device got nothing, not even the conversation list
    await new Promise(resolve => setTimeout(resolve, 300))
    expect(hx.list()).toEqual([])
    expect(hx.feeds()).toEqual([])
    expect(x.peers().every(p => !p.connected)).toBe(true)
    console.log(`live entry latency over the swarm: ${latency.toFixed(1)} ms`)
  })

  it('suspects a device that goes offline and recovers it when it returns; writes on both sides merge', async () => {
    const bootstrap = await testnet()
    const [ha, hb] = [await device(), await device()]
    defer(() => ha.close(), () => hb.close())
    const secret = crypto.randomBytes(32)
    const a = await node(ha, new TestCluster(secret, [ha.device, hb.device]), bootstrap)
    const b = await node(hb, new TestCluster(secret, [ha.device, hb.device]), bootstrap)
    defer(() => a.close(), () => b.close())
    const events: PeerEvent[] = []
    a.on('peer', (ev: PeerEvent) => events.push(ev))
    const root = await ha.createConversation({ title: 'partition' })
    await until(() => hb.summary(root.id)?.size === 1, 'b to get the root', 15_000)

    await b.setOnline(false)
    await until(() => events.some(e => e.device === hb.device && e.state === 'suspected'), 'a to suspect b')
    // both sides keep working while apart
    await ha.append(root.id, [user('a alone', root.id)])
    await hb.append(root.id, [user('b alone', root.id)])
    expect(ha.summary(root.id)?.size).toBe(2)

    await b.setOnline(true)
    await until(() => ha.summary(root.id)?.size === 3 && hb.summary(root.id)?.size === 3, 'the union on both sides', 15_000)
    expect(events.some(e => e.device === hb.device && e.state === 'connected' && events.indexOf(e) > events.findIndex(x => x.state === 'suspected'))).toBe(true)
    // the peer view settles shortly after the data: connected, not suspected, nothing behind
    await until(() => { const p = a.peers().find(x => x.device === hb.device); return p?.connected === true && !p.suspected && p.behind === 0 }, 'a to see b connected and caught up')
  })

  it('a node started offline sends nothing until the network is turned on, then catches up', async () => {
    const bootstrap = await testnet()
    const [ha, hb] = [await device(), await device()]
    defer(() => ha.close(), () => hb.close())
    const secret = crypto.randomBytes(32)
    const root = await ha.createConversation({ title: 'written before b came online' })
    const a = await node(ha, new TestCluster(secret, [ha.device, hb.device]), bootstrap)
    const b = await node(hb, new TestCluster(secret, [ha.device, hb.device]), bootstrap, { online: false })
    defer(() => a.close(), () => b.close())
    expect(b.isOnline).toBe(false)
    // no DHT node exists to talk to anyone (one bootstraps as soon as it is made)
    expect(b.hyperswarm).toBeNull()
    await new Promise(resolve => setTimeout(resolve, 1000))
    expect(hb.summary(root.id)).toBeUndefined()
    expect(a.peers().every(p => !p.connected)).toBe(true)

    await b.setOnline(true)
    expect(b.hyperswarm).not.toBeNull()
    await until(() => hb.summary(root.id)?.size === 1, 'b to get a\'s conversation once online', 15_000)
  })
})
