// The renderer's Markdown reader: model text becomes plain data (never HTML).
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { inlineText, parseInline, parseMarkdown, safeHref, type Block } from '../../src/renderer/markdown'

const text = (t: string) => ({ t: 'text' as const, text: t })

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
