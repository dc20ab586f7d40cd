import { EventEmitter } from 'node:events'
import os from 'node:os'
import path from 'node:path'
import { HistoryStore } from './history/history-store'
import { indexDir } from './history/index/history-index'
import { SearchIndex } from './search/search-index'
import { conversationCwd, readNodeSettings, resolveAgentConfig } from './runtime/agent/agent-config'
import { AgentHost, type AgentConfig, type RunOverrides, type StartOptions } from './runtime/agent/agent-host'
import { AgentPlacement, type PlacementStatus, type PostOutcome } from './runtime/placement/agent-placement'
import type { AgentRef } from './runtime/placement/placement'
import type { Entry } from '../shared/entry/entry'
import type { AgentDeps, AgentEvent, AgentRun } from './runtime/agent/agent-loop'
import { Lifecycle } from '../shared/lifecycle'
import { consoleLogger, type Logger } from '../shared/logger'
import { ClusterStore, describeForget } from './sync/cluster/cluster-store'
import type { PairingHost } from './sync/cluster/pairing'
import { SyncNode, type BootstrapNode, type HeldWait } from './sync/sync-node'
import type { AgentWait } from '../shared/conversation/agent-wait'
import { FileSecretStore, type SecretStore } from './secrets/secret-store'
import { defaultRegistryDir, registerDataDir } from './tools/sandbox/data-dir-registry'
import type { PeerVersion, ProtocolVersions } from '../shared/protocol-version'
import type { Clock } from '../shared/clock'

/** When a direct connection is not made, pairing falls back to polling DHT records this often. */
const PAIRING_POLL_MS = 1000

export interface ArborNodeOptions {
  dataDir: string
  /** a private DHT; default: the public HyperDHT bootstrap nodes */
  bootstrap?: BootstrapNode[]
  /** this device's name for the others (default: the host name) */
  name?: string
  /**
   * opened for one CLI command while no node runs here (no network): agents a crash cut short
   * are left for the device's own node to continue, and a forget is told when that node runs
   */
  forCommand?: boolean
  log?: Logger
  heartbeatMs?: number
  suspectAfterMs?: number
  /** the environment agents see (OPENAI_*, HOME, ARBOR_WORKSPACES; default process.env) */
  env?: NodeJS.ProcessEnv
  /** false: no Hyperswarm; peers come only through `sync.attach` (the in-process network of tests) */
  swarm?: boolean
  /** false: start with the network off (`arbor serve --offline`) until setOnline(true) */
  online?: boolean
  /** how agents run here, instead of this node's settings (tests: a scripted model and tools) */
  agentConfig?: (conversation: string) => Promise<AgentConfig>
  /** where the API key is kept (default: <data>/secrets.json; the desktop app: encrypted by Electron main) */
  secrets?: SecretStore
  /**
   * where this node records its data directory, so the sandboxes of the user's other nodes
   * on this machine hide it (default: ~/.config/Arbor/nodes, HOME from `env`)
   */
  registryDir?: string
  /** the versions this node's hello says (default: this Arbor's); tests of devices on other versions set them */
  protocolVersions?: ProtocolVersions
  /**
   * the timers and the lease's monotonic time of sync, failure detection, placement and the
   * agents' supervisors (default: the system's); the model test pauses a device through it
   */
  clock?: Clock
  /** test hook at the agents' step boundaries (AgentDeps.fault) */
  fault?: AgentDeps['fault']
}

/** A device as the node sees it: this one, and each paired one with what sync knows of it. */
export interface DeviceRow {
  device: string
  name: string
  self: boolean
  connected: boolean
  suspected: boolean
  /** when this node began to suspect it (ms since the epoch): how long failure detection took */
  suspectedSince?: number
  lastSeen?: number
  behind: number
  /** the device whose signed pairing brought it in (its name), when not this one */
  addedBy?: string
  /** how its Arbor compares with this one's, once it said hello */
  version?: PeerVersion
}

