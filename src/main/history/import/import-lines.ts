// The JSON lines of a session file, and the content blocks both harnesses use: shared by the parsers.
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../../shared/entry/json-depth'

export interface JsonLine { line: number; value: Record<string, unknown> }

/** Every line that is a JSON object within MAX_JSON_DEPTH; the others are reported by number and left out. Blank lines are not lines. */
export function jsonLines (text: string, problems: string[]): JsonLine[] {
  const out: JsonLine[] = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const raw = (lines[i] as string).trim()
    if (raw === '') continue
    // before it is parsed and walked (an overflowing walk would refuse the whole file)
    if (nestsDeeperThan(raw, MAX_JSON_DEPTH)) { problems.push(`line ${i + 1}: nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects, the most Arbor reads; skipped`); continue }
    let value: unknown
    try {
      value = JSON.parse(raw)
    } catch (err) {
      problems.push(`line ${i + 1}: not JSON (${(err as Error).message.slice(0, 80)}); skipped`)
      continue
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) { problems.push(`line ${i + 1}: not a JSON object; skipped`); continue }
    out.push({ line: i + 1, value: value as Record<string, unknown> })
  }
  return out
}

export function isRecord (x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x)
}

export function str (x: unknown): string | undefined {
  return typeof x === 'string' ? x : undefined
}

/** A message's content as text: a string, or the text of its blocks (an image as a mark, other blocks left out). */
export function contentText (content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  const parts: string[] = []
  for (const b of content as unknown[]) {
    if (!isRecord(b)) continue
    if (b.type === 'text' && typeof b.text === 'string') parts.push(b.text)
    else if (b.type === 'image') parts.push('[image]')
  }
  return parts.join('\n')
}

/** An id or name as an entry may hold it: a non-empty string of at most 200 characters, else `fallback`. */
export function nonEmpty (x: unknown, fallback: string): string {
  return typeof x === 'string' && x !== '' ? x.slice(0, 200) : fallback
}
