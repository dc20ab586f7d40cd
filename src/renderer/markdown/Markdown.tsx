// Model text as Markdown, read by a well-kept CommonMark/GFM lexer (marked: tables, task lists,
// strikethrough, autolinks, entities, indented code) and turned into React elements here, token
// by token: no HTML string is ever built from model output. Raw HTML in the text shows as text,
// link targets go through safeHref, and images are links the reader may open, never loaded by
// themselves (a remote image in a reply a prompt injection wrote would carry the conversation
// out in its URL). marked over remark: ~9x faster; a streaming reply's last blocks are read again per token.
import { Fragment, memo, useMemo, useRef, useState, type JSX, type ReactNode } from 'react'
import type { Token, Tokens } from 'marked'
import { decodeHTML } from 'entities'
import { highlight, languageOf, type Token as CodeToken } from './highlight'
import { lexCached, lexStreaming, type StreamLex } from './markdown-lex'
import { safeHref } from './safe-href'

/** A finished text (a recorded message): lexed once, its tokens cached across mounts (markdown-lex.ts). */
export const Markdown = memo(function Markdown ({ text }: { text: string }): JSX.Element {
  const content = useMemo(() => readSafely(text, () => blocks(lexCached(text))), [text])
  return <div className="md">{content}</div>
})

/**
 * A text being streamed: per token only its last blocks are lexed again and drawn again; the
 * settled blocks before them keep their token objects, so their memoised elements are kept.
 */
export function StreamingMarkdown ({ text }: { text: string }): JSX.Element {
  const last = useRef<StreamLex | undefined>(undefined)
  const content = useMemo(() => readSafely(text, () => {
    const lex = lexStreaming(last.current, text)
    last.current = lex
    return lex.tokens.map((t, i) => <Block key={i} token={t} />)
  }), [text])
  return <div className="md">{content}</div>
}

const Block = memo(function Block ({ token }: { token: Token }): ReactNode {
  return block(token, 0)
})

/** The rendering, or the words unformatted where the nesting is too deep for the lexer. */
function readSafely (text: string, render: () => ReactNode): ReactNode {
  // the lexer slows down past a few hundred nested containers; no reply means that many
  if (nestedTooDeep(text)) return <p className="md-plain">{text}</p>
  try {
    return render()
  } catch (err) {
    // nesting deeper than the stack: the words, unformatted
    if (err instanceof RangeError) return <p className="md-plain">{text}</p>
    throw err
  }
}

/** How many quote and list markers may open one line before the text is shown unformatted. */
export const MAX_NESTING = 16
const CONTAINER = /^ {0,3}(?:>|[-*+](?=[ \t])|\d{1,9}[.)](?=[ \t]))[ \t]?/

/** Whether a line of `text` opens more than MAX_NESTING quotes and list items (linear in the text). */
export function nestedTooDeep (text: string): boolean {
  for (const line of text.split('\n')) {
    let rest = line
    let depth = 0
    for (let m = CONTAINER.exec(rest); m !== null; m = CONTAINER.exec(rest)) {
      if (++depth > MAX_NESTING) return true
      rest = rest.slice(m[0].length)
    }
  }
  return false
}

const HEADINGS = ['h3', 'h4', 'h5', 'h6', 'h6', 'h6'] as const

function blocks (tokens: readonly Token[]): ReactNode[] {
  return tokens.map((t, i) => block(t, i))
}

function block (t: Token, key: number): ReactNode {
  const m = t as Tokens.Generic
  switch (m.type) {
    case 'space':
    case 'def':
      return null
    case 'paragraph': return <p key={key}>{inlines((t as Tokens.Paragraph).tokens)}</p>
    case 'heading': {
      const h = t as Tokens.Heading
      // message headings sit below the page's own (h1 app, h2 conversation)
      const Tag = HEADINGS[h.depth - 1] ?? 'h6'
      return <Tag key={key} className={`md-h${h.depth}`}>{inlines(h.tokens)}</Tag>
    }
    case 'code': {
      const c = t as Tokens.Code
      return <CodeBlock key={key} lang={(c.lang ?? '').split(/\s/)[0] ?? ''} text={c.text.replace(/\n+$/, '')} />
    }
    case 'blockquote': return <blockquote key={key}>{blocks((t as Tokens.Blockquote).tokens)}</blockquote>
    case 'hr': return <hr key={key} />
    case 'list': {
      const l = t as Tokens.List
      const items = l.items.map((item, i) => (
        <li key={i} className={item.task ? 'task-list-item' : undefined}>
          {item.task ? <input type="checkbox" checked={item.checked === true} disabled readOnly aria-label={item.checked === true ? 'done' : 'not done'} /> : null}
          {item.tokens.map((c, j) => c.type === 'text' ? <Fragment key={j}>{inlineOf(c as Tokens.Text)}</Fragment> : c.type === 'checkbox' ? null : block(c, j))}
        </li>
      ))
      return l.ordered ? <ol key={key} start={typeof l.start === 'number' ? l.start : undefined}>{items}</ol> : <ul key={key}>{items}</ul>
    }
    case 'table': {
      const tb = t as Tokens.Table
      const align = (a: Tokens.TableCell['align']): { textAlign: 'left' | 'right' | 'center' } | undefined => a === null ? undefined : { textAlign: a }
      // wide tables scroll inside the reply, not the page
      return (
        <div key={key} className="md-table">
          <table>
            <thead><tr>{tb.header.map((c, i) => <th key={i} style={align(c.align)}>{inlines(c.tokens)}</th>)}</tr></thead>
            <tbody>{tb.rows.map((r, i) => <tr key={i}>{r.map((c, j) => <td key={j} style={align(c.align)}>{inlines(c.tokens)}</td>)}</tr>)}</tbody>
          </table>
        </div>
      )
    }
    case 'html': return <p key={key} className="md-html">{(t as Tokens.HTML).text}</p>
    case 'text': return <p key={key}>{inlineOf(t as Tokens.Text)}</p>
    default: return <p key={key}>{m.raw}</p>
  }
}

