import { useEffect, useId, useMemo, useRef, useState, type FormEvent, type JSX, type KeyboardEvent } from 'react'
import type { ApiMethods, ConversationSummaryDto, NetStateDto } from '../../shared/api/api'
import { errorText, useApi } from '../api-context'
import { formatWhen, placesText } from '../common/format'
import { filterConversations, sortConversations } from './conversation-list'
import { netText } from '../devices/net-state'
import { ImportSession } from './ImportSession'

interface SidebarProps {
  list: readonly ConversationSummaryDto[] | null
  error: string | undefined
  activeId: string | undefined
  onSelect: (id: string) => void
  onCreated: (id: string) => void
  onRetry: () => void
  defaultCwd: string | undefined
  connected: boolean
  node: ApiMethods['hello']['result'] | undefined
  /** the node's network (undefined until known) */
  net?: NetStateDto | undefined
  /** which screen the main area shows; the footer buttons switch to Devices and Settings */
  view?: 'chat' | 'devices' | 'settings'
  onView?: (view: 'chat' | 'devices' | 'settings') => void
}

export function Sidebar (props: SidebarProps): JSX.Element {
  const { list, error, activeId, onSelect, onCreated, onRetry, defaultCwd, connected, node, net, view = 'chat', onView } = props
  const [query, setQuery] = useState('')
  const [creating, setCreating] = useState(false)
  const searchRef = useRef<HTMLInputElement>(null)
  const newButtonRef = useRef<HTMLButtonElement>(null)
  const listRef = useRef<HTMLUListElement>(null)
  const [now, setNow] = useState(() => Date.now())

  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 30_000)
    return () => clearInterval(t)
  }, [])


  const shown = useMemo(() => list === null ? [] : filterConversations(sortConversations(list), query), [list, query])

  const focusItem = (i: number): void => {
    const buttons = listRef.current?.querySelectorAll<HTMLButtonElement>('button.conv')
    if (buttons === undefined || buttons.length === 0) return
    buttons[Math.max(0, Math.min(buttons.length - 1, i))]?.focus()
  }

  const onListKey = (e: KeyboardEvent<HTMLUListElement>): void => {
    const buttons = [...(listRef.current?.querySelectorAll<HTMLButtonElement>('button.conv') ?? [])]
    const i = buttons.indexOf(document.activeElement as HTMLButtonElement)
    if (i === -1) return
    if (e.key === 'ArrowDown') { e.preventDefault(); focusItem(i + 1) }
    else if (e.key === 'ArrowUp') {
      e.preventDefault()
      if (i === 0) searchRef.current?.focus()
      else focusItem(i - 1)
    } else if (e.key === 'Home') { e.preventDefault(); focusItem(0) }
    else if (e.key === 'End') { e.preventDefault(); focusItem(buttons.length - 1) }
  }

  const onSearchKey = (e: KeyboardEvent<HTMLInputElement>): void => {
    if (e.key === 'ArrowDown') { e.preventDefault(); focusItem(0) }
    else if (e.key === 'Enter') {
      const first = shown[0]
      if (first !== undefined) { e.preventDefault(); onSelect(first.id) }
    } else if (e.key === 'Escape' && query !== '') { e.preventDefault(); setQuery('') }
  }

  const closeForm = (): void => {
    setCreating(false)
    requestAnimationFrame(() => newButtonRef.current?.focus())
  }

  return (
    <aside className="sidebar" aria-label="Conversations">
      <header className="sidebar-head">
        <h1 className="brand">Arbor</h1>
        <button
          ref={newButtonRef}
          type="button"
          className="primary"
          onClick={() => setCreating(c => !c)}
          aria-expanded={creating}
          aria-controls="new-conversation"
          disabled={!connected}
        >
          New conversation
        </button>
      </header>
      {creating
        ? <NewConversationForm defaultCwd={defaultCwd} onCancel={closeForm} onCreated={id => { setCreating(false); onCreated(id) }} />
        : null}
      <ImportSession disabled={!connected} onImported={onCreated} />
      <div className="search">
        <input
          ref={searchRef}
          type="search"
          placeholder="Filter titles (Ctrl+K searches all)"
          aria-label="Search conversations by title"
          aria-controls="conversation-list"
          value={query}
          onChange={e => setQuery(e.target.value)}
          onKeyDown={onSearchKey}
        />
      </div>
      <nav className="conv-nav" aria-label="Conversation list">
        {error !== undefined
          ? <div className="list-msg" role="alert">Could not load conversations: {error} <button type="button" onClick={onRetry}>Retry</button></div>
          : list === null
            ? <div className="list-msg">Loading…</div>
            : shown.length === 0
              ? <div className="list-msg">{query.trim() !== '' ? 'No titles match.' : 'No conversations yet.'}</div>
              : null}
        <ul id="conversation-list" ref={listRef} onKeyDown={onListKey}>
          {shown.map(c => (
            <li key={c.id}>
              <button
                type="button"
                className="conv"
                aria-current={c.id === activeId ? 'page' : undefined}
                onClick={() => onSelect(c.id)}
                title={c.title || 'Untitled'}
              >
                <span className="conv-title">{c.title || 'Untitled'}</span>
                <span className="conv-meta">
                  {c.running ? <RunningBadge agents={c.agents} /> : null}
                  {c.heads > 1 ? <span className="badge" aria-label={`${c.heads} branches`}>{c.heads} branches</span> : null}
                  <time dateTime={new Date(c.updatedAt).toISOString()}>{formatWhen(c.updatedAt, now)}</time>
                </span>
              </button>
            </li>
          ))}
        </ul>
      </nav>
      <footer className="sidebar-foot">
        {onView !== undefined
          ? (
            <div className="form-actions screens" role="group" aria-label="Screens">
              <button type="button" aria-pressed={view === 'devices'} onClick={() => onView(view === 'devices' ? 'chat' : 'devices')}>Devices</button>
              <button type="button" aria-pressed={view === 'settings'} onClick={() => onView(view === 'settings' ? 'chat' : 'settings')}>Settings</button>
            </div>
            )
          : null}
        {connected && net !== undefined
          ? <div className={net.online ? 'net-state online' : 'net-state offline'} role="status" aria-label="Network">{netText(net)}</div>
          : null}
        {node !== undefined ? <span title={node.device}>{node.name} · v{node.version}</span> : <span>not connected</span>}
      </footer>
    </aside>
  )
}

