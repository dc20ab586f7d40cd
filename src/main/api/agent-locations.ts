// Where conversations' agents run, as this node knows it: its own agents, and those the
// connected paired devices announce in their presence messages (DESIGN.md, "One agent per
// side"). A view for the UI: the decisions are runtime/placement's.
import type { AgentPlaceDto } from '../../shared/api/api'
import type { PeerState } from '../sync/sync-node'

export interface PlacementSource {
  /** this device's key and name */
  self: () => { device: string; name: string }
  isRunningHere: (conversation: string) => boolean
  /** the conversations whose agents run on this device */
  runningHere: () => string[]
  peers: () => PeerState[]
}

export class AgentLocations {
  /** conversation → the connected devices announcing an agent for it, by device key */
  private remote = new Map<string, AgentPlaceDto[]>()

  constructor (private readonly src: PlacementSource) {
    this.refresh()
  }

  /** Reads the peers' presence again; returns the conversations whose remote agents changed. */
  refresh (): string[] {
    const next = new Map<string, AgentPlaceDto[]>()
    for (const p of this.src.peers()) {
      // A silent (suspected) device's agents may be gone: only live announcements count.
      if (!p.connected || p.suspected) continue
      for (const a of p.agents) {
        if (a.device !== p.device) continue // a device speaks for its own agents only
        const list = next.get(a.conversation) ?? []
        if (!list.some(x => x.device === p.device)) list.push({ device: p.device, name: p.name !== '' ? p.name : p.device.slice(0, 12), self: false })
        next.set(a.conversation, list)
      }
    }
    for (const list of next.values()) list.sort((x, y) => (x.device < y.device ? -1 : x.device > y.device ? 1 : 0))
    const changed: string[] = []
    for (const c of new Set([...this.remote.keys(), ...next.keys()])) {
      if (placesKey(this.remote.get(c)) !== placesKey(next.get(c))) changed.push(c)
    }
    this.remote = next
    return changed
  }

  /** Where the conversation's agent runs: this device first (`here` overrides asking the host). */
  of (conversation: string, here: boolean = this.src.isRunningHere(conversation)): AgentPlaceDto[] {
    const remote = this.remote.get(conversation) ?? []
    return here ? [{ ...this.src.self(), self: true }, ...remote] : [...remote]
  }

  /** The conversations whose agents run on `device`. */
  on (device: string): string[] {
    if (device === this.src.self().device) return this.src.runningHere()
    return [...this.remote].filter(([, places]) => places.some(p => p.device === device)).map(([c]) => c)
  }
}

function placesKey (places: readonly AgentPlaceDto[] | undefined): string {
  return (places ?? []).map(p => `${p.device}:${p.name}`).join(',')
}
