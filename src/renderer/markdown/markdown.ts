// A deliberately small Markdown reader for model output: text in, plain data out.
// Nothing here produces HTML; the React renderer turns these blocks into elements, so
// model text is escaped by construction. Unsupported syntax (tables, HTML) stays text.

export type Inline =
  | { t: 'text'; text: string }
  | { t: 'code'; text: string }
  | { t: 'strong'; children: Inline[] }
  | { t: 'em'; children: Inline[] }
  | { t: 'link'; href: string; children: Inline[] }
  | { t: 'break' }

export type Block =
  | { t: 'p'; inlines: Inline[] }
  | { t: 'heading'; level: 1 | 2 | 3 | 4 | 5 | 6; inlines: Inline[] }
  | { t: 'code'; lang: string; text: string }
  | { t: 'list'; ordered: boolean; start: number; items: Block[][] }
  | { t: 'quote'; blocks: Block[] }
  | { t: 'hr' }

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/
const HR = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/
const BULLET = /^( {0,3})([-*+])([ \t]+)(.*)$/
const ORDERED = /^( {0,3})(\d{1,9})([.)])([ \t]+)(.*)$/
const QUOTE = /^ {0,3}> ?(.*)$/
const MAX_DEPTH = 8

const blank = (line: string): boolean => line.trim() === ''

/** Parses Markdown text into blocks. Total: any input gives some blocks, never throws. */
export function parseMarkdown (text: string): Block[] {
  return parseBlocks(text.replace(/\r\n?/g, '\n').split('\n'), 0)
}

interface ListMarker { ordered: boolean; start: number; bullet: string; width: number; rest: string }

function listMarker (line: string): ListMarker | undefined {
  const b = BULLET.exec(line)
  if (b !== null) {
    const [, indent = '', bullet = '', gap = '', rest = ''] = b
    // "- - -" and "* * *" are rules, not lists
    if (HR.test(line)) return undefined
    return { ordered: false, start: 1, bullet, width: indent.length + 1 + Math.min(gap.length, 4), rest }
  }
  const o = ORDERED.exec(line)
  if (o !== null) {
    const [, indent = '', num = '1', delim = '.', gap = '', rest = ''] = o
    return { ordered: true, start: Number(num), bullet: delim, width: indent.length + num.length + 1 + Math.min(gap.length, 4), rest }
  }
  return undefined
}

function startsBlock (line: string): boolean {
  return FENCE.test(line) || HEADING.test(line) || HR.test(line) || QUOTE.test(line) || listMarker(line) !== undefined
}

