import crypto from 'hypercore-crypto'
import { ArborNode } from '../../src/main/node'
import { FakeProvider, type FakeScript } from '../../src/main/llm/fake-provider'
import type { AgentConfig } from '../../src/main/runtime/agent/agent-host'
import type { Tool } from '../../src/main/tools/tool'
import type { LlmProvider } from '../../src/main/llm/provider'
import type { Entry } from '../../src/shared/entry/entry'
import type { Logger } from '../../src/shared/logger'
import { InProcessNetwork } from './in-process-network'
import { PausableClock } from './pausable-clock'
import { tempDirs } from './temp-dir'

/** An agent running on a device of the cluster, as a ledger row saw it: since when (Date.now()). */
export interface RunningAt { dev: number; device: string; conversation: string; epoch: number; since: number }

/**
 * One run of an external tool: the effect the guarantees say must never happen twice; with
 * what the cluster looked like as it started (for one agent per side).
 */
export interface LedgerRow {
  idemKey: string
  device: string
  at: number
  dev: number
  conversation: string
  /** every agent running in the cluster at that moment */
  agents: RunningAt[]
  /** linkedSince[i][j]: since when devices i and j have been linked (Date.now()), if they are */
  linkedSince: Array<Array<number | undefined>>
}

/**
 * The model every device of these tests runs: "slow N" makes it call the external `slow`
 * tool (which takes N ms) and then answer; anything else is echoed.
 */
export const CLUSTER_SCRIPT: FakeScript = {
  rules: [{
    match: 'slow (\\d+)',
    reply: [{ toolCalls: [{ name: 'slow', args: { ms: 0 } }] }, { text: 'slow work done: {{lastToolOutput}}' }]
  }],
  default: { text: 'You said: {{lastUser}}' }
}

/**
 * The `slow` tool: external (never re-run), records itself in the ledger as it starts, then
 * waits. Its process keeps running while its device is paused; the device sees the result after the thaw.
 */
function slowTool (record: (idemKey: string) => void, clock: PausableClock, ms: number): Tool {
  return {
    name: 'slow',
    description: 'works for a while, with an effect outside',
    parameters: { type: 'object', properties: { ms: { type: 'number' } } },
    effect: 'external',
    timeoutMs: 60_000,
    async run (_args, ctx) {
      record(ctx.idemKey)
      await new Promise<void>(resolve => {
        const t = setTimeout(resolve, ms)
        ctx.signal.addEventListener('abort', () => { clearTimeout(t); resolve() }, { once: true })
      })
      await clock.running()
      return ctx.signal.aborted ? { status: 'error', output: 'stopped' } : { status: 'ok', output: `worked ${ms} ms` }
    }
  }
}

export interface ClusterDevice {
  name: string
  dir: string
  node: ArborNode
}

export interface AgentClusterOptions {
  n?: number
  heartbeatMs?: number
  suspectAfterMs?: number
  /** how long the slow tool takes */
  slowMs?: number
  /** the scripted model (default CLUSTER_SCRIPT) */
  script?: FakeScript
  /** where the nodes report (default: nowhere) */
  log?: Logger
}

/**
 * Full nodes (ArborNode: history on disk, sync, agents, placement) paired in one cluster,
 * linked by an in-process network a test can cut and heal, running the scripted model.
 */
export class AgentCluster {
  readonly net = new InProcessNetwork()
  readonly devices: Array<ClusterDevice | null> = []
  readonly ledger: LedgerRow[] = []
  readonly names: string[]
  private readonly dirs = tempDirs('arbor-agents-')
  private readonly secret = crypto.randomBytes(32)
  private readonly keys: string[] = []
  private readonly dataDirs: string[] = []
  private readonly opts: Required<AgentClusterOptions>
  /** each device's clock (kept across restarts: a restart is a new process, but never a paused one) */
  private readonly clocks: PausableClock[] = []
  /** when each device's agent of each conversation started (Date.now()), by `${device}:${conversation}` */
  private readonly startedAt = new Map<string, number>()

  constructor (opts: AgentClusterOptions = {}) {
    this.opts = { n: 3, heartbeatMs: 100, suspectAfterMs: 500, slowMs: 400, script: CLUSTER_SCRIPT, log: { info: () => {}, warn: () => {}, error: () => {} }, ...opts }
    this.names = Array.from({ length: this.opts.n }, (_, i) => `d${i}`)
  }

  async ready (): Promise<void> {
    for (let i = 0; i < this.opts.n; i++) this.dataDirs.push(await this.dirs.make())
    for (let i = 0; i < this.opts.n; i++) await this.start(i)
    await this.net.healAll()
  }

  device (i: number): ClusterDevice {
    const d = this.devices[i]
    if (d === null || d === undefined) throw new Error(`device ${i} is not running`)
    return d
  }

  node (i: number): ArborNode { return this.device(i).node }

