// Markdown text to marked's block tokens, lexed as little as possible: a finished text once
// (kept in a bounded cache, so a turn scrolled out and back is not read again), a streamed
// reply only from its last blocks (what came before a closed block never changes). Pure.
import { Lexer, type Token } from 'marked'

/** Texts whose tokens are kept: a few screens of turns, scrolled away and back. */
export const LEX_CACHE_ENTRIES = 400

const cache = new Map<string, readonly Token[]>()

function lexWhole (text: string): Token[] {
  return Lexer.lex(text, { gfm: true })
}

/** The block tokens of a finished text, from the cache when it was read lately. May throw as Lexer.lex does. */
export function lexCached (text: string): readonly Token[] {
  const hit = cache.get(text)
  if (hit !== undefined) {
    // most recently used last: Map order is the eviction order
    cache.delete(text)
    cache.set(text, hit)
    return hit
  }
  const tokens = lexWhole(text)
  cache.set(text, tokens)
  if (cache.size > LEX_CACHE_ENTRIES) cache.delete(cache.keys().next().value as string)
  return tokens
}

/** A streamed text and its block tokens, to be extended as the text grows. */
export interface StreamLex {
  text: string
  tokens: readonly Token[]
}

// A link reference definition anywhere changes how links before it read: lex such text whole.
const REF_DEF = /^ {0,3}\[[^\]\n]+\]:/m

/**
 * The tokens of `text`, which usually extends `prev.text` (a streamed reply growing): the
 * blocks before the second-to-last block that follows a blank line are kept (the same
 * objects, so their rendering is kept too) and only the rest is lexed again. Markdown's
 * blocks close line by line; a block with another after it, past a blank line, is never
 * reopened by what comes later. Anything else (not an extension, a reference definition,
 * text whose tokens do not add up to it) is lexed whole.
 */
export function lexStreaming (prev: StreamLex | undefined, text: string): StreamLex {
  if (prev === undefined || !text.startsWith(prev.text) || REF_DEF.test(text)) return { text, tokens: lexWhole(text) }
  if (text === prev.text) return prev
  const cut = stableCount(prev.tokens)
  if (cut === 0) return { text, tokens: lexWhole(text) }
  // the kept tokens must be exactly the text's start (marked normalises line ends, for one)
  let at = 0
  for (let i = 0; i < cut; i++) {
    const raw = (prev.tokens[i] as Token).raw
    if (!text.startsWith(raw, at)) return { text, tokens: lexWhole(text) }
    at += raw.length
  }
  const tail = lexWhole(text.slice(at))
  return { text, tokens: [...prev.tokens.slice(0, cut), ...tail] }
}

/**
 * How many leading tokens are settled: those before the last `space` token (a blank line)
 * that comes before the last two blocks. 0 when there is no such point.
 */
function stableCount (tokens: readonly Token[]): number {
  let blocks = 0
  let i = tokens.length - 1
  for (; i >= 0 && blocks < 2; i--) if ((tokens[i] as Token).type !== 'space') blocks++
  // i is now before the second-to-last block; back to a blank line, inclusive
  for (; i >= 0; i--) if ((tokens[i] as Token).type === 'space') return i + 1
  return 0
}

/** For tests: the cache's size, and emptying it. */
export function lexCacheSize (): number { return cache.size }
export function clearLexCache (): void { cache.clear() }
