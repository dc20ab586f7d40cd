// The renderer's Markdown: model text read by remark (CommonMark + GFM) into React elements, never HTML.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { createElement } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { highlight, languageOf, MAX_HIGHLIGHT_CHARS, type Token } from '../../../src/renderer/markdown/highlight'
import { safeHref } from '../../../src/renderer/markdown/safe-href'
import { Markdown } from '../../../src/renderer/markdown/Markdown'
import { expectLinear } from '../../helpers/linear-growth'

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

/** What the reply looks like as markup. */
const md = (text: string): string => renderToStaticMarkup(createElement(Markdown, { text }))

describe('Markdown: CommonMark and GFM as models write them', () => {
  it('renders a GFM table as a table, with its alignment', () => {
    const html = md('| Tool | Runs |\n| :--- | ---: |\n| bash | 3 |\n| read_file | 12 |')
    expect(html).toContain('<table>')
    expect(html).toMatch(/<th[^>]*>Tool<\/th>/)
    expect(html).toMatch(/<td[^>]*>read_file<\/td>/)
    expect(html).toMatch(/<td style="text-align:right"|<td align="right"/)
    expect(html).not.toContain('| Tool |')
  })

  it('renders task lists, strikethrough, autolinks, entities and indented code', () => {
    const html = md('- [x] done\n- [ ] to do\n\n~~gone~~ see https://example.com/x. AT&amp;T &copy;\n\n    indented code\n')
    expect(html).toMatch(/<li class="task-list-item"><input type="checkbox" disabled=""[^>]*checked=""\/>done<\/li>/)
    expect(html).toMatch(/<input type="checkbox" disabled=""[^>]*aria-label="not done"\/>to do/)
    expect(html).toContain('<del>gone</del>')
    expect(html).toContain('<a href="https://example.com/x" target="_blank" rel="noopener noreferrer">https://example.com/x</a>.')
    expect(html).toContain('AT&amp;T ©') // the entity read once: & shown, not &amp;
    expect(html).not.toContain('&amp;amp;')
    expect(html).toContain('<code>indented code</code>')
  })

  it('reads headings (below the page\'s own), emphasis, code spans, quotes and rules', () => {
    const html = md('# Title\n\n**bold** and *it*, `a *b* <i>`\n\n> quoted\n\n---')
    expect(html).toContain('<h3 class="md-h1">Title</h3>')
    expect(html).toContain('<strong>bold</strong> and <em>it</em>, <code>a *b* &lt;i&gt;</code>')
    expect(html).toContain('<blockquote>')
    expect(html).toContain('<hr/>')
    expect(md('snake_case_name and 2 * 3 * 4')).toContain('snake_case_name and 2 * 3 * 4')
  })

  it('keeps a single newline in a paragraph, for the line break the reply means (shown by white-space: pre-line)', () => {
    expect(md('first line\nsecond line')).toContain('first line\nsecond line')
  })

  it('runs an unclosed fence (a reply still streaming) to the end as code', () => {
    const html = md('look:\n```ts\nconst a = 1\nconst b')
    expect(html).toContain('aria-label="ts code"')
    expect(html.replace(/<[^>]+>/g, '')).toContain('const a = 1\nconst b')
  })

  it('links web and mail targets only; raw HTML shows as text; images are links, never loaded', () => {
    expect(md('[docs](https://example.com/a?b=1 "t")')).toContain('<a href="https://example.com/a?b=1"')
    for (const bad of ['javascript:alert(1)', 'data:text/html,hi', 'file:///etc/passwd', 'vbscript:x']) {
      const html = md(`[click](${bad})`)
      expect(html, bad).not.toMatch(/<a /)
      expect(html, bad).toContain('click')
    }
    const raw = md('<script>alert(1)</script>\n\ntext <img src=x onerror=alert(2)> <b>bold?</b>')
    expect(raw).not.toMatch(/<script|<img|<b>/i)
    expect(raw).toContain('&lt;script&gt;')
    const img = md('![the chart](https://evil.example/c.png?data=secret)')
    expect(img).not.toMatch(/<img/i)
    expect(img).toContain('<a class="md-image" href="https://evil.example/c.png?data=secret"')
    expect(img).toContain('[image: the chart]')
  })

  it('never throws, and keeps the words of plain text (property)', () => {
    fc.assert(fc.property(fc.string({ maxLength: 300 }), s => {
      expect(typeof md(s)).toBe('string')
    }), { numRuns: 300 })
    fc.assert(fc.property(fc.stringMatching(/^[a-z]{1,10}( [a-z]{1,10}){0,5}$/), s => {
      expect(md(s)).toBe(`<div class="md"><p>${s}</p></div>`)
    }))
  })

  it('keeps ordinary nesting formatted', () => {
    const html = md('> a\n> > b\n\n- one\n  - two\n    - three')
    expect(html.match(/<blockquote>/g)).toHaveLength(2)
    expect(html.match(/<ul>/g)).toHaveLength(3)
  })

  it('shows nesting no reply means (thousands of quotes or list items) as plain text, at once and losing nothing', () => {
    for (const deep of ['> '.repeat(5000) + 'x', '- '.repeat(5000) + 'x', '*'.repeat(2000) + 'x' + '*'.repeat(2000), '['.repeat(5000) + 'x' + ']'.repeat(5000)]) {
      let html = ''
      expect(() => { html = md(deep) }).not.toThrow()
      expect(html.replace(/<[^>]+>/g, '')).toContain('x')
    }
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
    const code = reply.slice(reply.indexOf('const'), reply.indexOf('\n```\nDone'))
    for (let n = 0; n <= code.length; n++) {
      const tokens = highlight(code.slice(0, n), 'ts')
      expect((tokens ?? []).map(t => t.text).join('')).toBe(code.slice(0, n))
    }
    for (let n = 0; n <= reply.length; n++) expect(() => md(reply.slice(0, n))).not.toThrow()
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
