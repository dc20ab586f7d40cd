// Agent events as the API streams them: this node's agents' own, and those a connected
// device relays over the sync channel (never trusted as they come: checked here first).
import { z } from 'zod'
import { Hex32 } from '../../shared/entry/hex32-schema'
import type { AgentStreamEvent } from '../../shared/api/api'
import type { AgentEvent } from '../runtime/agent/agent-loop'

/** A local agent's event for the UI; null for entries (those arrive through the history). */
export function streamEventOf (ev: AgentEvent, device: string): AgentStreamEvent | null {
  switch (ev.type) {
    case 'token':
    case 'reasoning':
      return { type: ev.type, conversation: ev.conversation, device, run: ev.run, parent: ev.parent, delta: ev.delta }
    case 'tool-start':
      return { type: 'tool-start', conversation: ev.conversation, device, run: ev.run, callId: ev.callId, tool: ev.tool, args: ev.args }
    case 'tool-output':
      return { type: 'tool-output', conversation: ev.conversation, device, run: ev.run, callId: ev.callId, chunk: ev.chunk }
    case 'tool-end':
      return { type: 'tool-end', conversation: ev.conversation, device, run: ev.run, callId: ev.callId, status: ev.status }
    case 'entry':
      return null
  }
}

const Id = z.string().min(1).max(200)
/** Streamed pieces are small; anything bigger is not a live event of ours. */
const Piece = z.string().max(1_000_000)

const LiveAgentEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('token'), run: Id, parent: Hex32, delta: Piece }),
  z.object({ type: z.literal('reasoning'), run: Id, parent: Hex32, delta: Piece }),
  z.object({ type: z.literal('tool-start'), run: Id, callId: Id, tool: z.string().min(1).max(200), args: z.unknown() }),
  z.object({ type: z.literal('tool-output'), run: Id, callId: Id, chunk: Piece }),
  z.object({ type: z.literal('tool-end'), run: Id, callId: Id, status: z.enum(['ok', 'error']) })
])

/** A paired device's relayed agent event (SyncNode 'live'), or null when it is not a valid one. */
export function streamEventFromPeer (msg: { device: string; conversation: string; event: Record<string, unknown> }): AgentStreamEvent | null {
  const parsed = LiveAgentEvent.safeParse(msg.event)
  if (!parsed.success) return null
  const e = parsed.data
  const at = { conversation: msg.conversation, device: msg.device, run: e.run }
  switch (e.type) {
    case 'token':
    case 'reasoning':
      return { type: e.type, ...at, parent: e.parent, delta: e.delta }
    case 'tool-start':
      return { type: 'tool-start', ...at, callId: e.callId, tool: e.tool, args: e.args }
    case 'tool-output':
      return { type: 'tool-output', ...at, callId: e.callId, chunk: e.chunk }
    case 'tool-end':
      return { type: 'tool-end', ...at, callId: e.callId, status: e.status }
  }
}
