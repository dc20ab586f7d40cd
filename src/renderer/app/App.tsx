import { useCallback, useEffect, useRef, useState, type JSX } from 'react'
import type { ArborBridge } from '../../shared/api/desktop-bridge'
import type { ApiEvent, ApiMethods, ConversationSummaryDto, SearchHitDto } from '../../shared/api/api'
import { errorText, useApi, useConnectionStatus } from '../api-context'
import { ChatView } from '../chat/ChatView'
import { ConnectionBanner } from './ConnectionBanner'
import { applyListEvent } from '../sidebar/conversation-list'
import { ConversationStore, OPEN_TAIL } from '../chat/conversation-store'
import { DevicesView } from '../devices/DevicesView'
import { useNetState } from '../devices/net-state'
import { SettingsView } from '../settings/SettingsView'
import { SearchPalette } from '../search/SearchPalette'
import { Sidebar } from '../sidebar/Sidebar'

declare global {
  interface Window {
    /** Present in the desktop app (preload); absent in a browser talking to `arbor serve`. */
    readonly arbor?: ArborBridge
  }
}

const ACTIVE_KEY = 'arbor.active'
const FIRST_RUN_KEY = 'arbor.firstRunSettingsShown'
type View = 'chat' | 'devices' | 'settings'

type Opened =
  | { state: 'none' }
  | { state: 'loading'; id: string }
  | { state: 'error'; id: string; error: string }
  | { state: 'open'; store: ConversationStore }