/** What the node's agent host reports: every agent event, and agents starting and ending. */
export interface NodeAgentEvents {
  event: [AgentEvent]
  running: [{ conversation: string; running: boolean }]
  /** an agent here began or stopped waiting at a step (AgentRun.waiting) */
  waiting: [{ conversation: string }]
}

/**
 * The composition root (DESIGN.md, "Layout"): one device's node = its history, its
 * cluster membership, sync with the paired devices, pairing, and its agents. The process
 * that owns the data directory runs exactly one; its clients (the API and the transports
 * that carry it) are composed over it by the entry points (api/served-node.ts).
 */
export class ArborNode {
  readonly dataDir: string
  readonly history: HistoryStore
  /** full-text search of every conversation and branch (derived from the history) */
  readonly search: SearchIndex
  readonly cluster: ClusterStore
  readonly sync: SyncNode
  /** the long-lived host of the agents started on this node (from the UI, through the API) */
  readonly agents: AgentHost
  readonly agentEvents = new EventEmitter<NodeAgentEvents>()
  /** where each conversation's agent runs: pickup, healing, revival, resume */
  readonly placement: AgentPlacement
  readonly secrets: SecretStore
  private readonly opts: ArborNodeOptions
  private readonly log: Logger
  private readonly life: Lifecycle
  private pairing: PairingHost | null = null
  /** joining a cluster: the inviting device (not trusted yet) must get through the firewall */
  private joining = false

  constructor (opts: ArborNodeOptions) {
    this.opts = opts
    this.dataDir = path.resolve(opts.dataDir)
    this.log = opts.log ?? consoleLogger('node')
    this.secrets = opts.secrets ?? new FileSecretStore(this.dataDir)
    this.history = new HistoryStore({ dir: this.dataDir, log: this.logFor('history') })
    this.search = new SearchIndex({ source: this.history, dir: indexDir(this.dataDir), log: this.logFor('search') })
    this.cluster = new ClusterStore({ file: path.join(this.dataDir, 'sync', 'cluster.json'), ...(opts.name !== undefined ? { name: opts.name } : {}), log: this.logFor('cluster') })
    this.sync = new SyncNode({
      history: this.history,
      cluster: this.cluster,
      ...(opts.bootstrap !== undefined ? { bootstrap: opts.bootstrap } : {}),
      ...(opts.heartbeatMs !== undefined ? { heartbeatMs: opts.heartbeatMs } : {}),
      ...(opts.suspectAfterMs !== undefined ? { suspectAfterMs: opts.suspectAfterMs } : {}),
      ...(opts.swarm === false ? { swarm: false } : {}),
      ...(opts.online === false ? { online: false } : {}),
      ...(opts.protocolVersions !== undefined ? { versions: opts.protocolVersions } : {}),
      ...(opts.clock !== undefined ? { clock: opts.clock } : {}),
      // While an invite is open, unknown devices may connect, for pairing only.
      pairingOpen: () => this.joining || this.cluster.invites().some(i => i.usedBy === undefined && i.expiresAt > Date.now()),
      log: this.logFor('sync')
    })
    this.agents = new AgentHost({
      history: this.history,
      configFor: (conversation, run) => this.configFor(conversation, run),
      onEvent: ev => {
        this.agentEvents.emit('event', ev)
        // Paired devices' UIs follow this agent live; its entries replicate on their own.
        if (ev.type !== 'entry') {
          const { conversation, ...event } = ev
          this.sync.broadcastLive({ conversation, event })
        }
      },
      supersededBy: run => this.placement.supersededBy(run),
      ...(opts.clock !== undefined ? { clock: opts.clock } : {}),
      ...(opts.fault !== undefined ? { fault: opts.fault } : {}),
      // Only an agent a peer may revive acts under a lease; others are never slowed.
      lease: async (run, signal) => {
        const revivable = (): boolean => this.revivable(run.conversation)
        if (revivable()) await this.sync.waitForLease(signal, run.conversation, revivable, w => { this.showWait(run, 'lease', w) })
      },
      // A step that must not run twice starts once another device holds its intent (and all
      // before it in this device's feed), so whoever revives the agent sees it.
      held: async (run, signal) => {
        const revivable = (): boolean => this.revivable(run.conversation)
        const own = revivable() ? this.history.feeds(run.conversation).find(f => f.own) : undefined
        if (own === undefined) return
        await this.sync.waitForHeld(signal, own.key, this.history.availableLength(own.key), revivable, w => { this.showWait(run, 'acknowledgement', w) })
      }
    })
    this.placement = new AgentPlacement({
      history: this.history,
      agents: this.agents,
      start: (conversation, o) => this.startAgent(conversation, o),
      peers: {
        live: c => this.sync.holders(c),
        down: d => this.sync.isDown(d),
        announced: c => this.sync.announced(c),
        unread: c => this.sync.unread(c),
        name: d => this.deviceName(d)
      },
      name: () => this.cluster.name,
      stateFile: path.join(this.dataDir, 'runtime', 'agents.json'),
      ...(opts.clock !== undefined ? { clock: opts.clock } : {}),
      log: this.logFor('placement')
    })
    // Any change in who is live, or in what peers run, may call for a placement decision.
    this.sync.on('peer', () => { this.placement.peersChanged() })
    this.sync.on('hears', () => { this.placement.peersChanged() })
    this.sync.on('lapse', () => { this.placement.peersChanged() })
    this.sync.on('presence', ({ agents }) => { for (const a of agents) this.placement.reconcile(a.conversation) })
    this.life = new Lifecycle(() => this.open(), () => this.shut())
  }