  /** Starts device i on its data directory (again after stop), trusting the others, linked to every running device. */
  async start (i: number): Promise<ArborNode> {
    const name = this.names[i] as string
    const dir = this.dataDirs[i] as string
    const clock = this.clocks[i] ?? (this.clocks[i] = new PausableClock())
    clock.thaw()
    const fake = new FakeProvider(this.opts.script)
    // The model's answer reaches a paused device after the thaw.
    const provider: LlmProvider = {
      name: fake.name,
      async chat (req) {
        try { return await fake.chat(req) } finally { await clock.running() }
      }
    }
    const config = (conversation: string): AgentConfig => ({
      provider,
      model: 'fake-1',
      tools: new Map([['slow', slowTool(idemKey => { this.ledger.push(this.row(i, conversation, idemKey)) }, clock, this.opts.slowMs)]]),
      sandbox: { enabled: true, cwd: dir, hidden: [] },
      system: 'You are a test agent.'
    })
    const node = new ArborNode({
      dataDir: dir,
      name,
      swarm: false,
      heartbeatMs: this.opts.heartbeatMs,
      suspectAfterMs: this.opts.suspectAfterMs,
      agentConfig: async conversation => config(conversation),
      clock,
      log: this.opts.log
    })
    node.agentEvents.on('running', ({ conversation, running }) => { if (running) this.startedAt.set(`${i}:${conversation}`, Date.now()) })
    await node.ready()
    this.keys[i] = node.device
    node.cluster.setSecret(this.secret)
    this.devices[i] = { name, dir, node }
    // every device trusts every other one (as after pairing)
    for (let j = 0; j < this.opts.n; j++) {
      const a = this.devices[j]
      if (a === null || a === undefined) continue
      for (let k = 0; k < this.opts.n; k++) {
        const key = this.keys[k]
        if (k !== j && key !== undefined && !a.node.cluster.isTrusted(key)) a.node.cluster.trust(key, this.names[k] as string)
      }
    }
    this.net.add(name, node.sync)
    return node
  }

  /**
   * Pauses device i as SIGSTOP would: its timers (clock), its network in both directions, and
   * what its tools and model answer (they go on working; the answers wait). Its links stay up.
   */
  pause (i: number): void {
    this.clockOf(i).pause()
    this.net.freeze(this.device(i).name, true)
  }

  /**
   * Wakes device i: its overdue timers fire at once, then it sees its tools' and model's answers,
   * then its network input (as on SIGCONT: timers before sockets). `input: false` keeps its
   * input held (thawInput lets it go): its peers' transports backed off their retransmissions
   * while it was silent, so what they send reaches it later than what it sends reaches them.
   */
  thaw (i: number, o: { input?: boolean } = {}): void {
    this.clockOf(i).thaw()
    const d = this.devices[i]
    if (d == null) return
    this.net.freeze(d.name, false, ['out'])
    if (o.input !== false) this.net.freeze(d.name, false, ['in'])
  }

  /** Lets device i's held network input go (after thaw with `input: false`). */
  thawInput (i: number): void {
    const d = this.devices[i]
    if (d != null) this.net.freeze(d.name, false, ['in'])
  }

  private clockOf (i: number): PausableClock {
    const c = this.clocks[i]
    if (c === undefined) throw new Error(`device ${i} was never started`)
    return c
  }

  /** A ledger row for a step of device i's agent of a conversation, starting now. */
  private row (i: number, conversation: string, idemKey: string): LedgerRow {
    const agents: RunningAt[] = []
    this.devices.forEach((d, j) => {
      for (const r of d?.node.agents.runs() ?? []) agents.push({ dev: j, device: d?.node.device ?? '', conversation: r.conversation, epoch: r.epoch, since: this.startedAt.get(`${j}:${r.conversation}`) ?? Date.now() })
    })
    const linkedSince = this.names.map((a, j) => this.names.map((b, k) => j !== k && this.linked(j, k) ? this.net.linkedSince(a, b) : undefined))
    return { idemKey, device: this.names[i] as string, at: Date.now(), dev: i, conversation, agents, linkedSince }
  }

  /** Stops device i cleanly (its agents record that they stopped). */
  async stop (i: number): Promise<void> {
    this.thaw(i)
    const d = this.device(i)
    this.net.remove(d.name)
    this.devices[i] = null
    await d.node.close()
  }

  /** Whether i and j are linked (both running and their link up). */
  linked (i: number, j: number): boolean {
    return this.devices[i] != null && this.devices[j] != null && this.net.isConnected(this.names[i] as string, this.names[j] as string)
  }

  /** Posts a user message on device i, on the branch it shows (or after `parent`). */
  async post (i: number, conversation: string, text: string, parent?: string): Promise<Entry> {
    const node = this.node(i)
    const dag = await node.history.open(conversation)
    const after = parent ?? (dag.branch(node.history.selected(conversation)).at(-1) as Entry).id
    const [e] = await node.history.append(conversation, [{ kind: 'user', body: { text }, parents: [after] }])
    node.history.select(conversation, (e as Entry).id)
    await node.posted(conversation, e as Entry)
    return e as Entry
  }

  /** The devices running an agent for the conversation right now. */
  runningOn (conversation: string): number[] {
    const out: number[] = []
    this.devices.forEach((d, i) => { if (d !== null && d.node.agents.isRunning(conversation)) out.push(i) })
    return out
  }

  async close (): Promise<void> {
    for (const c of this.clocks) c.thaw()
    await this.net.close()
    await Promise.allSettled(this.devices.map(d => d?.node.close()))
    await this.dirs.cleanup()
  }
}

/** Entries of a kind, in a conversation as device i holds it. */
export async function entriesOf (node: ArborNode, conversation: string, kind?: Entry['kind']): Promise<Entry[]> {
  const dag = await node.history.open(conversation)
  return [...dag.entries()].filter(e => kind === undefined || e.kind === kind)
}
