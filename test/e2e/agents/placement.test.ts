// Where agents run across devices (DESIGN.md, "Placement", guarantees 3–5), over full nodes
// (history on disk, sync, agents, placement) on an in-process network: the owner picks up
// messages posted elsewhere, resume moves the agent, healing leaves one agent, and a dead
// device's opt-in agent is revived once, without repeating its external step.
import { afterEach, describe, expect, it } from 'vitest'
import type { Entry, EntryOf } from '../../../src/shared/entry/entry'
import { reviverOf } from '../../../src/main/runtime/placement/placement'
import { memoryLogger } from '../../../src/shared/logger'
import { AgentCluster, entriesOf } from '../../helpers/agent-cluster'
import { until } from '../../helpers/temp-dir'

let cluster: AgentCluster | null = null
afterEach(async () => {
  await cluster?.close()
  cluster = null
})

async function startCluster (opts: ConstructorParameters<typeof AgentCluster>[0] = {}): Promise<AgentCluster> {
  cluster = new AgentCluster(opts)
  await cluster.ready()
  return cluster
}

/** A conversation made on device i, once every running device holds its start. */
async function conversationOn (c: AgentCluster, i: number, opts: { autoRevival?: boolean } = {}): Promise<string> {
  const root = await c.node(i).history.createConversation({ title: 'placement', ...opts })
  await until(async () => c.devices.every(d => d === null || d.node.history.summary(root.id) !== undefined), 'the conversation on every device')
  return root.id
}

const stopped = (es: Entry[]): Array<EntryOf<'agent.stopped'>> => es.filter((e): e is EntryOf<'agent.stopped'> => e.kind === 'agent.stopped')
const started = (es: Entry[]): Array<EntryOf<'agent.started'>> => es.filter((e): e is EntryOf<'agent.started'> => e.kind === 'agent.started')

async function turnDone (c: AgentCluster, i: number, conversation: string, after: Entry): Promise<void> {
  await until(async () => {
    const dag = await c.node(i).history.open(conversation)
    return [...dag.entries()].some(e => e.kind === 'agent.stopped' && e.body.reason === 'done' && dag.pathTo(e.id).some(p => p.id === after.id))
  }, `the answer to "${(after as EntryOf<'user'>).body.text}" on d${i}`, 30_000)
}