  ready (): Promise<void> { return this.life.ready() }

  /** A component's logger: the one given to the node (tests), else the console. */
  /** Whether a peer may revive this conversation's agent (it opted into auto-revival): only then does it act under a lease and wait for acknowledgements. */
  private revivable (conversation: string): boolean { return this.history.summary(conversation)?.autoRevival === true }

  /** An agent here began (w) or stopped (null) waiting before acting: shown on the host's record of the run (each attempt runs on a copy of it), which status reads. */
  private showWait (run: AgentRun, kind: AgentWait['for'], w: HeldWait | null): void {
    const shown = this.agents.runOf(run.conversation) ?? run
    if (w === null) { if (shown.waiting?.for === kind) delete shown.waiting } else shown.waiting = { for: kind, since: shown.waiting?.for === kind ? shown.waiting.since : Date.now(), ...w }
    this.agentEvents.emit('waiting', { conversation: run.conversation })
    if (w !== null) this.log.warn(kind === 'lease' ? `the agent of ${run.conversation.slice(0, 12)} waits to hear from the other devices before acting (${w.why})` : `the agent of ${run.conversation.slice(0, 12)} waits for another device to hold its next step (${w.why}) before running it`)
  }

  private logFor (component: string): Logger {
    return this.opts.log ?? consoleLogger(component)
  }
  close (): Promise<void> { return this.life.close() }

  get device (): string { return this.history.device }

  private async open (): Promise<void> {
    await this.history.ready()
    // loaded (or built) behind the node's start; a node for one command loads it only if asked to search
    if (this.opts.forCommand !== true) this.search.open().catch(err => { this.log.error(`the search index could not open: ${(err as Error).message}`) })
    const registry = this.opts.registryDir ?? defaultRegistryDir((this.opts.env ?? process.env).HOME ?? os.homedir())
    try {
      registerDataDir(this.dataDir, registry)
    } catch (err) {
      this.log.warn(`could not record ${this.dataDir} in ${registry} (${(err as Error).message}): the sandboxes of other Arbor nodes on this machine will not hide this node's data`)
    }
    await this.agents.ready()
    this.cluster.device = this.history.device
    await this.cluster.load()
    this.cluster.useKeyPair(this.history.keyPair) // signs what the user does here (and forgets made while no node ran)
    if (this.opts.name !== undefined) this.cluster.setName(this.opts.name)
    await this.sync.ready()
    await this.startPairingHost()
    await this.placement.ready({ restore: this.opts.forCommand !== true })
  }

