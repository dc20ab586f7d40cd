// Attack: a paired but malicious device writes mutable state with clocks meant to win for
// ever (DESIGN.md, "Trust": peer clocks are bounded): a title with a hybrid-clock timestamp
// at the end of time, auto-revival set ten years ahead, a setting whose clock names another
// device to win the tie-break, and an agent epoch no honest resume can exceed. Another
// device's own later setting must still win, on it and on the other honest device, and it
// must still be able to run and resume the conversation's agent. Real nodes on disk.
import { afterEach, describe, expect, it } from 'vitest'
import path from 'node:path'
import fs from 'node:fs'
import { setMeta } from '../../../src/main/history/set-meta'
import { MAX_EPOCH } from '../../../src/main/runtime/placement/placement'
import type { Entry, EntryOf } from '../../../src/shared/entry/entry'
import type { Hlc } from '../../../src/shared/entry/hlc'
import { PeerNodes, type PeerNode } from '../../helpers/peer-nodes'
import { until } from '../../helpers/temp-dir'

let peers: PeerNodes | null = null
afterEach(async () => {
  await peers?.close()
  peers = null
})

/** How far ahead of real time a peer's clock may be honoured (MAX_CLOCK_SKEW_MS in src/shared/entry/hlc.ts). */
const SKEW_MS = 60_000
const TEN_YEARS = 10 * 365 * 24 * 3600 * 1000

async function three (): Promise<{ victim: PeerNode; honest: PeerNode; mallory: PeerNode }> {
  peers = new PeerNodes()
  const dir = await peers.tempDir()
  const [echo, slow] = [path.join(dir, 'echo.json'), path.join(dir, 'slow.json')]
  fs.writeFileSync(echo, JSON.stringify({ default: { text: 'You said: {{lastUser}}' } }))
  // Mallory's model takes its time: her agent stays announced while it answers
  fs.writeFileSync(slow, JSON.stringify({ default: { text: 'x'.repeat(200), delayMsPerChunk: 50, chunkSize: 1 } }))
  return {
    victim: await peers.add('victim', { settings: { provider: 'fake', script: echo } }),
    honest: await peers.add('honest', { settings: { provider: 'fake', script: echo } }),
    mallory: await peers.add('mallory', { settings: { provider: 'fake', script: slow } })
  }
}

/** The victim's conversation, its first message answered by its agent and held everywhere; tip: the answer. */
async function answered (victim: PeerNode): Promise<{ root: Entry; tip: Entry }> {
  const root = await victim.node.history.createConversation({ title: 'mine' })
  const [hello] = await victim.node.history.append(root.id, [{ kind: 'user', body: { text: 'hello' }, parents: [root.id] }])
  await victim.node.posted(root.id, hello as Entry)
  expect(await victim.node.agents.wait(root.id)).toBe('done')
  const tip = (await victim.node.history.open(root.id)).branch().at(-1) as Entry
  await peers?.everywhere(root.id, tip)
  return { root, tip }
}

/** Mallory writes a meta entry with whatever clock she likes, at the tip of her branch. */
async function forgeMeta (mallory: PeerNode, conv: string, key: string, value: unknown, hlc: Hlc): Promise<Entry> {
  const dag = await mallory.node.history.open(conv)
  const tip = dag.branch(mallory.node.history.selected(conv)).at(-1) as Entry
  const [e] = await mallory.node.history.append(conv, [{ kind: 'meta', body: { key, value, hlc }, parents: [tip.id] }])
  return e as Entry
}

const metaOf = (e: Entry): EntryOf<'meta'>['body'] => (e as EntryOf<'meta'>).body

