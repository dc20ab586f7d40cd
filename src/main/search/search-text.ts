// What full-text search reads of an entry and how text becomes terms (pure; search-index.ts
// keeps the postings). The brute-force scan of the property test uses these same functions.
import type { Entry } from '../../shared/entry/entry'

/** Longer words are cut to this many characters, in the text and in a query alike. */
export const MAX_TERM = 40

/**
 * The searchable text of an entry: what a person wrote or read (message, reply, tool output,
 * compaction summary, conversation title, a title set later); null for every other kind,
 * an unknown one included.
 */
export function searchableText (e: Entry): string | null {
  switch (e.kind) {
    case 'conversation': return e.body.title
    case 'user':
    case 'note':
    case 'assistant':
      return e.body.text
    case 'tool.result': return e.body.output
    case 'compaction': return e.body.summary
    case 'meta': return e.body.key === 'title' && typeof e.body.value === 'string' ? e.body.value : null
    default: return null
  }
}

// Letters and digits make words; a CJK character is a word by itself (no spaces between them).
const WORD = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]|[\p{L}\p{N}]+/gu
const MARKS = /\p{M}+/gu

/** Text folded for matching: case and accents ignored ("Café" matches "cafe"). */
function fold (text: string): string {
  return text.normalize('NFD').replace(MARKS, '').toLowerCase()
}

/** The distinct terms of a text, in order of first occurrence. */
export function terms (text: string): string[] {
  const seen = new Set<string>()
  for (const m of fold(text).matchAll(WORD)) seen.add(m[0].slice(0, MAX_TERM))
  return [...seen]
}

/** A parsed query: every word must match a term exactly, and `prefix` must begin one. */
export interface SearchQuery {
  words: string[]
  /** the last word, matched as a prefix (as one types); null for an empty query */
  prefix: string | null
}

export function parseQuery (text: string): SearchQuery {
  const all = terms(text)
  const prefix = all.pop() ?? null
  // the prefix is also a word already required exactly: nothing more to ask of it
  return { words: prefix === null ? all : all.filter(w => w !== prefix), prefix }
}

/** Whether a text matches a query (what the index answers, stated by a scan). */
export function textMatches (text: string, q: SearchQuery): boolean {
  if (q.prefix === null) return false
  const t = new Set(terms(text))
  const prefix = q.prefix
  return q.words.every(w => t.has(w)) && [...t].some(x => x.startsWith(prefix))
}

/**
 * A one-line excerpt of `text` around the first word of the query found in it, about `width`
 * characters, with … where it was cut; `match` is where the matching word is in the excerpt.
 */
export function snippet (text: string, q: SearchQuery, width = 120): { text: string; match: [number, number] | null } {
  const flat = text.replace(/\s+/g, ' ').trim()
  const wanted = [...q.words, ...(q.prefix !== null ? [q.prefix] : [])]
  let at = -1
  let len = 0
  for (const m of flat.matchAll(WORD)) {
    const t = fold(m[0]).slice(0, MAX_TERM)
    if (wanted.some((w, i) => i === wanted.length - 1 && q.prefix !== null ? t.startsWith(w) : t === w)) {
      at = m.index
      len = m[0].length
      break
    }
  }
  if (flat.length <= width) return { text: flat, match: at < 0 ? null : [at, at + len] }
  if (at < 0) return { text: flat.slice(0, width - 1) + '…', match: null }
  const start = Math.max(0, Math.min(at - Math.floor(width / 3), flat.length - width))
  const end = Math.min(flat.length, start + width)
  const head = start > 0 ? '…' : ''
  const out = head + flat.slice(start, end) + (end < flat.length ? '…' : '')
  return { text: out, match: [at - start + head.length, Math.min(at - start + head.length + len, out.length)] }
}
