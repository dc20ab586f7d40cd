// The renderer's Markdown reader: model text becomes plain data (never HTML).
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { createElement } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { highlight, languageOf, MAX_HIGHLIGHT_CHARS, type Token } from '../../src/renderer/markdown/highlight'
import { inlineText, parseInline, parseMarkdown, safeHref, type Block } from '../../src/renderer/markdown/markdown'
import { Markdown } from '../../src/renderer/markdown/Markdown'
import { expectLinear } from '../helpers/linear-growth'

const text = (t: string) => ({ t: 'text' as const, text: t })

/**
 * `code` as a String object whose reads are counted in `read.n`: a character read is 1, a
 * search or copy the characters it covers, a conversion (a regular expression run on it, a
 * concatenation) all of them. The lexers see the same text; a method not counted here throws,
 * so no reading goes uncounted.
 */
function countedReads (code: string, read: { n: number }): string {
  const whole = (): string => { read.n += code.length; return code }
  const searched = (found: number, from: number, needle: string): number => { read.n += (found === -1 ? code.length - from : found - from) + needle.length; return found }
  const methods: Record<string, (...a: never[]) => unknown> = {
    indexOf: (needle: string, from = 0) => searched(code.indexOf(needle, from), Math.max(0, from), needle),
    includes: (needle: string, from = 0) => searched(code.indexOf(needle, from), Math.max(0, from), needle) !== -1,
    startsWith: (needle: string, at = 0) => { read.n += needle.length; return code.startsWith(needle, at) },
    endsWith: (needle: string) => { read.n += needle.length; return code.endsWith(needle) },
    slice: (a?: number, b?: number) => { const r = code.slice(a, b); read.n += r.length; return r },
    codePointAt: (i: number) => { read.n++; return code.codePointAt(i) },
    charCodeAt: (i: number) => { read.n++; return code.charCodeAt(i) },
    split: (sep: RegExp | string) => { read.n += code.length; return code.split(sep).map(part => countedReads(part, read)) },
    toString: whole,
    valueOf: whole
  }
  return new Proxy(new String(code), {
    get (target, key) {
      if (typeof key !== 'string') return key === Symbol.toPrimitive ? whole : Reflect.get(target, key) as unknown
      const at = key.charCodeAt(0)
      if (at >= 48 && at <= 57) { read.n++; return code[Number(key)] } // an index
      if (key === 'length') return code.length
      if (key in methods) return methods[key]
      if (key in String.prototype) throw new Error(`countedReads: String.prototype.${key} is not counted`)
      return Reflect.get(target, key) as unknown
    }
  }) as unknown as string
}