describe('attack: clocks and epochs from another device', () => {
  it('a title pinned at the end of time is not honoured, and cannot make the title unwritable', async () => {
    const { victim, honest, mallory } = await three()
    const root = await victim.node.history.createConversation({ title: 'start' })
    const v1 = await setMeta(victim.node.history, await victim.node.history.open(root.id), 'title', 'v1')
    await peers?.everywhere(root.id, v1)
    const end = await forgeMeta(mallory, root.id, 'title', 'owned', { wall: Number.MAX_SAFE_INTEGER, counter: Number.MAX_SAFE_INTEGER, device: mallory.node.device })
    await peers?.everywhere(root.id, end)
    expect.soft((await victim.node.history.open(root.id)).title()).toBe('v1')
    expect.soft(victim.node.history.summary(root.id)?.title).toBe('v1')

    // the victim renames it: that must work, and win everywhere
    const v2 = await setMeta(victim.node.history, await victim.node.history.open(root.id), 'title', 'v2').catch((err: unknown) => err as Error)
    expect(v2, String(v2)).not.toBeInstanceOf(Error)
    expect(metaOf(v2 as Entry).hlc.wall).toBeLessThanOrEqual(Date.now() + SKEW_MS)
    await peers?.everywhere(root.id, v2 as Entry)
    expect((await honest.node.history.open(root.id)).title()).toBe('v2')
    // and the other honest device's later rename wins in turn
    const h1 = await setMeta(honest.node.history, await honest.node.history.open(root.id), 'title', 'h1')
    await peers?.everywhere(root.id, h1)
    expect((await victim.node.history.open(root.id)).title()).toBe('h1')
  })

  it('auto-revival set ten years ahead, and a clock naming another device to win the tie, count for nothing; the victim\'s later setting wins', async () => {
    const { victim, honest, mallory } = await three()
    const root = await victim.node.history.createConversation({ title: 'settings' })
    const off = await setMeta(victim.node.history, await victim.node.history.open(root.id), 'autoRevival', false)
    const named = await setMeta(victim.node.history, await victim.node.history.open(root.id), 'title', 'named by the victim')
    await peers?.everywhere(root.id, named)

    const ahead = await forgeMeta(mallory, root.id, 'autoRevival', true, { wall: Date.now() + TEN_YEARS, counter: 0, device: mallory.node.device })
    // the victim's own clock, with a device id that wins every tie
    const tie = await forgeMeta(mallory, root.id, 'title', 'renamed by mallory', { ...metaOf(named).hlc, device: 'f'.repeat(64) })
    await peers?.everywhere(root.id, ahead)
    await peers?.everywhere(root.id, tie)
    for (const n of [victim, honest]) {
      expect.soft(n.node.history.summary(root.id)?.autoRevival, `auto-revival on ${n.name}`).toBe(false)
      expect.soft((await n.node.history.open(root.id)).title(), `title on ${n.name}`).toBe('named by the victim')
    }

    // a later setting of the victim's is not pinned ten years ahead, and wins on both honest devices
    const on = await setMeta(victim.node.history, await victim.node.history.open(root.id), 'autoRevival', true)
    expect.soft(metaOf(on).hlc.wall).toBeLessThanOrEqual(Date.now() + SKEW_MS)
    const offAgain = await setMeta(honest.node.history, await (async () => { await peers?.everywhere(root.id, on); return await honest.node.history.open(root.id) })(), 'autoRevival', false)
    expect.soft(metaOf(offAgain).hlc.wall).toBeLessThanOrEqual(Date.now() + SKEW_MS)
    await peers?.everywhere(root.id, offAgain)
    expect(victim.node.history.summary(root.id)?.autoRevival).toBe(false)
    expect(metaOf(off).value).toBe(false)
  })

  it('an agent.started with an absurd epoch takes no ownership: the victim\'s agent still answers here, and resume still works', async () => {
    const { victim, mallory } = await three()
    const { root, tip } = await answered(victim)

    const [claim] = await mallory.node.history.append(root.id, [{ kind: 'agent.started', body: { epoch: Number.MAX_SAFE_INTEGER, reason: 'user' }, parents: [tip.id], agent: 'agent#0' }])
    await peers?.everywhere(root.id, claim as Entry)
    expect.soft((await victim.node.agentStatus(root.id)).owner).toEqual({ device: victim.node.device, epoch: 0 })

    // a message posted on the victim is answered by the victim's agent, not left for Mallory's
    const dag = await victim.node.history.open(root.id)
    const [again] = await victim.node.history.append(root.id, [{ kind: 'user', body: { text: 'again' }, parents: [(dag.branch().at(-1) as Entry).id] }])
    expect.soft(await victim.node.posted(root.id, again as Entry)).toEqual({ runs: 'here' })
    await victim.node.agents.wait(root.id)
    // and resume takes the next honest epoch
    const resumed = await victim.node.resume(root.id).catch((err: unknown) => err as Error)
    expect(resumed).toEqual({ device: victim.node.device, epoch: 1 })
    await victim.node.agents.wait(root.id)
  })

  // Epochs are gapless (docs/ARCHITECTURE.md 6.4): a start counts only when every epoch below
  // it is claimed by a start too, so the largest epoch a range check still lets through
  // (MAX_EPOCH, whose resume MAX_EPOCH + 1 the check refuses) owns nothing either.
  it('an agent.started at exactly MAX_EPOCH takes no ownership: the victim resumes, and owns the conversation everywhere', async () => {
    const { victim, honest, mallory } = await three()
    const { root, tip } = await answered(victim)

    // Mallory moves the agent to herself at the highest epoch the range check lets through, mid-turn
    const [claim] = await mallory.node.history.append(root.id, [{ kind: 'agent.started', body: { epoch: MAX_EPOCH, reason: 'resume', previous: { device: victim.node.device, epoch: 0 } }, parents: [tip.id], agent: `agent#${MAX_EPOCH}` }])
    await peers?.everywhere(root.id, claim as Entry)
    for (const n of [victim, honest]) expect.soft((await n.node.agentStatus(root.id)).owner, `owner on ${n.name}`).toEqual({ device: victim.node.device, epoch: 0 })

    // the victim resumes (there is a turn to continue after Mallory's start): one epoch up, and it owns it
    const [again] = await victim.node.history.append(root.id, [{ kind: 'user', body: { text: 'again', reply: false }, parents: [(claim as Entry).id] }])
    await peers?.everywhere(root.id, again as Entry)
    const resumed = await victim.node.resume(root.id, (again as Entry).id).catch((err: unknown) => err as Error)
    expect(resumed).toEqual({ device: victim.node.device, epoch: 1 })
    expect(await victim.node.agents.wait(root.id)).toBe('done')
    const last = (await victim.node.history.open(root.id)).branch().at(-1) as Entry
    await peers?.everywhere(root.id, last)
    for (const n of [victim, honest]) expect((await n.node.agentStatus(root.id)).owner, `owner on ${n.name}`).toEqual({ device: victim.node.device, epoch: 1 })
    // and a message posted on the honest device is answered by the victim's agent
    const [hi] = await honest.node.history.append(root.id, [{ kind: 'user', body: { text: 'from honest' }, parents: [last.id] }])
    expect(await honest.node.posted(root.id, hi as Entry)).toMatchObject({ runs: 'elsewhere', device: victim.node.device })
    await until(async () => [...(await victim.node.history.open(root.id)).entries()].some(e => e.kind === 'assistant' && e.parents[0] !== undefined && e.author.device === victim.node.device && (e.body as { text: string }).text === 'You said: from honest'), 'the victim\'s answer to the honest device')
  })

  it('an agent a peer announces at exactly MAX_EPOCH does not outrank the victim: its resume takes an honest epoch and runs to the end', async () => {
    const { victim, mallory } = await three()
    const root = await mallory.node.history.createConversation({ title: 'shared' })
    await peers?.everywhere(root.id, root)
    const [msg] = await mallory.node.history.append(root.id, [{ kind: 'user', body: { text: 'hi', reply: false }, parents: [root.id] }])
    await peers?.everywhere(root.id, msg as Entry)
    await mallory.node.startAgent(root.id, { leaf: (msg as Entry).id, epoch: MAX_EPOCH })
    await until(() => victim.node.sync.announced(root.id).length > 0, 'Mallory\'s announcement on the victim')
    const status = await victim.node.agentStatus(root.id)
    expect.soft(status.announced).toEqual([])
    const resumed = await victim.node.resume(root.id).catch((err: unknown) => err as Error)
    expect(resumed).toEqual({ device: victim.node.device, epoch: 0 })
    await victim.node.agents.wait(root.id)
    const stops = [...(await victim.node.history.open(root.id)).entries()].filter((e): e is EntryOf<'agent.stopped'> => e.kind === 'agent.stopped' && e.author.device === victim.node.device)
    expect(stops.map(s => s.body.reason)).toEqual(['done'])
    expect((await victim.node.agentStatus(root.id)).owner).toEqual({ device: victim.node.device, epoch: 0 })
    await mallory.node.agents.cancel(root.id)
  })

  it('an agent a peer announces with an absurd epoch does not outrank the victim\'s running agent', async () => {
    const { victim, mallory } = await three()
    const root = await mallory.node.history.createConversation({ title: 'shared' })
    await peers?.everywhere(root.id, root)
    // Mallory runs her own agent with an absurd epoch: it writes it and announces it while it answers
    const [msg] = await mallory.node.history.append(root.id, [{ kind: 'user', body: { text: 'hi', reply: false }, parents: [root.id] }])
    await mallory.node.startAgent(root.id, { leaf: (msg as Entry).id, epoch: Number.MAX_SAFE_INTEGER })
    await until(() => victim.node.sync.announced(root.id).length > 0, 'Mallory\'s announcement on the victim')
    const status = await victim.node.agentStatus(root.id)
    expect.soft(status.announced).toEqual([])
    expect.soft(status.owner).toBeNull()
    // the victim resumes: it takes an honest epoch, and its agent is not superseded
    const resumed = await victim.node.resume(root.id).catch((err: unknown) => err as Error)
    expect(resumed).toEqual({ device: victim.node.device, epoch: 0 })
    await victim.node.agents.wait(root.id)
    const stops = [...(await victim.node.history.open(root.id)).entries()].filter((e): e is EntryOf<'agent.stopped'> => e.kind === 'agent.stopped' && e.author.device === victim.node.device)
    expect(stops.map(s => s.body.reason)).toEqual(['done'])
    await mallory.node.agents.cancel(root.id)
  })
})
