// Attack: a compromised paired device tries to hold off failover (issue 23; DESIGN.md, "Trust":
// a paired device may be compromised). It may delay the revival of a dead device's auto-revival
// agents, never cancel it. Two ways it tried: being the device rendezvous hashing picks to
// revive, and never reviving; and heartbeating, for ever, that it hears the dead device. Real
// parts: SyncNodes on disk on the in-process network, and full ArborNodes (history, sync,
// agents, placement) for the agents; the compromised device runs our code with its own key,
// changed where it lies.
import { afterEach, describe, expect, it } from 'vitest'
import crypto from 'hypercore-crypto'
import { HistoryStore } from '../../../src/main/history/history-store'
import { relayAllowance, SyncNode } from '../../../src/main/sync/sync-node'
import type { AliveMessage } from '../../../src/main/sync/wire/arbor-messages'
import type { SyncSession } from '../../../src/main/sync/wire/sync-session'
import { REVIVAL_TURN_MS, reviverOf } from '../../../src/main/runtime/placement/placement'
import type { ProtocolVersions } from '../../../src/shared/protocol-version'
import type { EntryOf } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { AgentCluster, entriesOf } from '../../helpers/agent-cluster'
import { InProcessNetwork } from '../../helpers/in-process-network'
import { TestCluster } from '../../helpers/test-cluster'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'

const { dirs, defer } = perTest('arbor-failover-')

const HEARTBEAT_MS = 100
const WINDOW_MS = 500
/** How long after a device was last heard, directly or through a peer, it is down at the latest (and some, for a loaded machine). */
const DOWN_BY_MS = WINDOW_MS + relayAllowance(HEARTBEAT_MS, WINDOW_MS) + 1000

/** Makes a device lie in every heartbeat from now on: it says it hears `dead` too. */
function hearsForEver (sync: SyncNode, dead: string): void {
  const node = sync as unknown as { hearing: () => string[] }
  const honest = node.hearing.bind(sync)
  node.hearing = () => [...new Set([...honest(), dead])]
}

// ------------------------------------------------------------------ sync: who is down

/** Three SyncNodes on real stores, paired, all linked: r (this device), p (a peer, of `pVersions` if given), d. */
async function threeNodes (pVersions?: ProtocolVersions): Promise<{ net: InProcessNetwork; r: SyncNode; p: SyncNode; d: SyncNode; rLog: ReturnType<typeof memoryLogger> }> {
  const stores = await Promise.all([0, 1, 2].map(async () => {
    const h = new HistoryStore({ dir: await dirs.make(), log: memoryLogger() })
    await h.ready()
    defer(() => h.close())
    return h
  }))
  const cluster = new TestCluster(crypto.randomBytes(32), stores.map(h => h.device))
  const rLog = memoryLogger()
  const [r, p, d] = await Promise.all(stores.map(async (history, i) => {
    const n = new SyncNode({ history, cluster, swarm: false, log: i === 0 ? rLog : memoryLogger(), heartbeatMs: HEARTBEAT_MS, suspectAfterMs: WINDOW_MS, ...(i === 1 && pVersions !== undefined ? { versions: pVersions } : {}) })
    await n.ready()
    defer(() => n.close())
    return n
  })) as [SyncNode, SyncNode, SyncNode]
  const net = new InProcessNetwork().add('r', r).add('p', p).add('d', d)
  defer(() => net.close())
  await net.healAll()
  await until(() => [r, p, d].every(n => n.peers().every(x => x.connected && !x.suspected)), 'the three to hear each other')
  return { net, r, p, d, rLog }
}

describe('who is down, with a compromised peer', () => {
  it('a peer that keeps saying it hears a dead device does not keep it alive', async () => {
    const { net, r, p, d } = await threeNodes()
    hearsForEver(p, d.history.device)
    net.isolate('d') // d is gone; p goes on saying it hears it
    const t0 = Date.now()
    await until(() => r.isDown(d.history.device), 'r to take d for dead though p says it hears it', 5000)
    console.log(`d down on r ${Date.now() - t0} ms after it went`)
    expect(Date.now() - t0).toBeLessThan(DOWN_BY_MS)
  })

  it('a peer that forges the dead device\'s proofs is not believed, and said once', async () => {
    const { net, r, p, d, rLog } = await threeNodes()
    // p answers every question itself, with signatures it cannot make
    const node = p as unknown as { onAlive: (s: SyncSession, m: AliveMessage) => void }
    node.onAlive = (s, m) => {
      if (m.ask !== undefined) s.sendAlive({ proofs: m.ask.about.map(device => ({ device, asker: s.remoteDevice, n: m.ask?.n as string, sig: 'ab'.repeat(64) })) })
    }
    hearsForEver(p, d.history.device)
    net.isolate('d')
    const t0 = Date.now()
    await until(() => r.isDown(d.history.device), 'r to take d for dead though p brings proofs that it is alive', 5000)
    expect(Date.now() - t0).toBeLessThan(DOWN_BY_MS)
    await new Promise(resolve => setTimeout(resolve, 4 * HEARTBEAT_MS)) // more forged answers
    expect(r.isDown(d.history.device)).toBe(true)
    const said = rLog.lines.filter(l => l.message.includes('signature does not verify'))
    expect(said).toHaveLength(1)
    expect(said[0]?.message).toContain(p.history.device.slice(0, 12))
  })

  it('a device cut off from this one alone stays alive here while a peer really hears it, and is down once it is gone', async () => {
    const { net, r, d } = await threeNodes()
    net.cut('r', 'd')
    const until2s = Date.now() + 2000 // four detection windows
    while (Date.now() < until2s) {
      expect(r.isDown(d.history.device)).toBe(false)
      await new Promise(resolve => setTimeout(resolve, 20))
    }
    net.isolate('d')
    const t0 = Date.now()
    await until(() => r.isDown(d.history.device), 'r to take d for dead once p no longer hears it either', 5000)
    expect(Date.now() - t0).toBeLessThan(DOWN_BY_MS)
  })

  it('a peer of an older Arbor (1.3) that hears the device: its bare word no longer keeps it alive here', async () => {
    const { net, r, d } = await threeNodes({ major: 1, minor: 3, oldest: 1, schema: 3 })
    net.cut('r', 'd')
    await until(() => r.isDown(d.history.device), 'r to take d for dead: p hears it, but cannot prove it', 5000)
  })
})