function inlineOf (t: Tokens.Text): ReactNode {
  return t.tokens !== undefined ? inlines(t.tokens) : decodeHTML(t.text)
}

function inlines (tokens: readonly Token[]): ReactNode[] {
  return tokens.map((t, i) => inline(t, i))
}

function inline (t: Token, key: number): ReactNode {
  const m = t as Tokens.Generic
  switch (m.type) {
    // entities are read once here (AT&amp;T shows as AT&T); React escapes the result
    case 'text': return inlineOf(t as Tokens.Text)
    case 'escape': return (t as Tokens.Escape).text
    case 'strong': return <strong key={key}>{inlines((t as Tokens.Strong).tokens)}</strong>
    case 'em': return <em key={key}>{inlines((t as Tokens.Em).tokens)}</em>
    case 'del': return <del key={key}>{inlines((t as Tokens.Del).tokens)}</del>
    // a code span is literal: no entity is read in it
    case 'codespan': return <code key={key}>{(t as Tokens.Codespan).text}</code>
    case 'br': return <br key={key} />
    case 'link': {
      const l = t as Tokens.Link
      const href = safeHref(decodeHTML(l.href))
      if (href === undefined) return <span key={key} className="md-unsafe-link">{inlines(l.tokens)}</span>
      return <a key={key} href={href} target="_blank" rel="noopener noreferrer">{inlines(l.tokens)}</a>
    }
    case 'image': {
      const im = t as Tokens.Image
      const href = safeHref(decodeHTML(im.href))
      const label = `[image: ${im.text !== '' ? decodeHTML(im.text) : href ?? ''}]`
      return href === undefined ? <span key={key} className="md-image">{label}</span> : <a key={key} className="md-image" href={href} target="_blank" rel="noopener noreferrer">{label}</a>
    }
    // raw HTML is shown as the text it is
    case 'html': return (t as Tokens.Tag).text
    case 'checkbox': return <input key={key} type="checkbox" checked={(t as Tokens.Checkbox).checked} disabled readOnly />
    default: return m.raw
  }
}

export function CodeBlock ({ lang, text }: { lang: string; text: string }): JSX.Element {
  const id = languageOf(lang)
  // tokens are text with a class: React escapes them like any other string
  const tokens = useMemo(() => highlightCached(text, id), [text, id])
  return (
    <div className="code-block">
      <div className="code-head">
        <span className="code-lang">{lang || 'text'}</span>
        <CopyButton text={text} label={lang ? `Copy ${lang} code` : 'Copy code'} />
      </div>
      {/* focusable so a keyboard can scroll it; a group, since a name on a bare <pre> is ignored */}
      <pre tabIndex={0} role="group" aria-label={lang ? `${lang} code` : 'code'}>
        <code className={id !== undefined ? `hl language-${id}` : undefined}>
          {tokens === undefined ? text : tokens.map((t, i): ReactNode => t.kind === undefined ? t.text : <span key={i} className={`tok-${t.kind}`}>{t.text}</span>)}
        </code>
      </pre>
    </div>
  )
}

/** Highlighted code kept across mounts, as lexCached keeps tokens: a code block scrolled back is not read again. */
const HIGHLIGHT_CACHE_ENTRIES = 200
const highlighted = new Map<string, CodeToken[] | undefined>()
function highlightCached (text: string, lang: string | undefined): CodeToken[] | undefined {
  const key = `${lang ?? ''}\n${text}`
  if (highlighted.has(key)) {
    const hit = highlighted.get(key)
    highlighted.delete(key)
    highlighted.set(key, hit)
    return hit
  }
  const tokens = highlight(text, lang)
  highlighted.set(key, tokens)
  if (highlighted.size > HIGHLIGHT_CACHE_ENTRIES) highlighted.delete(highlighted.keys().next().value as string)
  return tokens
}

export function CopyButton ({ text, label }: { text: string; label: string }): JSX.Element {
  const [done, setDone] = useState<'idle' | 'copied' | 'failed'>('idle')
  const copy = (): void => {
    // clipboard is missing outside secure contexts: a rejection, not a throw
    Promise.resolve().then(() => navigator.clipboard.writeText(text)).then(
      () => setDone('copied'),
      () => setDone('failed')
    ).finally(() => setTimeout(() => setDone('idle'), 1500))
  }
  return (
    <button type="button" className="copy" onClick={copy} aria-label={label}>
      {done === 'copied' ? 'Copied' : done === 'failed' ? 'Copy failed' : 'Copy'}
    </button>
  )
}
