// Which turns of a long transcript to draw: heights (measured, else estimated from the
// content), their running offsets, and the range of turns that covers the viewport.
// Pure: the DOM side (measuring, scrolling) is in Transcript.tsx.
import type { TranscriptItem, Turn } from './transcript-items'

const LINE = 22 // px per line of message text
const CODE_LINE = 19
const USER_CHARS_PER_LINE = 60 // the user's bubble is narrower than the column
const AGENT_CHARS_PER_LINE = 95

function textHeight (text: string, perLine: number): number {
  let h = 0
  let inCode = false
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) { inCode = !inCode; h += inCode ? 40 : 12; continue }
    h += inCode ? CODE_LINE : Math.max(1, Math.ceil(line.length / perLine)) * LINE * (line === '' ? 0.5 : 1)
  }
  return h
}

function itemHeight (item: TranscriptItem): number {
  switch (item.kind) {
    case 'user': return 44 + textHeight(item.text, USER_CHARS_PER_LINE)
    case 'assistant': return 8 + textHeight(item.text, AGENT_CHARS_PER_LINE) + item.tools.length * 44 + (item.usage !== undefined ? 22 : 0)
    case 'tool': return 48
    case 'notice': return 52
  }
}

/** A guess at a turn's drawn height (with its margin), for turns not drawn yet. */
export function estimateTurnHeight (turn: Turn): number {
  let h = 18
  for (const item of turn.items) h += itemHeight(item) + (item.forks.length > 0 ? 28 : 0)
  return Math.round(h)
}

/** offsets[i] = the top of turn i, offsets[n] = the total height. */
export function turnOffsets (turns: readonly Turn[], heightOf: (turn: Turn) => number): Float64Array {
  const offsets = new Float64Array(turns.length + 1)
  for (let i = 0; i < turns.length; i++) offsets[i + 1] = (offsets[i] as number) + heightOf(turns[i] as Turn)
  return offsets
}

/** The index of the turn containing y (clamped to the turns). */
export function turnAt (offsets: Float64Array, y: number): number {
  const n = offsets.length - 1
  if (n <= 0) return 0
  let lo = 0
  let hi = n - 1
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1
    if ((offsets[mid] as number) <= y) lo = mid
    else hi = mid - 1
  }
  return lo
}

/** Within this many pixels of the end, the view follows new content (ChatView's "stick to the bottom"). */
export const NEAR_BOTTOM_PX = 48

export function nearBottom (scrollHeight: number, scrollTop: number, clientHeight: number): boolean {
  return scrollHeight - scrollTop - clientHeight < NEAR_BOTTOM_PX
}

export interface TurnWindow { start: number; end: number }

/**
 * The turns [start, end) to draw for a viewport [top, top + height) in transcript
 * coordinates, with `overscan` pixels more either side; `atBottom` draws the last turns
 * whatever `top` says (the view follows the end as turns arrive).
 */
export function turnWindow (offsets: Float64Array, view: { top: number; height: number; atBottom: boolean }, overscan = 800): TurnWindow {
  const n = offsets.length - 1
  if (n <= 0) return { start: 0, end: 0 }
  const total = offsets[n] as number
  const height = Math.max(view.height, 1)
  const top = view.atBottom ? Math.max(0, total - height) : Math.max(0, Math.min(view.top, total - height))
  const start = turnAt(offsets, top - overscan)
  const end = view.atBottom ? n : Math.min(n, turnAt(offsets, top + height + overscan) + 1)
  return { start, end: Math.max(start + 1, end) }
}