function parseBlocks (lines: string[], depth: number): Block[] {
  const blocks: Block[] = []
  let i = 0
  while (i < lines.length) {
    const line = lines[i] as string
    if (blank(line)) { i++; continue }

    const fence = FENCE.exec(line)
    if (fence !== null) {
      const mark = fence[1] as string
      const lang = fence[2] ?? ''
      const body: string[] = []
      i++
      while (i < lines.length) {
        const l = lines[i] as string
        const trimmed = l.trim()
        if (trimmed.startsWith(mark) && trimmed.split('').every(c => c === mark[0])) { i++; break }
        body.push(l)
        i++
      }
      blocks.push({ t: 'code', lang, text: body.join('\n') })
      continue
    }

    const heading = HEADING.exec(line)
    if (heading !== null) {
      const level = (heading[1] as string).length as 1 | 2 | 3 | 4 | 5 | 6
      blocks.push({ t: 'heading', level, inlines: parseInline(heading[2] ?? '') })
      i++
      continue
    }

    if (HR.test(line)) { blocks.push({ t: 'hr' }); i++; continue }

    if (depth < MAX_DEPTH && QUOTE.test(line)) {
      const inner: string[] = []
      while (i < lines.length) {
        const q = QUOTE.exec(lines[i] as string)
        if (q === null) break
        inner.push(q[1] ?? '')
        i++
      }
      blocks.push({ t: 'quote', blocks: parseBlocks(inner, depth + 1) })
      continue
    }

    const marker = depth < MAX_DEPTH ? listMarker(line) : undefined
    if (marker !== undefined) {
      const items: Block[][] = []
      let m: ListMarker | undefined = marker
      while (m !== undefined && m.ordered === marker.ordered && m.bullet === marker.bullet) {
        const itemLines = [m.rest]
        i++
        // continuation: indented lines, and blank lines followed by indented ones
        while (i < lines.length) {
          const l = lines[i] as string
          if (blank(l)) {
            const next = lines[i + 1]
            if (next !== undefined && !blank(next) && indentOf(next) >= m.width) { itemLines.push(''); i++; continue }
            break
          }
          if (indentOf(l) >= m.width) { itemLines.push(l.slice(Math.min(m.width, indentOf(l)))); i++; continue }
          // a lazy continuation of the item's paragraph
          if (!startsBlock(l) && !blank(itemLines[itemLines.length - 1] as string)) { itemLines.push(l); i++; continue }
          break
        }
        items.push(parseBlocks(itemLines, depth + 1))
        // a blank line may separate items of one list
        let j = i
        while (j < lines.length && blank(lines[j] as string)) j++
        const following = lines[j]
        m = following === undefined ? undefined : listMarker(following)
        if (m !== undefined && m.ordered === marker.ordered && m.bullet === marker.bullet) i = j
      }
      blocks.push({ t: 'list', ordered: marker.ordered, start: marker.start, items })
      continue
    }

    const para: string[] = []
    while (i < lines.length) {
      const l = lines[i] as string
      if (blank(l) || (para.length > 0 && startsBlock(l))) break
      para.push(l.trim())
      i++
    }
    blocks.push({ t: 'p', inlines: parseInline(para.join('\n')) })
  }
  return blocks
}

function indentOf (line: string): number {
  let n = 0
  for (const c of line) {
    if (c === ' ') n++
    else if (c === '\t') n += 4
    else break
  }
  return n
}

