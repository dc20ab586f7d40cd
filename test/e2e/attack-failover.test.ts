// Attack: a compromised paired device tries to hold off failover (issue 23; DESIGN.md, "Trust":
// a paired device may be compromised). It may delay the revival of a dead device's auto-revival
// agents, never cancel it. Two ways it tried: being the device rendezvous hashing picks to
// revive, and never reviving; and heartbeating, for ever, that it hears the dead device. Real
// parts: SyncNodes on disk on the in-process network, and full ArborNodes (history, sync,
// agents, placement) for the agents; the compromised device runs our code with its own key,
// changed where it lies.
import { afterEach, describe, expect, it } from 'vitest'
import { REVIVAL_TURN_MS, reviverOf } from '../../src/main/runtime/placement/placement'
import type { EntryOf } from '../../src/shared/entry'
import { AgentCluster, entriesOf } from '../helpers/agent-cluster'
import { until } from '../helpers/temp-dir'

const HEARTBEAT_MS = 100
const WINDOW_MS = 500
/** How long after a device was last heard it is down at the latest (and some, for a loaded machine). */
const DOWN_BY_MS = WINDOW_MS + 1000

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
})