describe('parseMarkdown blocks', () => {
  it('splits paragraphs on blank lines and keeps single newlines as breaks', () => {
    expect(parseMarkdown('one\ntwo\n\nthree')).toEqual([
      { t: 'p', inlines: [text('one'), { t: 'break' }, text('two')] },
      { t: 'p', inlines: [text('three')] }
    ])
  })

  it('reads fenced code verbatim, with its language, up to the closing fence', () => {
    const md = 'Run:\n```bash\necho "<b>hi</b>" *not em*\n\n  indented\n```\nafter'
    expect(parseMarkdown(md)).toEqual([
      { t: 'p', inlines: [text('Run:')] },
      { t: 'code', lang: 'bash', text: 'echo "<b>hi</b>" *not em*\n\n  indented' },
      { t: 'p', inlines: [text('after')] }
    ])
  })

  it('runs an unclosed fence (a reply still streaming) to the end', () => {
    expect(parseMarkdown('~~~\nline 1\nline 2')).toEqual([{ t: 'code', lang: '', text: 'line 1\nline 2' }])
  })

  it('does not close a ``` fence with ~~~ or a shorter fence', () => {
    expect(parseMarkdown('````\na\n```\n~~~\n````')).toEqual([{ t: 'code', lang: '', text: 'a\n```\n~~~' }])
  })

  it('reads headings, rules and quotes', () => {
    expect(parseMarkdown('# Title\n## Sub ##\n---\n> quoted\n> more')).toEqual([
      { t: 'heading', level: 1, inlines: [text('Title')] },
      { t: 'heading', level: 2, inlines: [text('Sub')] },
      { t: 'hr' },
      { t: 'quote', blocks: [{ t: 'p', inlines: [text('quoted'), { t: 'break' }, text('more')] }] }
    ])
    expect(parseMarkdown('#hashtag')).toEqual([{ t: 'p', inlines: [text('#hashtag')] }])
  })

  it('reads bullet and ordered lists, with nesting and continuation lines', () => {
    const blocks = parseMarkdown('- a\n- b\n  more b\n  - nested\n- c\n\n3. three\n4. four')
    expect(blocks).toHaveLength(2)
    const [ul, ol] = blocks as [Extract<Block, { t: 'list' }>, Extract<Block, { t: 'list' }>]
    expect(ul.ordered).toBe(false)
    expect(ul.items).toHaveLength(3)
    expect(ul.items[1]).toEqual([
      { t: 'p', inlines: [text('b'), { t: 'break' }, text('more b')] },
      { t: 'list', ordered: false, start: 1, items: [[{ t: 'p', inlines: [text('nested')] }]] }
    ])
    expect(ol).toMatchObject({ t: 'list', ordered: true, start: 3 })
    expect(ol.items.map(i => i.map(b => b.t === 'p' ? inlineText(b.inlines) : '?'))).toEqual([['three'], ['four']])
  })

  it('keeps a code block inside a list item', () => {
    const [list] = parseMarkdown('1. Run this:\n   ```sh\n   ls -la\n   ```\n2. Done')
    expect(list).toMatchObject({ t: 'list', items: [[{ t: 'p' }, { t: 'code', lang: 'sh', text: 'ls -la' }], [{ t: 'p' }]] })
  })

  it('treats "* * *" as a rule, not a list', () => {
    expect(parseMarkdown('* * *')).toEqual([{ t: 'hr' }])
  })

  it('never throws and never loses the words of plain text (property)', () => {
    fc.assert(fc.property(fc.string({ maxLength: 300 }), s => {
      const blocks = parseMarkdown(s)
      expect(Array.isArray(blocks)).toBe(true)
    }), { numRuns: 500 })
    fc.assert(fc.property(fc.stringMatching(/^[a-z ]{1,40}$/), s => {
      const flat = parseMarkdown(s).flatMap(b => b.t === 'p' ? [inlineText(b.inlines)] : [])
      expect(flat.join('')).toBe(s.trim())
    }))
  })

  it('survives deep nesting', () => {
    expect(() => parseMarkdown('> '.repeat(5000) + 'x')).not.toThrow()
    expect(() => parseMarkdown('- '.repeat(5000) + 'x')).not.toThrow()
    expect(() => parseInline('*'.repeat(2000) + 'x' + '*'.repeat(2000))).not.toThrow()
  })
})