describe('placement across devices', () => {
  it('the owner answers a message posted on another device; no second agent starts', async () => {
    const c = await startCluster({ n: 2 })
    const conv = await conversationOn(c, 0)
    const first = await c.post(0, conv, 'hello')
    await turnDone(c, 0, conv, first)
    await until(async () => (await entriesOf(c.node(1), conv, 'agent.stopped')).length > 0, 'd1 to hold the first turn')

    const dag1 = await c.node(1).history.open(conv)
    const tip = dag1.branch().at(-1) as Entry
    const [msg] = await c.node(1).history.append(conv, [{ kind: 'user', body: { text: 'from the other device' }, parents: [tip.id] }])
    const outcome = await c.node(1).posted(conv, msg as Entry)
    expect(outcome).toEqual({ runs: 'elsewhere', device: c.node(0).device, name: 'd0', reachable: true })
    expect(c.node(1).agents.isRunning(conv)).toBe(false)

    await turnDone(c, 0, conv, msg as Entry)
    await turnDone(c, 1, conv, msg as Entry)
    const all = await entriesOf(c.node(1), conv)
    expect(started(all).every(e => e.author.device === c.node(0).device)).toBe(true)
    const answer = all.find(e => e.kind === 'assistant' && (e.body as { text: string }).text === 'You said: from the other device')
    expect(answer?.author.device).toBe(c.node(0).device)
  })

  it('resume moves the agent here with a higher epoch; the old one stops at its next step boundary and the external step is not repeated', async () => {
    const c = await startCluster({ n: 2, slowMs: 600 })
    const conv = await conversationOn(c, 0)
    const msg = await c.post(0, conv, 'slow 1')
    // wait until d1 holds the intent of the slow step d0 is running
    await until(async () => (await entriesOf(c.node(1), conv, 'tool.intent')).length === 1, 'the intent on d1')
    expect(c.ledger).toHaveLength(1)
    const ref = await c.node(1).resume(conv)
    expect(ref).toEqual({ device: c.node(1).device, epoch: 1 })

    await until(async () => stopped(await entriesOf(c.node(0), conv)).some(e => e.body.reason === 'superseded'), 'd0 to give way')
    const sup = stopped(await entriesOf(c.node(0), conv)).find(e => e.body.reason === 'superseded') as EntryOf<'agent.stopped'>
    expect(sup.body.by).toEqual({ device: c.node(1).device, epoch: 1 })
    expect(sup.author.device).toBe(c.node(0).device)
    await turnDone(c, 1, conv, msg)
    await until(() => c.runningOn(conv).length === 0, 'every agent to finish')

    // d1 continued from the intent: the outcome is unknown there, never run again
    expect(c.ledger).toHaveLength(1)
    const all = await entriesOf(c.node(1), conv)
    const unknown = all.filter(e => e.kind === 'tool.result' && e.body.status === 'unknown')
    expect(unknown).toHaveLength(1)
    expect(unknown[0]?.author.device).toBe(c.node(1).device)
    const resumed = started(all).find(e => e.body.reason === 'resume')
    expect(resumed?.body).toEqual({ epoch: 1, reason: 'resume', previous: { device: c.node(0).device, epoch: 0 } })
    expect(all.some(e => e.kind === 'note' && e.body.text.includes('now runs on d1'))).toBe(true)
  })

  it('healing: each side of a partition runs one agent; after the heal the lower one stops and both branches stay', async () => {
    const c = await startCluster({ n: 3, slowMs: 500 })
    const conv = await conversationOn(c, 0)
    const first = await c.post(0, conv, 'hello')
    await turnDone(c, 0, conv, first)
    await until(async () => c.devices.every(d => d !== null && d.node.history.summary(conv)?.size === c.node(0).history.summary(conv)?.size), 'all devices level')

    c.net.isolate('d0')
    const left = await c.post(0, conv, 'slow 1, on the left')
    await c.node(1).resume(conv)
    await c.node(1).agents.wait(conv) // nothing to answer yet: it took the conversation over and stopped
    const right = await c.post(1, conv, 'slow 2, on the right')
    await until(() => c.runningOn(conv).length === 2, 'an agent on each side')
    expect(c.runningOn(conv)).toEqual([0, 1])

    await c.net.healAll()
    await until(async () => stopped(await entriesOf(c.node(0), conv)).some(e => e.body.reason === 'superseded'), 'd0 to give way after the heal')
    await turnDone(c, 1, conv, right)
    await until(() => c.runningOn(conv).length === 0, 'every agent to finish')
    // both branches are in every device's tree
    for (let i = 0; i < 3; i++) {
      await until(async () => {
        const dag = await c.node(i).history.open(conv)
        return dag.has(left.id) && dag.has(right.id) && dag.waiting().length === 0
      }, `both branches on d${i}`)
    }
    // d0's stop is written after its branch's last entry: it may reach d2 after the branches did
    const superseded = async (): Promise<Array<EntryOf<'agent.stopped'>>> => stopped(await entriesOf(c.node(2), conv)).filter(e => e.body.reason === 'superseded')
    await until(async () => (await superseded()).length > 0, 'd0\'s stop on d2')
    expect((await superseded()).map(e => [e.author.device, e.body.by])).toEqual([[c.node(0).device, { device: c.node(1).device, epoch: 1 }]])
  })

  it('a message sent just before its agent\'s device dies is taken up by a reviver (found by the model test)', async () => {
    const c = await startCluster({ n: 3 })
    // d1 first hears of the conversations while cut off, so placement meets them before their history
    c.net.isolate('d1')
    const other = await c.node(0).history.createConversation({ title: 'first', autoRevival: true })
    await c.post(0, other.id, 'hello')
    await c.net.healAll()
    const conv = (await c.node(2).history.createConversation({ title: 'opt-in', autoRevival: true })).id
    await c.post(2, conv, 'hello')
    await until(async () => c.node(0).history.summary(conv) !== undefined, 'the conversation on d0')
    const msg = await c.post(0, conv, 'are you there?')
    c.net.isolate('d2')
    await c.stop(2)
    await turnDone(c, 0, conv, msg)
    const revived = started(await entriesOf(c.node(0), conv)).filter(e => e.body.reason === 'revival')
    expect(revived).toHaveLength(1)
  })

  it('a message queued behind a busy agent is answered, after a restart too', async () => {
    const c = await startCluster({ n: 2, slowMs: 300 })
    const conv = await conversationOn(c, 0)
    await c.post(0, conv, 'slow 1')
    const queued = await c.post(0, conv, 'queued while busy')
    expect(c.node(0).agents.isRunning(conv)).toBe(true)
    // the node stops before the first turn ends: the waiting message is kept on disk
    await c.stop(0)
    await c.start(0)
    await turnDone(c, 0, conv, queued)
    const answer = (await entriesOf(c.node(0), conv)).find(e => e.kind === 'assistant' && e.parents[0] !== undefined && (e.body as { text: string }).text === 'You said: queued while busy')
    expect(answer?.author.device).toBe(c.node(0).device)
  })

  it('a dead device\'s opt-in agent is revived by exactly one live device, which does not repeat the external step', async () => {
    const c = await startCluster({ n: 3, slowMs: 60_000 })
    const conv = await conversationOn(c, 0, { autoRevival: true })
    const msg = await c.post(0, conv, 'slow 1')
    // the step starts once another device holds its intent (acknowledged intents)
    await until(async () => (await entriesOf(c.node(1), conv, 'tool.intent')).length === 1 && (await entriesOf(c.node(2), conv, 'tool.intent')).length === 1 && c.ledger.length === 1, 'the intent on d1 and d2, the step started on d0')
    const t0 = Date.now()
    // d0 dies mid-step: cut off first, so nothing it writes while stopping gets out
    c.net.isolate('d0')
    await c.stop(0)

    await until(async () => {
      const revived = await Promise.all([1, 2].map(async i => started(await entriesOf(c.node(i), conv)).filter(e => e.body.reason === 'revival').length))
      return revived.some(n => n > 0)
    }, 'a revival', 10_000)
    const revivalMs = Date.now() - t0
    await turnDone(c, 1, conv, msg)
    await turnDone(c, 2, conv, msg)
    const all = await entriesOf(c.node(1), conv)
    const revivals = started(all).filter(e => e.body.reason === 'revival')
    expect(revivals).toHaveLength(1)
    expect(revivals[0]?.body.previous).toEqual({ device: c.devices[1]?.node.sync.peers().find(p => p.name === 'd0')?.device, epoch: 0 })
    expect(c.ledger).toHaveLength(1)
    expect(c.ledger[0]?.device).toBe('d0')
    expect(all.filter(e => e.kind === 'tool.result' && e.body.status === 'unknown')).toHaveLength(1)
    expect(all.some(e => e.kind === 'note' && e.body.text.includes('revived on d'))).toBe(true)
    expect(revivalMs).toBeLessThan(10_000)
  })

  it('a device cut off from the owner alone does not revive its agent while another live device still hears it', async () => {
    const c = await startCluster({ n: 3, slowMs: 3000 })
    // a conversation whose reviver, should d0 look dead to d1 and d2, would be d2
    const [k1, k2] = [c.node(1).device, c.node(2).device]
    let conv = await conversationOn(c, 0, { autoRevival: true })
    while (reviverOf(conv, [k1, k2]) !== k2) conv = await conversationOn(c, 0, { autoRevival: true })
    const msg = await c.post(0, conv, 'slow 1')
    await until(async () => (await entriesOf(c.node(2), conv, 'tool.intent')).length === 1, 'the intent on d2')
    // d2 loses its link to d0 (it suspects d0 at once); d1 still hears d0, and tells d2 so
    c.net.cut('d0', 'd2')
    await new Promise(resolve => setTimeout(resolve, 1500)) // three detection windows
    expect(c.runningOn(conv)).toEqual([0])
    await turnDone(c, 0, conv, msg)
    // with the d0–d2 link still cut, the rest of d0's turn reaches d2 through d1
    await turnDone(c, 2, conv, msg)
    expect(c.net.isConnected('d0', 'd2')).toBe(false)
    const all = await entriesOf(c.node(2), conv)
    expect(started(all).map(e => [e.author.device, e.body.reason])).toEqual([[c.node(0).device, 'user']])
    expect(all.filter(e => e.kind === 'tool.result' && e.body.status === 'unknown')).toHaveLength(0)
    expect(c.ledger).toHaveLength(1)
  })

  it('a device whose network is switched off revives nothing: it is the one away, not the others dead', async () => {
    const c = await startCluster({ n: 2, slowMs: 4000 })
    const conv = await conversationOn(c, 0, { autoRevival: true })
    const msg = await c.post(0, conv, 'slow 1')
    await until(async () => (await entriesOf(c.node(1), conv, 'tool.intent')).length === 1, 'the intent on d1')
    await c.node(1).setOnline(false)
    await new Promise(resolve => setTimeout(resolve, 1500))
    expect(c.runningOn(conv)).toEqual([0])
    expect(started(await entriesOf(c.node(1), conv)).filter(e => e.body.reason === 'revival')).toHaveLength(0)
    // a message posted there waits for the agent where it runs (resume would move it here)
    const tip = (await entriesOf(c.node(1), conv, 'tool.intent'))[0] as Entry
    const [mine] = await c.node(1).history.append(conv, [{ kind: 'user', body: { text: 'while away' }, parents: [tip.id] }])
    expect(await c.node(1).posted(conv, mine as Entry)).toEqual({ runs: 'elsewhere', device: c.node(0).device, name: 'd0', reachable: false })
    await new Promise(resolve => setTimeout(resolve, 600))
    expect(c.runningOn(conv)).toEqual([0])
    await c.node(1).setOnline(true)
    await c.net.healAll()
    await turnDone(c, 1, conv, msg)
  })

  it('a peer announcing an agent for a conversation whose history has not arrived here yet is no cause for a warning', async () => {
    const log = memoryLogger()
    const c = await startCluster({ n: 2, log })
    c.net.cut('d0', 'd1')
    const root = await c.node(0).history.createConversation({ title: 'not there yet' })
    c.node(1).placement.reconcile(root.id) // what d0's presence makes d1 do
    await new Promise(resolve => setTimeout(resolve, 200))
    expect(log.lines.filter(l => l.level !== 'info')).toEqual([])
  })
})
