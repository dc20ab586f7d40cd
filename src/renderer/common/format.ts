// Short words shown on several screens: counts, times, where an agent runs. Pure.
import type { AgentPlaceDto } from '../../shared/api/api'

/** Where an agent runs, in a few words: "here", "on laptop", "here and on laptop". */
export function placesText (agents: readonly AgentPlaceDto[]): string {
  return agents.map(a => a.self ? 'here' : `on ${a.name}`).join(' and ')
}

/** A short "when": "now", "5 min", "3 h", "yesterday", a weekday, or a date. */
export function formatWhen (ts: number, now: number): string {
  const diff = now - ts
  if (diff < 60_000) return 'now'
  if (diff < 3_600_000) return `${Math.floor(diff / 60_000)} min`
  const d = new Date(ts)
  const today = new Date(now)
  const startOfToday = new Date(today.getFullYear(), today.getMonth(), today.getDate()).getTime()
  if (ts >= startOfToday) return `${Math.floor(diff / 3_600_000)} h`
  if (ts >= startOfToday - 86_400_000) return 'yesterday'
  if (ts >= startOfToday - 6 * 86_400_000) return d.toLocaleDateString(undefined, { weekday: 'short' })
  if (d.getFullYear() === today.getFullYear()) return d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })
  return d.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' })
}

/** 1234 → "1.2k", 1234567 → "1.2M". */
export function formatCount (n: number): string {
  if (n < 1000) return String(n)
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0).replace(/\.0$/, '')}k`
  return `${(n / 1_000_000).toFixed(1).replace(/\.0$/, '')}M`
}
