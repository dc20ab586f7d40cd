// Real ArborNodes (history on disk, sync, agents, placement, this node's own settings and
// environment) paired in one cluster on the in-process network, for tests in which one
// device attacks another through the entries it writes. Unlike AgentCluster, a node here
// resolves its agents' configuration as a real device does (settings, SecretStore, env,
// the conversation's history), unless the test wraps that resolution.
import crypto from 'hypercore-crypto'
import fs from 'node:fs'
import path from 'node:path'
import { writeNodeSettings, type NodeSettings } from '../../src/main/runtime/agent/agent-config'
import { ArborNode } from '../../src/main/node'
import type { AgentConfig } from '../../src/main/runtime/agent/agent-host'
import type { Entry } from '../../src/shared/entry/entry'
import type { ProtocolVersions } from '../../src/shared/protocol-version'
import { memoryLogger } from '../../src/shared/logger'
import { InProcessNetwork } from './in-process-network'
import { tempDirs, until } from './temp-dir'

export interface PeerNode {
  name: string
  /** the data directory */
  dir: string
  /** where this device puts the workspaces of conversations without a directory of its own (ARBOR_WORKSPACES) */
  workspaces: string
  env: NodeJS.ProcessEnv
  node: ArborNode
  log: ReturnType<typeof memoryLogger>
}

export interface PeerNodeOptions {
  /** added to the node's environment (HOME and ARBOR_WORKSPACES are set per node) */
  env?: Record<string, string>
  /** written to the node's settings.json before it starts */
  settings?: NodeSettings
  /** the API key kept in the node's SecretStore */
  apiKey?: string
  /** wraps the node's own resolution of an agent's configuration (e.g. to add a recording tool) */
  wrapConfig?: (resolve: () => Promise<AgentConfig>, conversation: string) => Promise<AgentConfig>
  heartbeatMs?: number
  suspectAfterMs?: number
  /** the node's data directory (default: a fresh temp directory), e.g. on a small disk */
  dataDir?: string
  /** the versions the node's hello says (a device on another version of Arbor) */
  protocolVersions?: ProtocolVersions
}

export class PeerNodes {
  readonly net = new InProcessNetwork()
  readonly nodes: PeerNode[] = []
  private readonly dirs = tempDirs('arbor-peers-')
  private readonly secret = crypto.randomBytes(32)

  /** A ready node, trusting (and trusted by) every node added before it, linked to them. */
  async add (name: string, opts: PeerNodeOptions = {}): Promise<PeerNode> {
    const dir = opts.dataDir ?? await this.dirs.make()
    // outside the data directory, which the sandbox hides
    const workspaces = await this.dirs.make()
    const home = path.join(workspaces, 'home')
    fs.mkdirSync(home)
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, ARBOR_WORKSPACES: path.join(workspaces, 'ws'), ...opts.env }
    if (opts.settings !== undefined) await writeNodeSettings(dir, opts.settings)
    const log = memoryLogger()
    const wrap = opts.wrapConfig
    const node: ArborNode = new ArborNode({
      dataDir: dir,
      name,
      swarm: false,
      env,
      heartbeatMs: opts.heartbeatMs ?? 100,
      suspectAfterMs: opts.suspectAfterMs ?? 500,
      log,
      ...(opts.protocolVersions !== undefined ? { protocolVersions: opts.protocolVersions } : {}),
      ...(wrap !== undefined ? { agentConfig: async (c: string) => wrap(async () => (await node.agentConfig(c)).config, c) } : {})
    })
    await node.ready()
    if (opts.apiKey !== undefined) await node.secrets.set('apiKey', opts.apiKey)
    node.cluster.setSecret(this.secret)
    for (const other of this.nodes) {
      node.cluster.trust(other.node.device, other.name)
      other.node.cluster.trust(node.device, name)
    }
    const p: PeerNode = { name, dir, workspaces, env, node, log }
    this.nodes.push(p)
    this.net.add(name, node.sync)
    await this.net.healAll()
    return p
  }

  /** A directory removed with the nodes. */
  tempDir (): Promise<string> { return this.dirs.make() }

  /** Waits until every node holds the entry (it joined their tree). */
  async everywhere (conversation: string, entry: Entry, nodes: PeerNode[] = this.nodes): Promise<void> {
    await until(async () => {
      for (const n of nodes) {
        if (n.node.history.summary(conversation) === undefined) return false
        if (!(await n.node.history.open(conversation)).isJoined(entry.id)) return false
      }
      return true
    }, `entry ${entry.kind} ${entry.id.slice(0, 8)} on ${nodes.map(n => n.name).join(', ')}`)
  }

  async close (): Promise<void> {
    await this.net.close()
    await Promise.allSettled(this.nodes.map(n => n.node.close()))
    await this.dirs.cleanup()
  }
}
