import { memo, useMemo, useState, type JSX, type ReactNode } from 'react'
import { highlight, languageOf } from './highlight'
import { parseMarkdown, type Block, type Inline } from './markdown'

/** Model text as Markdown. Every string goes through React as text: nothing is HTML. */
export const Markdown = memo(function Markdown ({ text }: { text: string }): JSX.Element {
  const blocks = useMemo(() => parseMarkdown(text), [text])
  return <div className="md">{renderBlocks(blocks)}</div>
})

function renderBlocks (blocks: readonly Block[]): ReactNode[] {
  return blocks.map((b, i) => renderBlock(b, i))
}

function renderBlock (b: Block, key: number): ReactNode {
  switch (b.t) {
    case 'p': return <p key={key}>{renderInlines(b.inlines)}</p>
    case 'heading': {
      // message headings sit below the page's own (h1 app, h2 conversation)
      const Tag = (['h3', 'h4', 'h5', 'h6', 'h6', 'h6'] as const)[b.level - 1] ?? 'h6'
      return <Tag key={key} className={`md-h${b.level}`}>{renderInlines(b.inlines)}</Tag>
    }
    case 'code': return <CodeBlock key={key} lang={b.lang} text={b.text} />
    case 'list': {
      const items = b.items.map((item, i) => {
        const only = item.length === 1 ? item[0] : undefined
        return <li key={i}>{only?.t === 'p' ? renderInlines(only.inlines) : renderBlocks(item)}</li>
      })
      return b.ordered ? <ol key={key} start={b.start}>{items}</ol> : <ul key={key}>{items}</ul>
    }
    case 'quote': return <blockquote key={key}>{renderBlocks(b.blocks)}</blockquote>
    case 'hr': return <hr key={key} />
  }
}

function renderInlines (nodes: readonly Inline[]): ReactNode[] {
  return nodes.map((n, i) => {
    switch (n.t) {
      case 'text': return n.text
      case 'code': return <code key={i}>{n.text}</code>
      case 'strong': return <strong key={i}>{renderInlines(n.children)}</strong>
      case 'em': return <em key={i}>{renderInlines(n.children)}</em>
      case 'link': return <a key={i} href={n.href} target="_blank" rel="noopener noreferrer">{renderInlines(n.children)}</a>
      case 'break': return <br key={i} />
    }
    return null
  })
}

export function CodeBlock ({ lang, text }: { lang: string; text: string }): JSX.Element {
  const id = languageOf(lang)
  // tokens are text with a class: React escapes them like any other string
  const tokens = useMemo(() => highlight(text, id), [text, id])
  return (
    <div className="code-block">
      <div className="code-head">
        <span className="code-lang">{lang || 'text'}</span>
        <CopyButton text={text} label={lang ? `Copy ${lang} code` : 'Copy code'} />
      </div>
      {/* focusable so a keyboard can scroll it; a group, since a name on a bare <pre> is ignored */}
      <pre tabIndex={0} role="group" aria-label={lang ? `${lang} code` : 'code'}>
        <code className={id !== undefined ? `hl language-${id}` : undefined}>
          {tokens === undefined ? text : tokens.map((t, i) => t.kind === undefined ? t.text : <span key={i} className={`tok-${t.kind}`}>{t.text}</span>)}
        </code>
      </pre>
    </div>
  )
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
