// The Markdown lexing the renderer saves: a streamed reply lexed from its last blocks gives the
// tokens a whole lex gives, whatever the chunks; finished texts are lexed once.
import { describe, expect, it, vi } from 'vitest'
import fc from 'fast-check'
import { Lexer, type Token } from 'marked'
import { clearLexCache, lexCacheSize, lexCached, lexStreaming, LEX_CACHE_ENTRIES, type StreamLex } from '../../../src/renderer/markdown/markdown-lex'

/** Lines models emit, and the ones that make Markdown's blocks depend on what follows. */
const LINES = [
  'Some words here.', 'more *words* and `code`', '', '', '# Heading', 'Setext', '===', '---', '- item one', '- item two',
  '  continued item', '1. first', '2) second', '> quoted', '> > deeper', '```ts', '```', '~~~', 'const x = 1', '    indented code',
  '| a | b |', '| --- | :-: |', '| 1 | 2 |', '<div>html</div>', '- [ ] task', '- [x] done', '***bold em***', 'lazy continuation',
  '[ref]: https://example.com', 'see [ref] and [x](https://a.example)', 'a\r', '\t- tabbed', '<!-- note', '-->', '  ', '+ plus'
]

const markdown = fc.array(fc.constantFrom(...LINES), { minLength: 0, maxLength: 30 }).map(ls => ls.join('\n'))

/** The text cut in pieces of 1–40 characters, as a stream delivers it. */
const streamed = markdown.chain(text => fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 200 }).map(sizes => {
  const pieces: string[] = []
  let at = 0
  for (let i = 0; at < text.length; i++) {
    const n = sizes[i % sizes.length] as number
    pieces.push(text.slice(at, at + n))
    at += n
  }
  return { text, pieces }
}))

const plain = (tokens: readonly Token[]): unknown => JSON.parse(JSON.stringify([...tokens]))

describe('lexStreaming', () => {
  it('gives the tokens of a whole lex after every piece, whatever the pieces', () => {
    fc.assert(fc.property(streamed, ({ pieces }) => {
      let lex: StreamLex | undefined
      let text = ''
      for (const p of pieces) {
        text += p
        lex = lexStreaming(lex, text)
        expect(plain(lex.tokens)).toEqual(plain(Lexer.lex(text, { gfm: true })))
      }
    }), { numRuns: 300, verbose: 1 })
  })

  it('keeps the settled blocks as they were and lexes only the last ones again', () => {
    const para = (i: number): string => `Paragraph ${i} with **bold** words.\n\n`
    let text = ''
    let lex: StreamLex | undefined
    for (let i = 0; i < 50; i++) { text += para(i); lex = lexStreaming(lex, text) }
    const before = lex as StreamLex
    const spy = vi.spyOn(Lexer, 'lex')
    try {
      const grown = lexStreaming(before, text + 'The next one')
      const lexed = spy.mock.calls.map(c => c[0])
      expect(lexed.length).toBe(1)
      // a bounded tail, not the 50 paragraphs
      expect((lexed[0] as string).length).toBeLessThan(para(49).length * 3)
      expect(grown.tokens.slice(0, 90)).toEqual(before.tokens.slice(0, 90)) // the same objects
      expect(grown.tokens[0]).toBe(before.tokens[0])
    } finally {
      spy.mockRestore()
    }
  })

  it('lexes text that does not extend the last one whole', () => {
    const a = lexStreaming(undefined, 'one\n\ntwo\n\nthree')
    const b = lexStreaming(a, 'other\n\ntext')
    expect(plain(b.tokens)).toEqual(plain(Lexer.lex('other\n\ntext', { gfm: true })))
  })
})

describe('lexCached', () => {
  it('lexes a text once while it stays among the recently read, and forgets the oldest past its bound', () => {
    clearLexCache()
    const spy = vi.spyOn(Lexer, 'lex')
    try {
      const first = lexCached('# Title\n\nwords')
      expect(lexCached('# Title\n\nwords')).toBe(first)
      expect(spy).toHaveBeenCalledTimes(1)
      for (let i = 0; i < LEX_CACHE_ENTRIES + 10; i++) lexCached(`text ${i}`)
      expect(lexCacheSize()).toBe(LEX_CACHE_ENTRIES)
      lexCached('# Title\n\nwords')
      expect(spy).toHaveBeenCalledTimes(LEX_CACHE_ENTRIES + 12) // evicted: read again
    } finally {
      spy.mockRestore()
      clearLexCache()
    }
  })
})