describe('parseInline', () => {
  it('reads code spans literally', () => {
    expect(parseInline('use `a *b* <i>` here')).toEqual([text('use '), { t: 'code', text: 'a *b* <i>' }, text(' here')])
    expect(parseInline('``a ` b``')).toEqual([{ t: 'code', text: 'a ` b' }])
    expect(parseInline('an `unclosed span')).toEqual([text('an `unclosed span')])
  })

  it('reads strong and emphasis, nested', () => {
    expect(parseInline('**bold** and *it* and _it2_')).toEqual([
      { t: 'strong', children: [text('bold')] }, text(' and '), { t: 'em', children: [text('it')] }, text(' and '), { t: 'em', children: [text('it2')] }
    ])
    expect(parseInline('*a **b** c*')).toEqual([{ t: 'em', children: [text('a '), { t: 'strong', children: [text('b')] }, text(' c')] }])
    expect(parseInline('**a *b* c**')).toEqual([{ t: 'strong', children: [text('a '), { t: 'em', children: [text('b')] }, text(' c')] }])
  })

  it('leaves snake_case, lone stars and arithmetic alone', () => {
    expect(inlineText(parseInline('snake_case_name and 2 * 3 * 4'))).toBe('snake_case_name and 2 * 3 * 4')
    expect(parseInline('snake_case_name')).toEqual([text('snake_case_name')])
    expect(parseInline('2 * 3 * 4')).toEqual([text('2 * 3 * 4')])
    expect(parseInline('** not bold**')).toEqual([text('** not bold**')])
  })

  it('honours backslash escapes', () => {
    expect(parseInline('\\*not em\\*')).toEqual([text('*not em*')])
  })

  it('links http(s) and mailto targets only', () => {
    expect(parseInline('see [the docs](https://example.com/a?b=1 "title")')).toEqual([
      text('see '), { t: 'link', href: 'https://example.com/a?b=1', children: [text('the docs')] }
    ])
    expect(parseInline('[click](javascript:alert(1))')).toEqual([text('click')])
    expect(parseInline('[wiki](https://en.wikipedia.org/wiki/Tree_(graph_theory)).')).toEqual([
      { t: 'link', href: 'https://en.wikipedia.org/wiki/Tree_(graph_theory)', children: [text('wiki')] }, text('.')
    ])
    expect(parseInline('[x](data:text/html,hi)')).toEqual([text('x')])
  })

  it('links bare URLs, leaving trailing punctuation out', () => {
    expect(parseInline('go to https://example.com/x.')).toEqual([
      text('go to '), { t: 'link', href: 'https://example.com/x', children: [text('https://example.com/x')] }, text('.')
    ])
    expect(parseInline('(http://a.b/c)')).toEqual([text('('), { t: 'link', href: 'http://a.b/c', children: [text('http://a.b/c')] }, text(')')])
  })
})

describe('safeHref', () => {
  it('accepts web and mail links, refuses script and data URLs', () => {
    expect(safeHref('https://x.org/a')).toBe('https://x.org/a')
    expect(safeHref(' HTTP://x.org ')).toBe('HTTP://x.org')
    expect(safeHref('mailto:a@b.c')).toBe('mailto:a@b.c')
    for (const bad of ['javascript:alert(1)', 'JaVaScRiPt:x', 'data:text/html,x', 'vbscript:x', '/relative', 'file:///etc/passwd', 'https://a b']) {
      expect(safeHref(bad)).toBeUndefined()
    }
  })
})

// ---- highlighting of fenced code (src/renderer/markdown/highlight.ts) and its rendering ----

const kinds = (code: string, lang: string): Array<[string, string]> =>
  (highlight(code, lang) ?? []).filter(t => t.kind !== undefined).map(t => [t.kind as string, t.text])

