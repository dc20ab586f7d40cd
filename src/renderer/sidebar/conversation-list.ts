// The sidebar's list: ordering, client-side search, and keeping summaries current from events.
import type { AgentPlaceDto, ApiEvent, ConversationSummaryDto } from '../../shared/api/api'

/** Newest activity first; ties by title then id, so the order is stable. */
export function sortConversations (list: readonly ConversationSummaryDto[]): ConversationSummaryDto[] {
  return [...list].sort((a, b) =>
    b.updatedAt - a.updatedAt || a.title.localeCompare(b.title) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

/** Conversations whose title holds every word of the query (case- and accent-insensitive). */
export function filterConversations (list: readonly ConversationSummaryDto[], query: string): ConversationSummaryDto[] {
  const words = fold(query).split(/\s+/).filter(Boolean)
  if (words.length === 0) return [...list]
  return list.filter(c => {
    const title = fold(c.title || 'Untitled')
    return words.every(w => title.includes(w))
  })
}

function fold (s: string): string {
  return s.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase()
}

/**
 * The list after an event: running flags, sizes and activity times move; `unknown` is
 * true when the event names a conversation the list does not have (time to refetch).
 */
export function applyListEvent (list: readonly ConversationSummaryDto[], ev: ApiEvent): { list: readonly ConversationSummaryDto[]; unknown: boolean } {
  if (ev.type !== 'entries' && ev.type !== 'agent') return { list, unknown: false }
  const i = list.findIndex(c => c.id === ev.conversation)
  if (i === -1) return { list, unknown: true }
  const c = list[i] as ConversationSummaryDto
  let next: ConversationSummaryDto
  if (ev.type === 'agent') {
    if (c.running === ev.running && placesKey(c.agents) === placesKey(ev.agents)) return { list, unknown: false }
    next = { ...c, running: ev.running, agents: ev.agents }
  } else {
    if (ev.entries.length === 0) return { list, unknown: false }
    const newest = Math.max(c.updatedAt, ...ev.entries.map(e => e.ts))
    next = { ...c, updatedAt: newest, size: c.size + ev.entries.length }
  }
  const out = [...list]
  out[i] = next
  return { list: out, unknown: false }
}

function placesKey (agents: readonly AgentPlaceDto[] | undefined): string {
  return (agents ?? []).map(a => `${a.device}:${a.name}`).join(',')
}
