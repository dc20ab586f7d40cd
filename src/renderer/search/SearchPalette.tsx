// Ctrl+K (Cmd+K): search every conversation and branch. Results as one types (newest first);
// arrows move, Enter or a click opens the entry in its branch, Escape closes.
import { useEffect, useRef, useState, type JSX, type KeyboardEvent } from 'react'
import type { SearchHitDto } from '../../shared/api/api'
import { errorText, useApi } from '../api-context'

/** how long typing may pause before the node is asked */
const QUERY_DELAY_MS = 120

export function SearchPalette ({ onPick, onClose }: { onPick: (hit: SearchHitDto) => void; onClose: () => void }): JSX.Element {
  const client = useApi()
  const [text, setText] = useState('')
  const [hits, setHits] = useState<readonly SearchHitDto[]>([])
  const [error, setError] = useState<string | undefined>()
  const [active, setActive] = useState(0)
  const inputRef = useRef<HTMLInputElement>(null)

  useEffect(() => { inputRef.current?.focus() }, [])

  useEffect(() => {
    if (text.trim() === '') { setHits([]); setError(undefined); return }
    let live = true
    const timer = setTimeout(() => {
      client.call('search.query', { text, limit: 50 }).then(
        r => { if (live) { setHits(r.hits); setActive(0); setError(undefined) } },
        err => { if (live) setError(errorText(err)) }
      )
    }, QUERY_DELAY_MS)
    return () => { live = false; clearTimeout(timer) }
  }, [client, text])

  const onKey = (e: KeyboardEvent): void => {
    if (e.key === 'Escape') { e.preventDefault(); onClose() } else if (e.key === 'ArrowDown') { e.preventDefault(); setActive(a => Math.min(hits.length - 1, a + 1)) } else if (e.key === 'ArrowUp') { e.preventDefault(); setActive(a => Math.max(0, a - 1)) } else if (e.key === 'Enter') {
      e.preventDefault()
      const hit = hits[active]
      if (hit !== undefined) onPick(hit)
    }
  }

  return (
    <div className="palette-backdrop" onMouseDown={e => { if (e.target === e.currentTarget) onClose() }}>
      <div className="palette" role="dialog" aria-modal="true" aria-label="Search every conversation" onKeyDown={onKey}>
        <input
          ref={inputRef}
          type="search"
          aria-label="Search"
          placeholder="Search every conversation and branch…"
          value={text}
          onChange={e => setText(e.target.value)}
          role="combobox"
          aria-expanded={hits.length > 0}
          aria-controls="search-results"
          aria-activedescendant={hits[active] !== undefined ? `search-hit-${active}` : undefined}
        />
        {error !== undefined ? <p className="palette-note" role="alert">{error}</p> : null}
        {error === undefined && text.trim() !== '' && hits.length === 0 ? <p className="palette-note" role="status">No entry matches.</p> : null}
        <ul id="search-results" role="listbox" aria-label="Search results" className="palette-results">
          {hits.map((h, i) => (
            <li
              key={`${h.conversation}:${h.entry}`}
              id={`search-hit-${i}`}
              role="option"
              aria-selected={i === active}
              className={i === active ? 'palette-hit active' : 'palette-hit'}
              onMouseEnter={() => setActive(i)}
              onClick={() => onPick(h)}
            >
              <span className="palette-title">{h.title || 'Untitled'}</span>
              <span className="palette-snippet"><Snippet hit={h} /></span>
            </li>
          ))}
        </ul>
      </div>
    </div>
  )
}

/** The excerpt with the matching word marked (text only: React escapes it). */
function Snippet ({ hit }: { hit: SearchHitDto }): JSX.Element {
  if (hit.match === null) return <>{hit.snippet}</>
  const [a, b] = hit.match
  return <>{hit.snippet.slice(0, a)}<mark>{hit.snippet.slice(a, b)}</mark>{hit.snippet.slice(b)}</>
}