  /** Answers devices joining with this device's invites. */
  private async startPairingHost (): Promise<void> {
    const swarm = this.sync.hyperswarm
    if (swarm === null || this.life.closed) return
    // loaded with the network only (blind pairing): a node opened for one command has none
    const { PairingHost } = await import('./sync/cluster/pairing')
    if (this.life.closed || this.pairing !== null) return
    this.pairing = new PairingHost({
      swarm,
      cluster: this.cluster,
      device: this.history.keyPair,
      onPaired: d => { this.log.info(`paired with ${d.name} (${d.key.slice(0, 12)})`) },
      log: this.logFor('pairing'),
      pollMs: PAIRING_POLL_MS
    })
    await this.pairing.ready()
  }

  private async shut (): Promise<void> {
    await this.placement.close()
    await this.agents.close() // each agent records its stop while the history is still open
    await this.pairing?.close()
    await this.sync.close()
    await this.cluster.close()
    await this.search.close()
    await this.history.close()
  }

  // ------------------------------------------------------------ agents

  /** How a conversation's agent runs here: this node's settings + the conversation's + the environment. */
  async agentConfig (conversation: string, run: RunOverrides = {}): ReturnType<typeof resolveAgentConfig> {
    const [settings, apiKey, dag] = await Promise.all([readNodeSettings(this.dataDir), this.secrets.get('apiKey'), this.history.open(conversation)])
    return resolveAgentConfig({ store: this.history, dag, dataDir: this.dataDir, env: this.opts.env ?? process.env, settings, ...(apiKey !== undefined ? { apiKey } : {}), ...(run.model !== undefined ? { model: run.model } : {}) })
  }

  /** Where this device's agent of a conversation works (what the UI shows): this device's choice, never a path a peer wrote. */
  async workingDirectory (conversation: string): Promise<string> {
    return conversationCwd(await this.history.open(conversation), this.device, this.opts.env ?? process.env)
  }

  /** What an agent of the conversation runs with here (throws, saying what to set up, if no model is). */
  async configFor (conversation: string, run: RunOverrides = {}): Promise<AgentConfig> {
    if (this.opts.agentConfig !== undefined) {
      const config = await this.opts.agentConfig(conversation)
      return run.model === undefined ? config : { ...config, model: run.model }
    }
    return (await this.agentConfig(conversation, run)).config
  }

  /** Starts a conversation's agent in the node's host; `running` events tell when it runs and when it ended. */
  async startAgent (conversation: string, opts: StartOptions = {}): Promise<void> {
    this.agentEvents.emit('running', { conversation, running: true })
    try {
      await this.agents.start(conversation, opts)
    } catch (err) {
      if (!this.agents.isRunning(conversation)) this.agentEvents.emit('running', { conversation, running: false })
      throw err
    }
    this.announceAgents()
    void this.agents.wait(conversation).then(() => {
      this.announceAgents()
      this.agentEvents.emit('running', { conversation, running: false })
    })
  }

  /** Tells the paired devices which agents run here (presence: one agent per side). */
  private announceAgents (): void {
    this.sync.setAgents(this.agents.runs().map(r => ({ conversation: r.conversation, epoch: r.epoch, device: this.device })))
  }

  /** A user message written here: its agent runs here, or where it belongs (the owner picks it up). */
  posted (conversation: string, entry: Entry): Promise<PostOutcome> {
    return this.placement.posted(conversation, entry)
  }

  /** Runs this device's agent again from `from` (message.retry), with `model` for this run only. */
  retry (conversation: string, from: string, model?: string): Promise<void> {
    return this.placement.retry(conversation, from, model)
  }

  /** Moves a conversation's agent to this device (`/resume`, `arbor resume`). */
  resume (conversation: string, leaf?: string): Promise<AgentRef> {
    return this.placement.resume(conversation, leaf)
  }