describe('highlight', () => {
  it('marks keywords, strings, comments, numbers, types and calls in TypeScript', () => {
    expect(kinds('const n: number = 42 // the answer\nfunction f () { return `x ${n}` }\nnew Map()', 'ts')).toEqual([
      ['keyword', 'const'], ['type', 'number'], ['number', '42'], ['comment', '// the answer'],
      ['keyword', 'function'], ['function', 'f'], ['keyword', 'return'], ['string', '`x ${n}`'],
      ['keyword', 'new'], ['function', 'Map']
    ])
  })

  it('knows each curated language and its usual aliases', () => {
    const cases: Array<[string, string, [string, string]]> = [
      ['js', 'let a = 1', ['keyword', 'let']],
      ['javascript', 'await x', ['keyword', 'await']],
      ['TSX', 'interface A {}', ['keyword', 'interface']],
      ['json', '{"k": "v"}', ['property', '"k"']],
      ['py', 'def f(): pass', ['keyword', 'def']],
      ['python3', 'x = None', ['literal', 'None']],
      ['sh', 'if true; then :; fi', ['keyword', 'if']],
      ['shell', 'echo $HOME', ['variable', '$HOME']],
      ['bash', '# note', ['comment', '# note']],
      ['zsh', 'export A=1', ['keyword', 'export']],
      ['patch', '+added', ['inserted', '+added']],
      ['diff', '-removed', ['deleted', '-removed']],
      ['golang', 'func main() {}', ['keyword', 'func']],
      ['rs', 'let mut v: Vec<u8>', ['keyword', 'let']],
      ['yml', 'name: arbor', ['property', 'name']],
      ['html', '<p class="x">', ['tag', '<p']],
      ['xml', '<a href="y"/>', ['attr', 'href']],
      ['css', 'a { color: red }', ['property', 'color']],
      ['sql', 'select 1 from t', ['keyword', 'select']],
      ['SQL', 'SELECT 1', ['keyword', 'SELECT']],
      ['c', '#include <stdio.h>', ['meta', '#include <stdio.h>']],
      ['h', 'int x;', ['type', 'int']],
      ['cpp', 'template <typename T>', ['keyword', 'template']],
      ['c++', 'auto p = nullptr;', ['literal', 'nullptr']],
      ['java', '@Override public void run()', ['meta', '@Override']],
      ['language-ts', 'type A = 1', ['keyword', 'type']]
    ]
    for (const [lang, code, first] of cases) {
      expect(languageOf(lang), lang).toBeDefined()
      expect(kinds(code, lang), `${lang}: ${code}`).toContainEqual(first)
    }
  })

  it('leaves unknown, missing and over-long code plain', () => {
    expect(languageOf('brainfuck')).toBeUndefined()
    expect(highlight('+++[>++<-]', 'brainfuck')).toBeUndefined()
    expect(highlight('const a = 1', '')).toBeUndefined()
    expect(highlight('const a = 1', undefined)).toBeUndefined()
    expect(languageOf('constructor')).toBeUndefined() // no prototype lookups
    expect(highlight('x'.repeat(MAX_HIGHLIGHT_CHARS + 1), 'ts')).toBeUndefined()
  })

  it('keeps a quote in an English comment or a shell word from colouring the following lines', () => {
    expect(kinds("echo it's done\necho next", 'bash').filter(([k]) => k === 'string')).toEqual([['string', "'s done"]])
    expect(kinds("echo a#b\n# real comment", 'bash')).toContainEqual(['comment', '# real comment'])
    expect(kinds("echo a#b", 'bash').some(([k]) => k === 'comment')).toBe(false)
    expect(kinds("fn f<'a>(x: &'a str) -> char { 'c' }", 'rust')).toEqual(expect.arrayContaining([['variable', "'a"], ['string', "'c'"], ['type', 'str']]))
  })

  it('colours selectors and declarations in CSS by their place', () => {
    expect(kinds('.card:hover, #main > p { color: #fff; margin: -1.5em !important }', 'css')).toEqual([
      ['type', '.card'], ['keyword', ':hover'], ['attr', '#main'], ['tag', 'p'],
      ['property', 'color'], ['number', '#fff'], ['property', 'margin'], ['number', '-1.5em'], ['keyword', '!important']
    ])
  })

  it('highlights script bodies inside HTML as JavaScript', () => {
    expect(kinds('<script>let a = "<b>"</script>', 'html')).toEqual([
      ['tag', '<script>'], ['keyword', 'let'], ['string', '"<b>"'], ['tag', '</script>']
    ])
  })

  it('gives tokens that join back to exactly the code, for any input in every language (property)', () => {
    const langs = ['ts', 'js', 'json', 'py', 'bash', 'diff', 'go', 'rust', 'yaml', 'html', 'css', 'sql', 'c', 'cpp', 'java']
    const alphabet = fc.constantFrom(...'ab1 \n\t"\'`#/*-+<>{}()[]:;$@!&=.,\\r_éx'.split(''), '/*', '*/', '"""', '<!--', '-->', '${', 'r#"')
    fc.assert(fc.property(fc.array(alphabet, { maxLength: 80 }).map(a => a.join('')), fc.constantFrom(...langs), (code, lang) => {
      const tokens = highlight(code, lang) as Token[]
      expect(tokens.map(t => t.text).join('')).toBe(code)
      expect(tokens.every(t => t.text !== '')).toBe(true)
    }), { numRuns: 2000 })
  })

  it('stays linear on hostile input: the characters it reads double as the input doubles', () => {
    for (const unit of ['"\\', '/*', '<a ', '$', "'", '{', '<!--', '`${']) {
      for (const lang of ['ts', 'bash', 'html', 'css', 'yaml', 'rust', 'py', 'diff']) {
        expectLinear(`${lang} on ${JSON.stringify(unit)}…`, chars => {
          const code = unit.repeat(Math.ceil(chars / unit.length))
          const read = { n: 0 }
          const tokens = highlight(countedReads(code, read), lang) as Token[]
          // the same tokens as for the plain string (compared as JSON: a deep diff of thousands is slow)
          expect(JSON.stringify(tokens.map(t => ({ ...t, text: String(t.text) })))).toBe(JSON.stringify(highlight(code, lang)))
          return read.n
        }, [500, 1_000, 2_000])
      }
    }
  })

  it('its linearity check sees a lexer that rescans: a line end looked up at every character', () => {
    const rescanning = (code: string): number => {
      let i = 0
      while (i < code.length) { code.indexOf('\n', i); i++ }
      return i
    }
    expect(() => expectLinear('a rescanning lexer', chars => {
      const read = { n: 0 }
      rescanning(countedReads('$'.repeat(chars), read))
      return read.n
    }, [1_000, 2_000, 4_000])).toThrow(/a rescanning lexer/)
  })

  it('highlights every prefix of a streaming reply without breaking (partial fences, open strings)', () => {
    const reply = 'Here:\n```ts\nconst s = "a string\nlet t = `multi\nline` /* open\n```\nDone.'
    for (let n = 0; n <= reply.length; n++) {
      const blocks = parseMarkdown(reply.slice(0, n))
      for (const b of blocks) {
        if (b.t !== 'code') continue
        const tokens = highlight(b.text, b.lang)
        if (languageOf(b.lang) !== undefined) expect((tokens ?? []).map(t => t.text).join('')).toBe(b.text)
        expect(() => renderToStaticMarkup(createElement(Markdown, { text: reply.slice(0, n) }))).not.toThrow()
      }
    }
    // mid-stream the fence has no closing line yet: the block runs to the end, still highlighted
    const partial = renderToStaticMarkup(createElement(Markdown, { text: reply.slice(0, reply.indexOf('let t')) }))
    expect(partial).toContain('<code class="hl language-typescript"><span class="tok-keyword">const</span>')
  })
})