export function App ({ hasToken }: { hasToken: boolean }): JSX.Element {
  const client = useApi()
  const status = useConnectionStatus(client)
  const net = useNetState(client, status)
  const [list, setList] = useState<readonly ConversationSummaryDto[] | null>(null)
  const [listError, setListError] = useState<string | undefined>()
  const [activeId, setActiveId] = useState<string | undefined>(() => sessionStorage.getItem(ACTIVE_KEY) ?? undefined)
  const [opened, setOpened] = useState<Opened>({ state: 'none' })
  const [node, setNode] = useState<ApiMethods['hello']['result'] | undefined>()
  const [defaultCwd, setDefaultCwd] = useState<string | undefined>()
  const [view, setView] = useState<View>('chat')
  const [firstRun, setFirstRun] = useState(false)
  const [searching, setSearching] = useState(false)
  // the entry a search landed on: its conversation opens on its branch, scrolled to it
  const [landing, setLanding] = useState<{ conversation: string; entry: string; seq: number } | undefined>()

  // Events that arrive while a conversation is being opened are kept and applied after.
  const openRef = useRef<{ id: string; seq: number; buffer: ApiEvent[] } | undefined>(undefined)
  const storeRef = useRef<ConversationStore | undefined>(undefined)
  const listRefetch = useRef<ReturnType<typeof setTimeout> | undefined>(undefined)
  const openSeq = useRef(0)
  const listRef = useRef<readonly ConversationSummaryDto[] | null>(null)

  const refreshList = useCallback(() => {
    client.call('conversations.list', {}).then(
      l => { listRef.current = l; setList(l); setListError(undefined) },
      err => setListError(errorText(err))
    )
  }, [client])

  const openConversation = useCallback((id: string) => {
    const seq = ++openSeq.current
    openRef.current = { id, seq, buffer: [] }
    setOpened(prev => prev.state === 'open' && prev.store.id === id ? prev : { state: 'loading', id })
    // the end of the shown branch first; the rest when the view needs it (ConversationStore.loadAll)
    client.call('conversation.open', { id, tail: OPEN_TAIL }).then(dto => {
      if (openSeq.current !== seq) return
      const store = new ConversationStore(dto, { loadAll: () => client.call('conversation.open', { id }) })
      const pending = openRef.current?.seq === seq ? openRef.current.buffer : []
      openRef.current = undefined
      for (const ev of pending) store.apply(ev)
      storeRef.current = store
      setOpened({ state: 'open', store })
    }, err => {
      if (openSeq.current !== seq) return
      openRef.current = undefined
      setOpened({ state: 'error', id, error: errorText(err) })
    })
  }, [client])

  const select = useCallback((id: string | undefined) => {
    setView('chat')
    setActiveId(id)
    if (id === undefined) sessionStorage.removeItem(ACTIVE_KEY)
    else sessionStorage.setItem(ACTIVE_KEY, id)
  }, [])

  // Open the active conversation when it changes, and reload everything after (re)connecting:
  // events sent while we were away are lost, so start from the node's state again.
  useEffect(() => {
    if (status.state !== 'open') return
    if (activeId === undefined) {
      openSeq.current++
      openRef.current = undefined
      storeRef.current = undefined
      setOpened({ state: 'none' })
      return
    }
    openConversation(activeId)
  }, [activeId, status.opened, status.state, openConversation])

  useEffect(() => {
    if (status.state !== 'open') return
    refreshList()
    client.call('hello', {}).then(setNode, () => undefined)
    client.call('settings.get', {}).then(s => {
      setDefaultCwd(s.defaultCwd)
      // First run: no model set up yet; open Settings once and look for a local server.
      if (s.provider === 'openai' && s.baseURL === undefined && !s.apiKeySet && localStorage.getItem(FIRST_RUN_KEY) === null) {
        localStorage.setItem(FIRST_RUN_KEY, '1')
        setFirstRun(true)
        setView('settings')
      }
    }, () => undefined)
  }, [client, status.opened, status.state, refreshList])

  useEffect(() => client.onEvent(ev => {
    const opening = openRef.current
    if (opening !== undefined && 'conversation' in ev && ev.conversation === opening.id) opening.buffer.push(ev)
    else storeRef.current?.apply(ev)
    const prev = listRef.current
    if (prev === null) return
    const { list: next, unknown } = applyListEvent(prev, ev)
    if (next !== prev) { listRef.current = next; setList(next) }
    if (unknown && listRefetch.current === undefined) {
      // a conversation we have not seen (made elsewhere): fetch the list once things settle
      listRefetch.current = setTimeout(() => { listRefetch.current = undefined; refreshList() }, 300)
    }
  }), [client, refreshList])

  useEffect(() => () => clearTimeout(listRefetch.current), [])

  const onCreated = useCallback((id: string) => {
    refreshList()
    select(id)
  }, [refreshList, select])

  // Ctrl+K (Cmd+K) anywhere opens the search palette
  useEffect(() => {
    const onKey = (e: KeyboardEvent): void => {
      if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && e.key.toLowerCase() === 'k') {
        e.preventDefault()
        setSearching(true)
      }
    }
    window.addEventListener('keydown', onKey)
    return () => { window.removeEventListener('keydown', onKey) }
  }, [])

  const pickHit = useCallback((hit: SearchHitDto) => {
    setSearching(false)
    // selected on the node first: the conversation opens on the hit's branch
    client.call('conversation.select', { id: hit.conversation, entry: hit.entry }).catch(() => undefined).finally(() => {
      setLanding(prev => ({ conversation: hit.conversation, entry: hit.entry, seq: (prev?.seq ?? 0) + 1 }))
      select(hit.conversation)
    })
  }, [client, select])

  const activeSummary = list?.find(c => c.id === activeId)
  const titleOf = useCallback((id: string) => list?.find(c => c.id === id)?.title, [list])
  // a fork made here, or a fork's source at the entry its copy ends at (its branch then shown)
  const openAt = useCallback((id: string, entry?: string) => {
    const go = (): void => { refreshList(); select(id) }
    if (entry === undefined) { go(); return }
    client.call('conversation.select', { id, entry }).then(go, err => setListError(errorText(err)))
  }, [client, refreshList, select])

  return (
    <div className="app">
      <ConnectionBanner status={status} hasToken={hasToken} onRetry={() => client.retryNow()} />
      <div className="layout">
        <Sidebar
          list={list}
          error={listError}
          activeId={activeId}
          onSelect={id => { setLanding(undefined); select(id) }}
          onCreated={onCreated}
          onRetry={refreshList}
          defaultCwd={defaultCwd}
          connected={status.state === 'open'}
          node={node}
          net={net}
          view={view}
          onView={setView}
        />
        <main className="main" aria-label={view === 'chat' ? 'Conversation' : view === 'devices' ? 'Devices' : 'Settings'}>
          {view === 'settings'
            ? <SettingsView onClose={() => setView('chat')} onSaved={s => setDefaultCwd(s.defaultCwd)} autoDetect={firstRun} />
            : view === 'devices'
              ? <DevicesView net={net} onClose={() => setView('chat')} />
              : opened.state === 'open' && opened.store.id === activeId
            ? <ChatView key={opened.store.id} store={opened.store} connected={status.state === 'open'} device={node?.device} onOpen={openAt} titleOf={titleOf} landing={landing?.conversation === opened.store.id ? landing : undefined} />
            : activeId === undefined
              ? <EmptyState />
              : opened.state === 'error' && opened.id === activeId
                ? (
                  <div className="placeholder" role="alert">
                    <p>Could not open {activeSummary !== undefined ? `“${activeSummary.title || 'Untitled'}”` : 'this conversation'}: {opened.error}</p>
                    <button type="button" onClick={() => openConversation(activeId)}>Try again</button>
                  </div>
                  )
                : <div className="placeholder" role="status"><p>Opening{activeSummary !== undefined ? ` “${activeSummary.title || 'Untitled'}”` : ''}…</p></div>}
        </main>
      </div>
      {searching ? <SearchPalette onPick={pickHit} onClose={() => setSearching(false)} /> : null}
    </div>
  )
}

function EmptyState (): JSX.Element {
  return (
    <div className="placeholder">
      <h2>No conversation open</h2>
      <p>Pick one from the list, or start a new one. Every edit makes a branch; nothing is lost.</p>
    </div>
  )
}
