// The five guarantees of DESIGN.md for agents across devices, as a model-based test in the
// manner of Jepsen and PropEr statem: fast-check generates sequences of commands — start
// agents, messages, slow external tools, pauses, device pauses (SIGSTOP emulated: timers,
// network, tool and model answers of one node frozen for a time around the detection window),
// kills, restarts, isolations, heals, resumes, auto-revival switches — over three full nodes
// (ArborNode: history on disk, sync, agents, placement) on an in-process network. After every
// command: at most one agent per conversation per connected component (once healing has had
// its bounded time), no external step run twice, no external step started by an agent that a
// higher one linked to it had outranked for a detection window, and every
// live device accepts start, message and resume. At the end: restart and heal everything —
// or leave one killed device dead for good — wait a bounded quiet period, then no entry a
// live device acknowledged is lost, the live devices hold the same history, no agent runs,
// every message was taken up and no turn is left cut short (unless its agent is on the dead
// device and the conversation did not opt into revival), and no external step ran twice
// (the tools' ledger, by idempotency key).
//
// ARBOR_LONG=1 runs 1,000 cases instead of 20 (ARBOR_RUNS=n: n). A failure prints the seed, the path and the
// shrunk command list; replay with fc.assert(..., { seed, path, endOnFailure: true }).
import { afterEach, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { Entry } from '../../../src/shared/entry/entry'
import type { ConversationDag } from '../../../src/shared/conversation/conversation-dag'
import { tickHlc } from '../../../src/shared/entry/hlc'
import { compareRefs, openWork, ownerOf, topRef, type AgentRef } from '../../../src/main/runtime/placement/placement'
import type { AgentRun } from '../../../src/main/runtime/agent/agent-loop'
import { AgentCluster } from '../../helpers/agent-cluster'
import type { FakeScript } from '../../../src/main/llm/fake-provider'
import { until } from '../../helpers/temp-dir'

const LONG = process.env.ARBOR_LONG === '1'
const NUM_RUNS = LONG ? 1000 : Number(process.env.ARBOR_RUNS ?? 20)
const N = 3
const SLOW_MS = 200 // one step of the slow external tool
const LONG_STEPS = 30 // a long turn: this many slow steps, far longer than healing may take
// Healing must end with one agent within this: the loser's current step, presence, margin.
const HEAL_MS = 2_500
const SUSPECT_MS = 500 // the detection window
// An agent linked to a higher one of its conversation for this long has heard of it: it starts no more steps.
const OUTRANKED_GRACE_MS = SUSPECT_MS

/** "long": LONG_STEPS slow external steps; "slow": one; anything else is echoed. */
const SCRIPT: FakeScript = {
  rules: [
    { match: '^long', reply: [...Array.from({ length: LONG_STEPS }, () => ({ toolCalls: [{ name: 'slow', args: {} }] })), { text: 'long work done' }] },
    { match: '^slow', reply: [{ toolCalls: [{ name: 'slow', args: {} }] }, { text: 'slow work done' }] }
  ],
  default: { text: 'You said: {{lastUser}}' }
}
const QUIET_MS = 30_000 // the final quiet period
const QUIET_STABLE_MS = 1_500 // how long it must stay quiet: three detection windows
// ARBOR_SEED=… ARBOR_PATH=… replays one failure without shrinking: the path's first number (the case as
// generated); a shrunk path may not replay, since which commands run depends on timing
const replay = process.env.ARBOR_SEED !== undefined ? { seed: Number(process.env.ARBOR_SEED), path: process.env.ARBOR_PATH ?? '', endOnFailure: true } : {}

// ------------------------------------------------------------------ model and real system

interface Model {
  /** devices running (not killed) */
  up: boolean[]
  /** conversations started so far (their number; the real ids are in the system) */
  conversations: number
}

interface Real {
  c: AgentCluster
  /** conversation ids, in the order they were started */
  convs: string[]
  /** every entry a device acknowledged (it returned from writing it), by conversation: id → device */
  acked: Map<string, Map<string, number>>
  /** devices whose links the test cut (isolate): they stay cut until a heal */
  isolated: Set<number>
  step: number
  /** the devices' keys (known while they run, kept when they die) */
  keys: string[]
  /** when the run began (Date.now()), for times in failure messages */
  t0: number
}

const name = (i: number): string => `d${i}`

/** Devices linked to i, directly or through others (a connected component of live devices). */
function component (r: Real, i: number): number[] {
  const seen = new Set([i])
  const todo = [i]
  while (todo.length > 0) {
    const a = todo.pop() as number
    for (let b = 0; b < N; b++) if (!seen.has(b) && r.c.linked(a, b)) { seen.add(b); todo.push(b) }
  }
  return [...seen].sort()
}

/** Conversations with two agents running in one connected component. */
function doubleAgents (r: Real): string[] {
  const bad: string[] = []
  for (const conv of r.convs) {
    const on = r.c.runningOn(conv)
    const comps = new Set(on.map(i => component(r, i).join(',')))
    if (comps.size < on.length) bad.push(`${conv.slice(0, 8)} on ${on.map(name).join('+')}`)
  }
  return bad
}

/** External steps run more than once (guarantee 5), by idempotency key. */
function runTwice (r: Real): string[] {
  const keys = r.c.ledger.map(l => l.idemKey)
  return keys.filter((k, i) => keys.indexOf(k) !== i)
}

/**
 * External steps an agent started while outranked (guarantee 4: one agent acting per side):
 * a higher agent of its conversation had run for OUTRANKED_GRACE_MS on a device linked to its
 * own for as long. A lower agent stops at its next step boundary once it can know of the higher
 * one; a woken device must not take a step before it has heard whether it was revived.
 */
function outrankedSteps (r: Real): string[] {
  const bad: string[] = []
  const at = (t: number): string => `+${t - r.t0} ms`
  for (const row of r.c.ledger) {
    const own = row.agents.find(a => a.dev === row.dev && a.conversation === row.conversation)
    if (own === undefined) continue
    for (const a of row.agents) {
      if (a.conversation !== row.conversation || a.dev === row.dev) continue
      if (compareRefs({ device: a.device, epoch: a.epoch }, { device: own.device, epoch: own.epoch }) <= 0) continue
      const linked = row.linkedSince[row.dev]?.[a.dev]
      if (linked === undefined || row.at - Math.max(linked, a.since) < OUTRANKED_GRACE_MS) continue
      bad.push(`${row.device}/agent#${own.epoch} started ${row.idemKey.slice(0, 8)} in ${row.conversation.slice(0, 8)} at ${at(row.at)}; ${name(a.dev)}/agent#${a.epoch} ran since ${at(a.since)}, linked since ${at(linked)}`)
    }
  }
  return bad
}

/** Guarantees 4 and 5 over the tools' ledger, at once (no waiting: what ran, ran). */
function checkLedger (r: Real): void {
  expect(runTwice(r), 'external steps run twice').toEqual([])
  expect(outrankedSteps(r), 'external steps started by an outranked agent').toEqual([])
}

async function checkAfterCommand (r: Real): Promise<void> {
  // Guarantee 4: one agent per side, except while healing, which ends within HEAL_MS.
  await until(() => doubleAgents(r).length === 0, `one agent per side (${doubleAgents(r).join('; ')})`, HEAL_MS)
  checkLedger(r)
}

function ack (r: Real, conv: string, e: Entry, dev: number): void {
  const m = r.acked.get(conv) ?? new Map<string, number>()
  m.set(e.id, dev)
  r.acked.set(conv, m)
}

/** A conversation device i holds (its root arrived), chosen by k; undefined if none. */
function heldConv (r: Real, i: number, k: number): string | undefined {
  const held = r.convs.filter(c => r.c.node(i).history.summary(c) !== undefined)
  return held.length === 0 ? undefined : held[k % held.length]
}

// ------------------------------------------------------------------ commands

type Cmd = fc.AsyncCommand<Model, Real>

abstract class OnDevice implements Cmd {
  constructor (readonly dev: number) {}
  check (m: Readonly<Model>): boolean { return m.up[this.dev] === true }
  abstract run (m: Model, r: Real): Promise<void>
  abstract toString (): string
}

/** Starts a conversation on a device and its agent with a first message (guarantee 1). */
class StartAgent extends OnDevice {
  /** `long`: its first message asks for a long turn (what a device pause meets most often in use) */
  constructor (dev: number, readonly autoRevival: boolean, readonly long = false) { super(dev) }
  async run (m: Model, r: Real): Promise<void> {
    const node = r.c.node(this.dev)
    const root = await node.history.createConversation({ title: `c${m.conversations}`, autoRevival: this.autoRevival })
    r.convs.push(root.id)
    ack(r, root.id, root, this.dev)
    m.conversations++
    const msg = await r.c.post(this.dev, root.id, `${this.long ? 'long' : 'hello'} ${r.step}`)
    ack(r, root.id, msg, this.dev)
    // sync latency, not a fault: the devices linked to this one get the conversation
    await until(() => component(r, this.dev).every(i => r.c.node(i).history.summary(root.id) !== undefined), 'the new conversation on the linked devices', 5_000)
    expect(node.agents.isRunning(root.id) || (await node.history.open(root.id)).children(msg.id).length > 0).toBe(true)
  }

  toString (): string { return `start(${name(this.dev)}${this.autoRevival ? ', auto-revival' : ''}${this.long ? ', long' : ''})` }
}

type Work = 'note' | 'slow' | 'long'

/** Posts a message on any conversation the device holds: accepted, connected or not (guarantee 1). */
class Message extends OnDevice {
  constructor (dev: number, readonly k: number, readonly work: Work) { super(dev) }
  override check (m: Readonly<Model>): boolean { return super.check(m) && m.conversations > 0 }
  async run (_m: Model, r: Real): Promise<void> {
    const conv = heldConv(r, this.dev, this.k)
    if (conv === undefined) return
    const msg = await r.c.post(this.dev, conv, `${this.work} ${r.step}`)
    ack(r, conv, msg, this.dev)
  }

  toString (): string { return `${this.work === 'note' ? 'message' : this.work + 'Tool'}(${name(this.dev)}, #${this.k})` }
}

/** Moves a conversation's agent to the device (guarantee 1: resume works disconnected too). */
class Resume extends OnDevice {
  constructor (dev: number, readonly k: number) { super(dev) }
  override check (m: Readonly<Model>): boolean { return super.check(m) && m.conversations > 0 }
  async run (_m: Model, r: Real): Promise<void> {
    const conv = heldConv(r, this.dev, this.k)
    if (conv === undefined) return
    const node = r.c.node(this.dev)
    if (node.agents.isRunning(conv)) return // already here: the UI offers no resume
    let ref: AgentRef
    try {
      ref = await node.resume(conv)
    } catch (err) {
      // it came here meanwhile (a revival or a message taken up): nothing to move, the agent is here
      if (/already runs on this device/.test((err as Error).message) && node.agents.isRunning(conv)) return
      throw err
    }
    // the history names it (or an agent that outranks it: a resume elsewhere at the same moment) owner
    const resumed = ref
    await until(async () => {
      const top = topRef([ownerOf((await node.history.open(conv)).entries())])
      return top !== null && compareRefs(top, resumed) >= 0
    }, `the resumed agent (epoch ${ref.epoch}) or a higher one to own the conversation`, 5_000)
  }

  toString (): string { return `resume(${name(this.dev)}, #${this.k})` }
}

class ToggleRevival extends OnDevice {
  constructor (dev: number, readonly k: number) { super(dev) }
  override check (m: Readonly<Model>): boolean { return super.check(m) && m.conversations > 0 }
  async run (_m: Model, r: Real): Promise<void> {
    const conv = heldConv(r, this.dev, this.k)
    if (conv === undefined) return
    const h = r.c.node(this.dev).history
    const dag = await h.open(conv)
    const now = h.summary(conv)?.autoRevival === true
    const tip = dag.branch(h.selected(conv)).at(-1) as Entry
    const [e] = await h.append(conv, [{ kind: 'meta', body: { key: 'autoRevival', value: !now, hlc: tickHlc(null, Date.now(), h.device) }, parents: [tip.id] }])
    ack(r, conv, e as Entry, this.dev)
  }

  toString (): string { return `toggleRevival(${name(this.dev)}, #${this.k})` }
}

/** The test waits (the cluster works on): not a fault. */
class Pause implements Cmd {
  constructor (readonly ms: number) {}
  check (): boolean { return true }
  async run (): Promise<void> { await new Promise(resolve => setTimeout(resolve, this.ms)) }
  toString (): string { return `pause(${this.ms})` }
}

/**
 * A device stops as a SIGSTOP would stop it (a closed lid, a long GC, a stalled VM), `leadMs`
 * from now, for `ms`: below, near or well above the detection window. Its timers, its network
 * (both ways; links stay up) and its tools' and model's answers are frozen; on thaw its overdue
 * timers fire first, then the answers, then the network input. Chosen by `k` among the live
 * devices running an auto-revival agent that a linked device could revive, else those running
 * one, else those running any agent, else all live ones: where a pause matters most.
 */
class PauseDevice implements Cmd {
  /** `lagMs`: how much later than its output its input flows again after the thaw (peers' transports backed off) */
  constructor (readonly k: number, readonly leadMs: number, readonly ms: number, readonly lagMs: number) {}
  check (m: Readonly<Model>): boolean { return m.up.some(Boolean) }
  async run (m: Model, r: Real): Promise<void> {
    await new Promise(resolve => setTimeout(resolve, this.leadMs))
    const up = m.up.flatMap((u, i) => u ? [i] : [])
    const runs = (i: number): AgentRun[] => r.c.node(i).agents.runs()
    const revivable = (i: number): string[] => runs(i).map(run => run.conversation).filter(c => r.c.node(i).history.summary(c)?.autoRevival === true)
    const reviverNear = (i: number): boolean => revivable(i).some(c => up.some(j => j !== i && r.c.linked(i, j) && r.c.node(j).history.summary(c) !== undefined))
    const pool = [up.filter(reviverNear), up.filter(i => revivable(i).length > 0), up.filter(i => runs(i).length > 0), up].find(p => p.length > 0) ?? up
    const dev = pool[this.k % pool.length] as number
    r.c.pause(dev)
    try {
      await new Promise(resolve => setTimeout(resolve, this.ms))
      r.c.thaw(dev, { input: this.lagMs === 0 })
      await new Promise(resolve => setTimeout(resolve, this.lagMs))
    } finally {
      r.c.thaw(dev)
    }
  }

  toString (): string { return `pauseDevice(#${this.k}, after ${this.leadMs} ms, for ${this.ms} ms, input ${this.lagMs} ms later)` }
}

/** The device dies: cut off first, so nothing it writes while going down gets out until it restarts. */
class Kill extends OnDevice {
  override check (m: Readonly<Model>): boolean { return super.check(m) && m.up.filter(Boolean).length > 1 }
  async run (m: Model, r: Real): Promise<void> {
    r.c.net.isolate(name(this.dev))
    await r.c.stop(this.dev)
    m.up[this.dev] = false
  }

  toString (): string { return `kill(${name(this.dev)})` }
}

class Restart implements Cmd {
  constructor (readonly dev: number) {}
  check (m: Readonly<Model>): boolean { return m.up[this.dev] === false }
  async run (m: Model, r: Real): Promise<void> {
    await r.c.start(this.dev)
    m.up[this.dev] = true
    r.isolated.delete(this.dev)
    // it comes back linked to every live device that is not isolated
    await Promise.all(r.c.devices.map(async (d, j) => {
      if (d !== null && j !== this.dev && !r.isolated.has(j)) await r.c.net.connect(name(this.dev), name(j))
    }))
  }

  toString (): string { return `restart(${name(this.dev)})` }
}

class Isolate extends OnDevice {
  async run (_m: Model, r: Real): Promise<void> {
    r.c.net.isolate(name(this.dev))
    r.isolated.add(this.dev)
  }

  toString (): string { return `isolate(${name(this.dev)})` }
}

class IsolateAll implements Cmd {
  check (): boolean { return true }
  async run (_m: Model, r: Real): Promise<void> {
    r.c.net.cutAll()
    for (let i = 0; i < N; i++) r.isolated.add(i)
  }

  toString (): string { return 'isolateAll' }
}

class Heal implements Cmd {
  check (): boolean { return true }
  async run (_m: Model, r: Real): Promise<void> {
    await r.c.net.healAll()
    r.isolated.clear()
  }

  toString (): string { return 'heal' }
}

/** A command, then the per-command invariants. */
class Checked implements Cmd {
  constructor (readonly cmd: Cmd) {}
  check (m: Readonly<Model>): boolean { return this.cmd.check(m) }
  async run (m: Model, r: Real): Promise<void> {
    r.step++
    await this.cmd.run(m, r)
    await checkAfterCommand(r)
  }

  toString (): string { return this.cmd.toString() }
}

const devArb = fc.nat({ max: N - 1 })
// A device pause starts anywhere in a slow step; it lasts below, near (both sides) or, half the time, well above the window.
const pauseMs = fc.oneof(fc.constantFrom(150, SUSPECT_MS - 50, SUSPECT_MS + 50), fc.constant(3 * SUSPECT_MS))
// Its input flows again with its output, a step later, or two windows later (a sender's retransmissions backed off).
const pauseDevice = fc.tuple(fc.nat(), fc.nat({ max: SLOW_MS + 50 }), pauseMs, fc.constantFrom(0, SLOW_MS + 50, 2 * SUSPECT_MS)).map(([k, lead, ms, lag]) => new PauseDevice(k, lead, ms, lag))
// Weights by repetition (fc.commands picks uniformly): agents and their work most, faults often.
const commands = [
  fc.tuple(devArb, fc.boolean()).map(([d, a]) => new StartAgent(d, a)),
  fc.tuple(devArb, fc.boolean()).map(([d, a]) => new StartAgent(d, a)),
  // an auto-revival agent at work from the start, for the device pauses to meet
  devArb.map(d => new StartAgent(d, true, true)),
  devArb.map(d => new StartAgent(d, true, true)),
  fc.tuple(devArb, fc.nat()).map(([d, k]) => new Message(d, k, 'note')),
  fc.tuple(devArb, fc.nat()).map(([d, k]) => new Message(d, k, 'slow')),
  fc.tuple(devArb, fc.nat()).map(([d, k]) => new Message(d, k, 'long')),
  fc.tuple(devArb, fc.nat()).map(([d, k]) => new Message(d, k, 'long')),
  fc.tuple(devArb, fc.nat()).map(([d, k]) => new Resume(d, k)),
  fc.tuple(devArb, fc.nat()).map(([d, k]) => new Resume(d, k)),
  fc.tuple(devArb, fc.nat()).map(([d, k]) => new ToggleRevival(d, k)),
  fc.constantFrom(0, 50, 300, 1000).map(ms => new Pause(ms)),
  pauseDevice,
  pauseDevice,
  pauseDevice,
  devArb.map(d => new Kill(d)),
  devArb.map(d => new Restart(d)),
  devArb.map(d => new Isolate(d)),
  fc.constant(new IsolateAll()),
  fc.constant(new Heal())
].map(arb => arb.map((cmd: Cmd) => new Checked(cmd)))

// ------------------------------------------------------------------ the final checks

/**
 * After the commands: every device comes back — or, with `leaveDead`, one that was killed
 * never does (guarantee 3: it must block nothing). Then a bounded quiet period, and the checks.
 */
async function finalChecks (r: Real, leaveDead: boolean): Promise<void> {
  const { c } = r
  const dead = leaveDead ? c.devices.findIndex(d => d === null) : -1
  for (let i = 0; i < N; i++) if (c.devices[i] === null && i !== dead) await c.start(i)
  await c.net.healAll()
  const live = c.devices.flatMap((d, i) => d === null ? [] : [i])
  const deadKey = dead < 0 ? undefined : r.keys[dead]

  // a bounded quiet period: no agent runs, the live devices hold the same history
  const level = async (): Promise<boolean> => {
    if (r.convs.some(conv => c.runningOn(conv).length > 0)) return false
    for (const conv of r.convs) {
      const sets = await Promise.all(live.map(async i => {
        const h = c.node(i).history
        if (h.summary(conv) === undefined) return ''
        return [...(await h.open(conv)).entries()].map(e => e.id).sort().join()
      }))
      if (new Set(sets).size !== 1) return false
    }
    return true
  }
  // quiet = level for a while (a revival starts only once the dead device is suspected)
  let since = 0
  await until(async () => {
    if (!await level()) { since = 0; return false }
    if (since === 0) since = Date.now()
    return Date.now() - since >= QUIET_STABLE_MS
  }, 'agents to finish and the live devices to hold the same history', QUIET_MS)

  for (const conv of r.convs) {
    const acked = r.acked.get(conv) ?? new Map<string, number>()
    // only the dead device held it: nothing of it can be asked of the others
    if (c.node(live[0] as number).history.summary(conv) === undefined) {
      expect([...acked.values()].every(d => d === dead), `conversation ${conv.slice(0, 8)} missing on the live devices`).toBe(true)
      continue
    }
    const dags = await Promise.all(live.map(i => c.node(i).history.open(conv)))
    for (const [k, dag] of dags.entries()) {
      // Guarantee 2: every entry a live device acknowledged is on every live device; nothing waits for a parent.
      const lost = [...acked].filter(([id, d]) => d !== dead && !dag.has(id)).map(([id]) => id)
      expect(lost, `entries lost on ${name(live[k] as number)}`).toEqual([])
      expect(dag.waiting(), `entries waiting on ${name(live[k] as number)}`).toEqual([])
    }
    const dag = dags[0] as ConversationDag
    const top = ownerOf(dag.entries())
    // A conversation whose agent is on the dead device waits for it (or a resume) unless it opted into revival.
    const optIn = c.node(live[0] as number).history.summary(conv)?.autoRevival === true
    if (top !== null && top.device === deadKey && !optIn) continue
    // Guarantee 3: every cut-short turn of the current owner was continued (after its restart, or by a reviver)…
    const stuck = openWork(dag).filter(w => w.kind === 'turn' && top !== null && w.agent.device === top.device && w.agent.epoch === top.epoch)
    expect(stuck.map(w => w.leaf.kind), `turns left cut short in ${conv.slice(0, 8)}:\n${dagText(dag, r)}`).toEqual([])
    // …and every message sent to an agent was taken up (guarantee 1: usable, whoever is gone).
    const unanswered = [...acked.keys()].filter(id => dag.get(id)?.kind === 'user' && openWork(dag).some(w => w.kind === 'message' && w.message.id === id))
    expect(unanswered, `messages nobody answered in ${conv.slice(0, 8)}:\n${dagText(dag, r)}`).toEqual([])
  }
  // Guarantee 5 (no external step ran twice) and 4 (none by an outranked agent).
  checkLedger(r)
}

/** A conversation as lines (for a failure's message): entry, parent, author device and agent, body. */
function dagText (dag: ConversationDag, r: Real): string {
  const who = (device: string): string => {
    const i = r.c.devices.findIndex(d => d?.node.device === device)
    return i < 0 ? device.slice(0, 6) : name(i)
  }
  return [...dag.entries()].sort((a, b) => a.ts - b.ts).map(e =>
    `${e.id.slice(0, 6)} <- ${e.parents.map(p => p.slice(0, 6)).join(',') || '-'} ${who(e.author.device)}${e.author.agent !== undefined ? '/' + e.author.agent : ''} ${e.kind} ${JSON.stringify(e.body).slice(0, 90)}`
  ).join('\n')
}

// ------------------------------------------------------------------ the property

let running: AgentCluster | null = null
afterEach(async () => {
  await running?.close()
  running = null
})

describe('agents across devices (model-based)', () => {
  it('keeps the five guarantees under generated faults', async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 20, size: 'large' }), fc.boolean(), async (cmds, leaveDead) => {
        const c = new AgentCluster({ n: N, heartbeatMs: 100, suspectAfterMs: SUSPECT_MS, slowMs: SLOW_MS, script: SCRIPT })
        running = c
        try {
          await c.ready()
          const r: Real = { c, convs: [], acked: new Map(), isolated: new Set(), step: 0, keys: c.devices.map(d => d?.node.device ?? ''), t0: Date.now() }
          const setup = (): { model: Model; real: Real } => ({ model: { up: [true, true, true], conversations: 0 }, real: r })
          await fc.asyncModelRun(setup, cmds)
          await finalChecks(r, leaveDead)
        } finally {
          running = null
          await c.close()
        }
      }),
      { numRuns: NUM_RUNS, verbose: 1, ...replay }
    )
  }, LONG ? 6 * 3600_000 : Math.max(600_000, NUM_RUNS * 20_000))
})