describe('Markdown rendering of code', () => {
  it('renders highlighted tokens as spans with a Copy button', () => {
    const html = renderToStaticMarkup(createElement(Markdown, { text: '```python\nprint("hi")  # greet\n```' }))
    expect(html).toContain('<span class="tok-function">print</span>')
    expect(html).toContain('<span class="tok-string">&quot;hi&quot;</span>')
    expect(html).toContain('<span class="tok-comment"># greet</span>')
    expect(html).toMatch(/<button[^>]*aria-label="Copy python code"[^>]*>Copy<\/button>/)
    expect(html).toContain('<pre tabindex="0" role="group" aria-label="python code">')
  })

  it('escapes HTML in code, highlighted or not: nothing the model writes becomes markup', () => {
    const evil = '<img src=x onerror=alert(1)><script>alert(2)</script>'
    for (const lang of ['html', 'js', 'nosuchlang', '']) {
      const html = renderToStaticMarkup(createElement(Markdown, { text: '```' + lang + '\n' + evil + '\n```\n\n' + evil }))
      expect(html, lang).not.toMatch(/<img|<script/i)
      expect(html, lang).toContain('&lt;script&gt;')
    }
  })

  it('shows unknown languages as plain text under their own label', () => {
    const html = renderToStaticMarkup(createElement(Markdown, { text: '```cobol\nDISPLAY "X".\n```' }))
    expect(html).toContain('<span class="code-lang">cobol</span>')
    expect(html).toContain('<code>DISPLAY &quot;X&quot;.</code>')
    expect(html).not.toContain('tok-')
  })
})