/** Only these link targets become links; anything else stays text. */
export function safeHref (href: string): string | undefined {
  const h = href.trim()
  return /^(https?:\/\/|mailto:)[^\s<>"]+$/i.test(h) ? h : undefined
}

const AUTOLINK = /^https?:\/\/[^\s<>"'`]*[^\s<>"'`.,;:!?)\]}]/

/** Inline syntax: `code`, **strong**, *em* / _em_, [text](url), bare http(s) URLs, line breaks. */
export function parseInline (text: string, depth = 0): Inline[] {
  const out: Inline[] = []
  let buf = ''
  const flush = (): void => {
    if (buf !== '') { out.push({ t: 'text', text: buf }); buf = '' }
  }
  const push = (node: Inline): void => { flush(); out.push(node) }
  let i = 0
  while (i < text.length) {
    const c = text[i] as string

    if (c === '\\' && i + 1 < text.length && /[\\`*_[\]()#+\-.!>~|]/.test(text[i + 1] as string)) {
      buf += text[i + 1]
      i += 2
      continue
    }

    if (c === '\n') { push({ t: 'break' }); i++; continue }

    if (c === '`') {
      let run = 1
      while (text[i + run] === '`') run++
      const ticks = '`'.repeat(run)
      const end = findClosingTicks(text, i + run, ticks)
      if (end !== -1) {
        let code = text.slice(i + run, end).replace(/\n/g, ' ')
        if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ') && code.trim() !== '') code = code.slice(1, -1)
        push({ t: 'code', text: code })
        i = end + run
        continue
      }
      buf += ticks
      i += run
      continue
    }

    if (depth < MAX_DEPTH && (c === '*' || c === '_')) {
      const double = text[i + 1] === c
      const delim = double ? c + c : c
      const innerStart = i + delim.length
      // an opener must be followed by non-space; `_` inside words (snake_case) is text
      const leftOk = innerStart < text.length && !/\s/.test(text[innerStart] as string) &&
        (c === '*' || i === 0 || !/[\p{L}\p{N}]/u.test(text[i - 1] as string))
      if (leftOk) {
        const end = findCloser(text, innerStart, delim)
        if (end !== -1) {
          const children = parseInline(text.slice(innerStart, end), depth + 1)
          push(double ? { t: 'strong', children } : { t: 'em', children })
          i = end + delim.length
          continue
        }
      }
      buf += delim
      i += delim.length
      continue
    }

    if (c === '[' && depth < MAX_DEPTH) {
      const link = matchLink(text, i)
      if (link !== undefined) {
        const href = safeHref(link.href)
        const children = parseInline(link.label, depth + 1)
        if (href !== undefined) push({ t: 'link', href, children })
        else { flush(); out.push(...children) }
        i = link.end
        continue
      }
    }

    if ((c === 'h' || c === 'H') && (i === 0 || !/[\p{L}\p{N}]/u.test(text[i - 1] as string))) {
      const m = AUTOLINK.exec(text.slice(i, i + 2048))
      if (m !== null) {
        push({ t: 'link', href: m[0], children: [{ t: 'text', text: m[0] }] })
        i += m[0].length
        continue
      }
    }

    buf += c
    i++
  }
  flush()
  return out
}

function findClosingTicks (text: string, from: number, ticks: string): number {
  let i = text.indexOf(ticks, from)
  while (i !== -1) {
    // the closing run must be exactly as long as the opening one
    if (text[i + ticks.length] !== '`' && text[i - 1] !== '`') return i
    let j = i
    while (text[j] === '`') j++
    i = text.indexOf(ticks, j)
  }
  return -1
}

function findCloser (text: string, from: number, delim: string): number {
  let i = from
  while (i < text.length) {
    const c = text[i]
    if (c === '\\') { i += 2; continue }
    if (c === '`') {
      // skip code spans: emphasis does not close inside them
      let run = 1
      while (text[i + run] === '`') run++
      const end = findClosingTicks(text, i + run, '`'.repeat(run))
      i = end === -1 ? i + run : end + run
      continue
    }
    if (c === delim[0]) {
      let run = 1
      while (text[i + run] === c) run++
      const at = i + run - delim.length // the closer is the end of the run
      const before = text[at - 1]
      const after = text[i + run]
      const closes = run >= delim.length && (delim.length === 2 || run === 1) && at > from &&
        before !== undefined && !/\s/.test(before) &&
        (c === '*' || after === undefined || !/[\p{L}\p{N}]/u.test(after))
      if (closes) return at
      i += run
      continue
    }
    i++
  }
  return -1
}

function matchLink (text: string, open: number): { label: string; href: string; end: number } | undefined {
  let depth = 0
  let i = open
  for (; i < text.length; i++) {
    const c = text[i]
    if (c === '\\') { i++; continue }
    if (c === '[') depth++
    else if (c === ']' && --depth === 0) break
    else if (c === '\n' && text[i + 1] === '\n') return undefined
  }
  if (i >= text.length || text[i + 1] !== '(') return undefined
  // the destination ends at the ')' that balances its '(' (URLs may hold parentheses)
  let close = -1
  let parens = 0
  for (let j = i + 2; j < text.length; j++) {
    const c = text[j]
    if (c === '\n') return undefined
    if (c === '(') parens++
    else if (c === ')' && parens-- === 0) { close = j; break }
  }
  if (close === -1) return undefined
  const target = text.slice(i + 2, close).trim()
  // [text](url "title"): keep the url
  const href = target.split(/\s+/)[0] ?? ''
  return { label: text.slice(open + 1, i), href, end: close + 1 }
}

/** The plain text of inline nodes (for titles and tests). */
export function inlineText (nodes: Inline[]): string {
  return nodes.map(n => n.t === 'text' || n.t === 'code' ? n.text : n.t === 'break' ? '\n' : inlineText(n.children)).join('')
}
