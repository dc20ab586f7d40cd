// The events every client follows: entries as they join (local or replicated), this node's and
// connected devices' agent streams, where agents run, peers coming and going, the network.
import type { ApiEvent, NetStateDto } from '../../../shared/api/api'
import type { Logger } from '../../../shared/logger'
import type { EntriesEvent } from '../../history/history-store'
import type { ArborNode } from '../../node'
import type { AgentEvent } from '../../runtime/agent/agent-loop'
import type { PeerEvent } from '../../sync/sync-node'
import type { AgentLocations } from '../agent-locations'
import { streamEventFromPeer, streamEventOf } from '../live-events'

export class ApiEvents {
  private readonly listeners = new Set<(ev: ApiEvent) => void>()
  private readonly unhook: Array<() => void> = []
  /** the last network state sent, to send only changes */
  private lastNet = ''

  constructor (private readonly node: ArborNode, private readonly locations: AgentLocations, private readonly log: Logger) {
    this.hook()
  }

  /** Calls back on every event; returns the unsubscribe function. */
  subscribe (fn: (ev: ApiEvent) => void): () => void {
    this.listeners.add(fn)
    return () => { this.listeners.delete(fn) }
  }

  /** Stops following the node; subscribers hear nothing more. */
  close (): void {
    for (const u of this.unhook.splice(0)) u()
    this.listeners.clear()
  }

  /** A peer announced its agents, came, went or fell silent: tell the clients what moved. */
  presenceChanged (): void {
    for (const c of this.locations.refresh()) this.emitAgent(c)
  }

  netState (): NetStateDto {
    const { sync, device } = this.node
    const peers = sync.peers()
    return {
      online: sync.isOnline,
      peers: peers.filter(p => p.connected).length,
      paired: this.node.cluster.devices().filter(d => d.key !== device).length,
      bootstrap: (sync.bootstrap ?? []).map(b => `${b.host.includes(':') ? `[${b.host}]` : b.host}:${b.port}`)
    }
  }

  private hook (): void {
    const { node } = this
    this.unhook.push(node.history.subscribe((ev: EntriesEvent) => {
      if (ev.joined.length > 0) this.emit({ type: 'entries', conversation: ev.conversation, entries: ev.joined })
    }))
    const onAgent = (ev: AgentEvent): void => {
      // entries arrive through the history (tool.intent/result record what tool-start/-end announce)
      const out = streamEventOf(ev, node.device)
      if (out !== null) this.emit(out)
    }
    const onRunning = (ev: { conversation: string; running: boolean }): void => { this.emitAgent(ev.conversation, ev.running) }
    // an agent here began or stopped waiting before acting: UIs ask agent.status again
    const onWaiting = (ev: { conversation: string }): void => { this.emitAgent(ev.conversation) }
    const onPeer = (ev: PeerEvent): void => {
      this.emit({ type: 'peer', device: ev.device, state: ev.state })
      this.presenceChanged()
      this.netChanged()
    }
    const onPresence = (): void => { this.presenceChanged() }
    const onLive = (msg: { device: string; conversation: string; event: Record<string, unknown> }): void => {
      const out = streamEventFromPeer(msg)
      if (out !== null) this.emit(out)
    }
    const onOnline = (): void => { this.netChanged() }
    node.agentEvents.on('event', onAgent)
    node.agentEvents.on('running', onRunning)
    node.agentEvents.on('waiting', onWaiting)
    node.sync.on('peer', onPeer)
    node.sync.on('presence', onPresence)
    node.sync.on('live', onLive)
    node.sync.on('online', onOnline)
    this.unhook.push(() => {
      node.agentEvents.off('event', onAgent)
      node.agentEvents.off('running', onRunning)
      node.agentEvents.off('waiting', onWaiting)
      node.sync.off('peer', onPeer)
      node.sync.off('presence', onPresence)
      node.sync.off('live', onLive)
      node.sync.off('online', onOnline)
    })
    this.lastNet = JSON.stringify(this.netState())
  }

  /** Where a conversation's agent runs changed here (`here`: whether it runs on this node). */
  private emitAgent (conversation: string, here?: boolean): void {
    const agents = this.locations.of(conversation, here)
    this.emit({ type: 'agent', conversation, running: agents.length > 0, agents })
  }

  private netChanged (): void {
    const state = this.netState()
    const key = JSON.stringify(state)
    if (key === this.lastNet) return
    this.lastNet = key
    this.emit({ type: 'net', state })
  }

  private emit (ev: ApiEvent): void {
    for (const fn of this.listeners) {
      try {
        fn(ev)
      } catch (err) {
        // One subscriber's bug must not starve the others (or the node's emitters).
        this.log.error(`an API event subscriber failed: ${(err as Error).stack ?? String(err)}`)
      }
    }
  }
}
