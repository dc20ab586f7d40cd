// Issue 13 with the in-process pause of the model test (AgentCluster.pause/thaw, SIGSTOP
// emulated): a device paused past the detection window while its tool call finishes, whose
// input comes back later than its output (its peers' transports backed off), takes no step
// after the thaw and stops as superseded; a pause below the window changes nothing.
import { afterEach, describe, expect, it } from 'vitest'
import { AgentCluster, entriesOf } from '../../helpers/agent-cluster'
import type { FakeScript } from '../../../src/main/llm/fake-provider'
import { until } from '../../helpers/temp-dir'
import { stallBlocks } from '../../helpers/block-stall'

const STEPS = 12
const SCRIPT: FakeScript = {
  rules: [{ match: '^long', reply: [...Array.from({ length: STEPS }, () => ({ toolCalls: [{ name: 'slow', args: {} }] })), { text: 'long work done' }] }],
  default: { text: 'You said: {{lastUser}}' }
}
const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

let cluster: AgentCluster | null = null
afterEach(async () => {
  await cluster?.close()
  cluster = null
})

/** A cluster whose d0 runs an auto-revival agent in a slow step that d1 and d2 have seen start. */
async function busyCluster (): Promise<{ c: AgentCluster; conv: string }> {
  const c = cluster = new AgentCluster({ n: 3, heartbeatMs: 100, suspectAfterMs: 500, slowMs: 200, script: SCRIPT })
  await c.ready()
  const root = await c.node(0).history.createConversation({ title: 'paused', autoRevival: true })
  await c.post(0, root.id, 'long work')
  // the peers hold the conversation and its first intent: a pause now is a pause mid-turn
  await until(async () => c.ledger.length >= 1 && (await Promise.all([1, 2].map(async i => c.node(i).history.summary(root.id) !== undefined && (await entriesOf(c.node(i), root.id, 'tool.intent')).length >= 1))).every(Boolean), 'the peers to see the first step', 10_000)
  await sleep(50) // into the slow step
  return { c, conv: root.id }
}

describe('a paused device (in-process SIGSTOP)', () => {
  it('paused past the window, its input late after the thaw: takes no step after the thaw and stops as superseded', async () => {
    const { c, conv } = await busyCluster()
    c.pause(0)
    await sleep(1500)
    // a peer revived the agent meanwhile
    expect(c.runningOn(conv).some(i => i !== 0)).toBe(true)
    const thawedAt = Date.now()
    c.thaw(0, { input: false })
    await sleep(1000)
    c.thawInput(0)
    await until(() => !c.node(0).agents.isRunning(conv), 'the woken agent to stop', 10_000)
    const late = c.ledger.filter(l => l.device === 'd0' && l.at >= thawedAt).map(l => `${l.idemKey.slice(0, 8)} ${l.at - thawedAt} ms after the thaw`)
    expect(late, 'steps the woken device started after the thaw').toEqual([])
    const mine = (await entriesOf(c.node(0), conv)).filter(e => e.author.device === c.node(0).device && e.author.agent === 'agent#0')
    expect(mine.at(-1)?.kind).toBe('agent.stopped')
    expect(mine.at(-1)?.body).toMatchObject({ reason: 'superseded' })
    const keys = c.ledger.map(l => l.idemKey)
    expect(keys.filter((k, i) => keys.indexOf(k) !== i), 'external steps run twice').toEqual([])
  }, 60_000)

  it('paused below the window: nobody revives it and it finishes its turn', async () => {
    const { c, conv } = await busyCluster()
    c.pause(0)
    await sleep(150)
    c.thaw(0)
    await until(() => !c.node(0).agents.isRunning(conv), 'the turn to end', 20_000)
    const started = await entriesOf(c.node(0), conv, 'agent.started')
    expect(started.map(e => e.body)).toEqual([{ epoch: 0, reason: 'user' }])
    expect((await entriesOf(c.node(0), conv, 'agent.stopped')).map(e => e.body)).toMatchObject([{ reason: 'done' }])
    expect(c.ledger.filter(l => l.device === 'd0')).toHaveLength(STEPS)
  }, 60_000)
})

describe('a paused device whose peers answer before its call returns', () => {
  it('after the thaw its lease is renewed before the call returns; it still reads the revival its peers announced before writing the result', async () => {
    const script: FakeScript = { rules: [{ match: '^long', reply: [{ toolCalls: [{ name: 'slow', args: {} }] }, { text: 'long work done' }] }], default: { text: 'You said: {{lastUser}}' } }
    // the call takes 4 s, paused for 3 s of it: the device wakes before it returns, and its peers
    // have detected it (0.5 s), revived it and ended the revived turn meanwhile, with room under load
    const c = cluster = new AgentCluster({ n: 3, heartbeatMs: 100, suspectAfterMs: 500, slowMs: 4000, script })
    await c.ready()
    const root = await c.node(0).history.createConversation({ title: 'answered first', autoRevival: true })
    const conv = root.id
    await c.post(0, conv, 'long work')
    await until(async () => c.ledger.length >= 1 && (await Promise.all([1, 2].map(async i => (await entriesOf(c.node(i), conv, 'tool.intent')).length >= 1))).every(Boolean), 'the peers to see the step start', 10_000)
    const pausedAt = Date.now()
    c.pause(0)
    // revived, and the revived turn over (so nobody announces a running agent) within the pause
    const reviver = async (): Promise<number | null> => {
      for (const i of [1, 2]) if ((await entriesOf(c.node(i), conv, 'agent.started')).some(e => e.author.device === c.node(i).device && (e.body as { reason?: string }).reason === 'revival')) return i
      return null
    }
    await until(async () => { const r = await reviver(); return r !== null && !c.node(r).agents.isRunning(conv) }, 'a peer to revive the agent and end its turn', 2900)
    const r = await reviver() as number
    // the revival reaches the woken device over a slow link: announced at once, its blocks later
    const stalled = stallBlocks(c.node(0).history, c.node(r).history.feeds(conv).find(f => f.own)?.key as string)
    try {
      await sleep(3000 - (Date.now() - pausedAt))
      const thawedAt = Date.now()
      c.thaw(0)
      await sleep(1600) // past the call's return: the result waits for the revival's blocks
      stalled.release()
      await until(() => !c.node(0).agents.isRunning(conv), 'the woken agent to stop', 10_000)
      const mine = (await entriesOf(c.node(0), conv)).filter(e => e.author.device === c.node(0).device && e.ts >= thawedAt)
      expect(mine.map(e => e.kind === 'agent.stopped' ? `stopped:${e.body.reason}` : e.kind), 'what the woken device wrote').toEqual(['stopped:superseded'])
    } finally {
      stalled.release()
    }
  }, 60_000)
})