  deviceName (device: string): string {
    if (device === this.device) return this.cluster.name
    return this.cluster.isTrusted(device) ? this.cluster.nameOf(device) : device.slice(0, 12)
  }

  agentStatus (conversation: string): Promise<PlacementStatus> {
    return this.placement.status(conversation)
  }

  // ------------------------------------------------------------ devices and the network (the API's devices and net handlers)

  async invite (opts: { expiresMs?: number } = {}): Promise<{ code: string; expiresAt: number }> {
    const { createInvite } = await import('./sync/cluster/pairing')
    const inv = await createInvite(this.cluster, opts.expiresMs !== undefined ? { expiresMs: opts.expiresMs } : {})
    await this.sync.refresh() // the first invite creates the cluster: start meeting on its topic
    return { code: inv.code, expiresAt: inv.expiresAt }
  }

  async join (code: string, signal: AbortSignal): Promise<{ inviter: string }> {
    if (!this.sync.isOnline) throw new Error('the network is off on this device: `arbor net on` first, then join')
    const swarm = this.sync.hyperswarm
    if (swarm === null) throw new Error('this node has no network')
    this.joining = true
    // One blind-pairing instance per swarm: the host steps aside while this device joins.
    await this.pairing?.close()
    this.pairing = null
    let inviter: Buffer
    try {
      const { joinCluster } = await import('./sync/cluster/pairing')
      inviter = await joinCluster({ swarm, code, device: this.history.keyPair, cluster: this.cluster, signal, pollMs: PAIRING_POLL_MS })
    } finally {
      this.joining = false
      await this.startPairingHost()
    }
    return { inviter: inviter.toString('hex') }
  }

  async devices (): Promise<DeviceRow[]> {
    const peers = new Map(this.sync.peers().map(p => [p.device, p]))
    const self = { device: this.device, name: this.cluster.name, self: true, connected: true, suspected: false, behind: 0 }
    return [self, ...this.cluster.devices().filter(d => d.key !== this.device).map(d => {
      const p = peers.get(d.key)
      const row: DeviceRow = { device: d.key, name: d.name, self: false, connected: p?.connected ?? false, suspected: p?.suspected ?? false, behind: p?.behind ?? 0 }
      if (d.lastSeen !== undefined) row.lastSeen = d.lastSeen
      if (d.addedBy !== undefined) row.addedBy = this.deviceName(d.addedBy)
      if (p?.suspectedSince !== undefined) row.suspectedSince = p.suspectedSince
      if (p?.version !== undefined) row.version = p.version
      return row
    })]
  }

  async forget (device: string): Promise<string> {
    const match = this.cluster.devices().filter(d => d.key.startsWith(device.toLowerCase()) || d.name === device)
    if (match.length === 0) throw new Error(`no paired device matches "${device}"; \`arbor devices\` lists them`)
    if (match.length > 1) throw new Error(`"${device}" matches ${match.length} devices; give more of the key`)
    const d = match[0] as { key: string; name: string }
    const scope = this.cluster.forgetScope(d.key)
    this.cluster.forget(d.key) // its sessions close on the cluster's `devices` event (SyncNode)
    await this.cluster.flush()
    return describeForget(d.name, scope, this.opts.forCommand === true)
  }

  async setOnline (on: boolean): Promise<void> {
    await this.sync.setOnline(on)
    // A node started offline has its swarm only now: invites made meanwhile get answered.
    if (on && this.pairing === null && !this.joining) await this.startPairingHost()
  }
}

/** Parses `host:port[,host:port]` (from --bootstrap or ARBOR_BOOTSTRAP). */
export function parseBootstrap (text: string): BootstrapNode[] {
  return text.split(',').map(s => s.trim()).filter(Boolean).map(s => {
    const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(s)
    const port = m === null ? NaN : Number(m[2])
    if (m === null || !(port > 0 && port < 65536)) throw new Error(`"${s}" is not host:port (for --bootstrap or ARBOR_BOOTSTRAP)`)
    return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port }
  })
}