/** "running", or where when it is not (only) here: "running on laptop". */
function RunningBadge ({ agents }: { agents: ConversationSummaryDto['agents'] | undefined }): JSX.Element {
  const remote = (agents ?? []).some(a => !a.self)
  const where = remote ? ` ${placesText(agents ?? [])}` : ''
  return <span className="badge running" aria-label={`agent running${where}`}>running{where}</span>
}

function NewConversationForm ({ defaultCwd, onCancel, onCreated }: { defaultCwd: string | undefined; onCancel: () => void; onCreated: (id: string) => void }): JSX.Element {
  const client = useApi()
  const [title, setTitle] = useState('')
  const [cwd, setCwd] = useState('')
  const [model, setModel] = useState('')
  const [autoRevival, setAutoRevival] = useState(false)
  const revivalHintId = useId()
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>()
  const titleId = useId()
  const cwdId = useId()
  const modelId = useId()
  const titleRef = useRef<HTMLInputElement>(null)
  useEffect(() => { titleRef.current?.focus() }, [])

  const submit = (e: FormEvent): void => {
    e.preventDefault()
    if (busy) return
    setBusy(true)
    setError(undefined)
    const params: ApiMethods['conversation.create']['params'] = {}
    if (title.trim() !== '') params.title = title.trim()
    if (cwd.trim() !== '') params.cwd = cwd.trim()
    if (model.trim() !== '') params.model = model.trim()
    if (autoRevival) params.autoRevival = true
    client.call('conversation.create', params).then(
      r => onCreated(r.id),
      err => { setBusy(false); setError(errorText(err)) }
    )
  }

  return (
    <form
      id="new-conversation"
      className="new-form"
      aria-label="New conversation"
      onSubmit={submit}
      onKeyDown={e => { if (e.key === 'Escape') { e.preventDefault(); onCancel() } }}
    >
      <label htmlFor={titleId}>Title</label>
      <input id={titleId} ref={titleRef} value={title} onChange={e => setTitle(e.target.value)} placeholder="Untitled" maxLength={1000} />
      <label htmlFor={cwdId}>Working directory</label>
      <input
        id={cwdId}
        value={cwd}
        onChange={e => setCwd(e.target.value)}
        placeholder={defaultCwd ?? 'the node’s default'}
        spellCheck={false}
        autoCapitalize="off"
        autoCorrect="off"
        className="mono"
      />
      <label htmlFor={modelId}>Model</label>
      <input
        id={modelId}
        value={model}
        onChange={e => setModel(e.target.value)}
        placeholder="as in Settings"
        spellCheck={false}
        autoCapitalize="off"
        autoCorrect="off"
        maxLength={200}
        className="mono"
      />
      <label className="check-label new-revival">
        <input type="checkbox" checked={autoRevival} onChange={e => setAutoRevival(e.target.checked)} aria-describedby={revivalHintId} />
        Auto-revival
      </label>
      <span id={revivalHintId} className="field-note">If the device running its agent stops responding, another of your devices takes it over.</span>
      {error !== undefined ? <p className="form-error" role="alert">{error}</p> : null}
      <div className="form-actions">
        <button type="button" onClick={onCancel}>Cancel</button>
        <button type="submit" className="primary" disabled={busy}>{busy ? 'Creating…' : 'Create'}</button>
      </div>
    </form>
  )
}
