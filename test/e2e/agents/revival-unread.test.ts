// Issue 13, guarantee 5 with a reviver that has not read what its peers announced: the
// owner's step starts once a peer (the relay) holds its intent, but the blocks reach the
// device that revives the agent only over a link too slow for them (stallBlocks: Hypercore's
// data held, the arbor channel flowing). The owner dies. The reviver must not revive before
// it holds every block of the conversation a live peer announced; once they arrive it
// revives and records the step's outcome as unknown instead of running it again.
import { afterEach, describe, expect, it } from 'vitest'
import { AgentCluster, entriesOf } from '../../helpers/agent-cluster'
import { stallBlocks, type BlockStall } from '../../helpers/block-stall'
import { until } from '../../helpers/temp-dir'
import { reviverOf } from '../../../src/main/runtime/placement/placement'
import type { FakeScript } from '../../../src/main/llm/fake-provider'

const SCRIPT: FakeScript = {
  rules: [{ match: '^slow', reply: [{ toolCalls: [{ name: 'slow', args: {} }] }, { text: 'slow work done' }] }],
  default: { text: 'You said: {{lastUser}}' }
}
const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

let cluster: AgentCluster | null = null
let stall: BlockStall | null = null
afterEach(async () => {
  stall?.release()
  stall = null
  await cluster?.close()
  cluster = null
})

describe('a reviver that has not read what its peers announced', () => {
  it('waits for the owner\'s last intent (relayed over a slow link) instead of running the step again', async () => {
    const warnings: string[] = []
    const c = cluster = new AgentCluster({ n: 3, heartbeatMs: 100, suspectAfterMs: 500, slowMs: 30_000, script: SCRIPT, log: { info: () => {}, warn: m => { warnings.push(m) }, error: () => {} } })
    await c.ready()
    const root = await c.node(0).history.createConversation({ title: 'relayed', autoRevival: true })
    const conv = root.id
    await c.post(0, conv, 'hello')
    // d0 owns the conversation (epoch 0), and both peers have read its first turn
    await until(async () => (await Promise.all([1, 2].map(async i => c.node(i).history.summary(conv) !== undefined && (await entriesOf(c.node(i), conv, 'agent.stopped')).length >= 1))).every(Boolean), 'the peers to read the first turn', 15_000)
    // whichever of d1, d2 would revive d0's agent reads d0's feed only over the slow link; the other relays it
    const reviver = reviverOf(conv, [c.node(1).device, c.node(2).device]) === c.node(1).device ? 1 : 2
    const relay = 3 - reviver
    const key = c.node(0).history.feeds(conv).find(f => f.own)?.key as string
    stall = stallBlocks(c.node(reviver).history, key)
    // the reviver's user asks for the step: d0, the owner, answers it
    await c.post(reviver, conv, 'slow work')
    await until(() => c.ledger.length >= 1, 'd0 to start the step', 15_000)
    expect(c.ledger[0]?.dev).toBe(0)
    // the relay held the intent before the step started; the reviver heard of the blocks, holds none
    await until(() => c.node(reviver).sync.peers().some(p => p.device === c.node(relay).device && p.behind > 0), 'the reviver to hear of blocks it lacks', 5000)
    expect((await entriesOf(c.node(reviver), conv, 'tool.intent'))).toEqual([])
    const owner = c.node(0).device
    await c.stop(0)
    // the owner is gone; the slow link still holds its last blocks
    await sleep(2500)
    expect(c.ledger.map(l => `d${l.dev} ${l.idemKey.slice(0, 8)}`), 'external steps started').toHaveLength(1)
    expect((await entriesOf(c.node(reviver), conv, 'agent.started')).filter(e => e.author.device !== owner), 'revivals without the intent').toEqual([])
    expect(stall.held).toBeGreaterThan(0)
    expect(warnings.filter(w => /not reviving the agent of .* yet/.test(w)), 'the reviver says why it waits').not.toEqual([])
    stall.release()
    // the blocks arrive: the agent is revived, sees the intent, records the outcome as unknown
    await until(async () => (await entriesOf(c.node(reviver), conv, 'tool.result')).some(e => (e.body as { status?: string }).status === 'unknown'), 'the revived agent to record the step as unknown', 15_000)
    await until(() => c.runningOn(conv).length === 0, 'the revived agent to end its turn', 15_000)
    expect(c.ledger, 'external steps run').toHaveLength(1)
    const revived = (await entriesOf(c.node(reviver), conv, 'agent.started')).filter(e => e.author.device !== owner)
    expect(revived.map(e => e.body)).toMatchObject([{ epoch: 1, reason: 'revival' }])
  }, 90_000)
})