// ------------------------------------------------------------------ agents: the revival

let cluster: AgentCluster | null = null
afterEach(async () => {
  await cluster?.close()
  cluster = null
})

const revivalsOn = async (c: AgentCluster, i: number, conv: string): Promise<Array<EntryOf<'agent.started'>>> =>
  (await entriesOf(c.node(i), conv)).filter((e): e is EntryOf<'agent.started'> => e.kind === 'agent.started' && e.body.reason === 'revival')

/**
 * d0 runs an auto-revival agent in the middle of an external step, acknowledged by the others;
 * d2 is compromised: it syncs, heartbeats and acknowledges like any device, and revives nothing.
 * `pick` chooses the conversation by who rendezvous hashing makes its reviver. Then d0 dies.
 */
async function ownerDies (pick: (reviver: string, honest: string, mallory: string) => boolean, lie: (c: AgentCluster) => void = () => {}): Promise<{ c: AgentCluster; conv: string; diedAt: number }> {
  const c = cluster = new AgentCluster({ n: 3, slowMs: 60_000, heartbeatMs: HEARTBEAT_MS, suspectAfterMs: WINDOW_MS })
  await c.ready()
  await c.node(2).placement.close()
  lie(c)
  const [honest, mallory] = [c.node(1).device, c.node(2).device]
  let conv = ''
  for (let i = 0; i < 64 && (conv === '' || !pick(reviverOf(conv, [honest, mallory]) as string, honest, mallory)); i++) {
    conv = (await c.node(0).history.createConversation({ title: 'failover', autoRevival: true })).id
  }
  await until(() => c.devices.every(d => d?.node.history.summary(conv) !== undefined), 'the conversation on every device')
  await c.post(0, conv, 'slow 1')
  await until(async () => (await entriesOf(c.node(1), conv, 'tool.intent')).length === 1 && c.ledger.length === 1, 'the step under way on d0, its intent on d1')
  c.net.isolate('d0')
  const diedAt = Date.now()
  await c.stop(0)
  return { c, conv, diedAt }
}

describe('the revival of a dead device\'s agent, with a compromised device', () => {
  it('the device chosen to revive never does: an honest one revives in its stead', async () => {
    const { c, conv, diedAt } = await ownerDies((reviver, _honest, mallory) => reviver === mallory)
    await until(async () => (await revivalsOn(c, 1, conv)).length > 0, 'the honest device d1 to revive the agent d2 was chosen for', 30_000, 50)
    const tookMs = Date.now() - diedAt
    console.log(`revived on d1 ${tookMs} ms after d0 died`)
    // d1 comes second in the order: it waited one turn for d2, and no more
    expect(tookMs).toBeGreaterThanOrEqual(REVIVAL_TURN_MS)
    expect(tookMs).toBeLessThan(REVIVAL_TURN_MS + DOWN_BY_MS + 2000) // + a sweep and the revival's start
    const revivals = await revivalsOn(c, 1, conv)
    expect(revivals.map(e => e.author.device)).toEqual([c.node(1).device])
    expect(c.ledger).toHaveLength(1) // the external step is not run again
  }, 60_000)

  it('a device that keeps saying it hears the dead owner does not hold its revival off', async () => {
    const { c, conv, diedAt } = await ownerDies((reviver, honest) => reviver === honest, c => { hearsForEver(c.node(2).sync, c.node(0).device) })
    await until(async () => (await revivalsOn(c, 1, conv)).length > 0, 'd1 to revive the agent though d2 says it hears d0', 15_000, 50)
    console.log(`revived on d1 ${Date.now() - diedAt} ms after d0 died`)
    expect(Date.now() - diedAt).toBeLessThan(DOWN_BY_MS + 2000) // d1 is first in the order: at once, once d0 is down
    expect((await revivalsOn(c, 1, conv)).map(e => e.author.device)).toEqual([c.node(1).device])
    expect(c.ledger).toHaveLength(1)
  }, 60_000)
})
