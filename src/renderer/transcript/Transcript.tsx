import { createContext, memo, useCallback, useContext, useEffect, useId, useLayoutEffect, useMemo, useRef, useState, type JSX, type KeyboardEvent, type RefObject } from 'react'
import type { Fork } from './branch-nav'
import type { ContinuePoint } from '../chat/continue-from'
import { formatCount } from '../sidebar/conversation-list'
import { Markdown } from '../markdown/Markdown'
import type { ToolCallView, ToolStatus, TranscriptItem, Turn } from './transcript-items'
import { estimateTurnHeight, nearBottom, turnOffsets, turnWindow } from './transcript-window'

export interface TranscriptActions {
  /** shows the sibling branch `entry`; `dir` is the button used (for focus) */
  onSwitch: (entry: string, dir: -1 | 1) => void
  /** sends `text` as a new child of `parent` (an edit makes a sibling branch) */
  onEdit: (text: string, parent: string) => Promise<void>
  /** where focus should land after a branch switch */
  focusAt: { id: string; dir: -1 | 1 } | undefined
  /** whether new messages can be sent now */
  canSend: boolean
}

export interface TranscriptProps extends TranscriptActions {
  turns: readonly Turn[]
  toolOutput: ReadonlyMap<string, string>
  /** the element that scrolls the transcript (it may hold more, such as the streamed reply below) */
  scrollRef: RefObject<HTMLDivElement | null>
  /** whether the view follows the end as content arrives (the chat's "stick to the bottom") */
  stickRef: RefObject<boolean>
  /** after drawn turns changed size while following the end: scroll to it */
  onFollow: () => void
  /** scrolls the turn holding this entry to the top (a new object each time it is asked for) */
  reveal?: { id: string } | undefined
  /** agent turn id → where "continue from here" attaches (turns followed by another message) */
  continueAt?: ReadonlyMap<string, ContinuePoint>
  onContinue?: (at: ContinuePoint) => void
  /** how running tools stand per the agent's live events (before their results are recorded) */
  toolStatus?: ReadonlyMap<string, LiveToolStatus>
}

type LiveToolStatus = 'running' | 'ok' | 'error'
const NO_STATUS: ReadonlyMap<string, LiveToolStatus> = new Map()

interface View { top: number; height: number }

/** Tool cards opened or closed by hand, by call id: a card scrolled out of the window and back keeps its state. */
const ToolCardsOpen = createContext<Map<string, boolean> | undefined>(undefined)

/** px between the scroller's top and a revealed turn */
const REVEAL_MARGIN = 8

/**
 * The shown branch, virtualised: only the turns around the viewport are drawn, between two
 * spacers standing for the rest (measured heights where known, else estimates), so a
 * branch of thousands of turns opens, scrolls and streams at the cost of a screenful.
 * When turns above the viewport are drawn or change size, the scroll position moves with
 * them so the turn being read stays put (the browser's own scroll anchoring is switched off
 * on the scroller so the two never both correct).
 */
export const Transcript = memo(function Transcript ({ turns, toolOutput, scrollRef, stickRef, onFollow, reveal, continueAt, onContinue, toolStatus = NO_STATUS, ...actions }: TranscriptProps): JSX.Element {
  const listRef = useRef<HTMLDivElement>(null)
  const heights = useRef(new Map<string, number>()) // measured, by turn id
  const [toolsOpen] = useState(() => new Map<string, boolean>())
  const [measured, setMeasured] = useState(0) // bumped when `heights` changed
  // `measured` stands for the mutable heights
  const offsets = useMemo(() => turnOffsets(turns, t => heights.current.get(t.id) ?? estimateTurnHeight(t)), [turns, measured])
  const [view, setView] = useState<View>(() => ({ top: 0, height: typeof window === 'undefined' ? 800 : window.innerHeight }))
  const win = turnWindow(offsets, { ...view, atBottom: stickRef.current })
  const ids = useMemo(() => new Set(turns.map(t => t.id)), [turns])
  const latest = useRef({ offsets, win, ids })
  latest.current = { offsets, win, ids }
  /**
   * The first turn in view and its top in the scroller's content, as last drawn: when it
   * moves, what is above it changed size, and the scroll position moves as much. In content
   * coordinates, so a scroll whose event has not come yet is not undone. `pinned` (a revealed
   * turn): `at` is its wanted distance from the viewport's top, held until it is drawn there.
   */
  const anchor = useRef<{ id: string; at: number; pinned?: boolean } | undefined>(undefined)

  const slots = (): HTMLElement[] => {
    const list = listRef.current
    return list === null ? [] : Array.from(list.querySelectorAll<HTMLElement>(':scope > [data-turn]'))
  }
  /** the scroller, when it is shown (hidden behind the tree, nothing can be measured) */
  const shown = (): HTMLDivElement | undefined => {
    const el = scrollRef.current
    return el !== null && el.clientHeight > 0 ? el : undefined
  }

  // Nothing drawn in view (just after a jump): the anchor stays as it was, until the window follows.
  const recordAnchor = useCallback((): void => {
    const sc = shown()
    if (sc === undefined || anchor.current?.pinned === true) return
    const r0 = sc.getBoundingClientRect()
    for (const el of slots()) {
      const r = el.getBoundingClientRect()
      if (r.bottom > r0.top && r.top < r0.bottom) { anchor.current = { id: el.dataset.turn as string, at: r.top - r0.top + sc.scrollTop }; return }
    }
  }, [])

  /** Keeps the anchor turn where it was (or the end in view when following it). */
  const settle = useCallback((): void => {
    const sc = shown()
    if (sc === undefined) return
    if (stickRef.current) {
      if (anchor.current !== undefined) anchor.current.pinned = false
      onFollow()
      recordAnchor()
      return
    }
    const a = anchor.current
    const el = a === undefined ? null : listRef.current?.querySelector<HTMLElement>(`:scope > [data-turn="${a.id}"]`) ?? null
    if (a !== undefined && el !== null) {
      const inView = el.getBoundingClientRect().top - sc.getBoundingClientRect().top
      const delta = a.pinned === true ? inView - a.at : inView + sc.scrollTop - a.at
      if (Math.abs(delta) >= 0.5) sc.scrollTop += delta
      a.pinned = false
    } else if (a?.pinned === true && !latest.current.ids.has(a.id)) {
      a.pinned = false // the turn is gone (another branch): nothing to wait for
    }
    recordAnchor()
  }, [onFollow, recordAnchor, stickRef])

  /** Records the drawn turns' heights; true when any changed. */
  const measure = (els: Iterable<Element>): boolean => {
    if (shown() === undefined) return false
    let changed = false
    for (const el of els) {
      const id = (el as HTMLElement).dataset.turn
      if (id === undefined || !el.isConnected) continue
      const h = el.getBoundingClientRect().height
      if (heights.current.get(id) !== h) { heights.current.set(id, h); changed = true }
    }
    return changed
  }

  // A turn to show (picked in the tree): put it at the top, where the anchor then keeps it
  // once its real height and those above it are known.
  useLayoutEffect(() => {
    const sc = shown()
    const list = listRef.current
    if (reveal === undefined || sc === undefined || list === null || turns.length === 0) return
    const found = turns.findIndex(t => t.id === reveal.id || t.items.some(i => i.id === reveal.id))
    const i = Math.max(0, found) // not a turn of its own (the root): the start
    const base = list.getBoundingClientRect().top - sc.getBoundingClientRect().top + sc.scrollTop
    const top = offsets[i] as number
    sc.scrollTop = base + top - REVEAL_MARGIN
    anchor.current = { id: (turns[i] as Turn).id, at: REVEAL_MARGIN, pinned: true }
    setView({ top: top - REVEAL_MARGIN, height: sc.clientHeight })
  }, [reveal]) // only when asked: not when turns or heights change later

  // After every commit, before paint: measure what was drawn, then put the view back.
  useLayoutEffect(() => {
    if (measure(slots())) setMeasured(m => m + 1)
    settle()
  })

  // Turns that change size later (a tool card opened, live output, the width changed).
  const ro = useMemo(() => typeof ResizeObserver === 'undefined'
    ? undefined
    : new ResizeObserver(entries => {
      if (!measure(entries.map(e => e.target))) return
      settle()
      setMeasured(m => m + 1)
    }), [settle])
  useEffect(() => () => ro?.disconnect(), [ro])
  const observe = useCallback((el: HTMLDivElement | null) => {
    if (el === null || ro === undefined) return
    ro.observe(el)
    return () => ro.unobserve(el)
  }, [ro])

  // Scrolling (and resizing the scroller) moves the window; re-render only when it changes.
  useEffect(() => {
    const sc = scrollRef.current
    const list = listRef.current
    if (sc === null || list === null) return
    const update = (): void => {
      if (sc.clientHeight === 0) return
      recordAnchor()
      const top = sc.scrollTop - (list.getBoundingClientRect().top - sc.getBoundingClientRect().top + sc.scrollTop)
      const next = { top, height: sc.clientHeight }
      const { offsets: o, win: w } = latest.current
      const atBottom = nearBottom(sc.scrollHeight, sc.scrollTop, sc.clientHeight)
      const nw = turnWindow(o, { ...next, atBottom })
      if (nw.start !== w.start || nw.end !== w.end) setView(next)
    }
    sc.addEventListener('scroll', update, { passive: true })
    const sro = typeof ResizeObserver === 'undefined' ? undefined : new ResizeObserver(update)
    sro?.observe(sc)
    return () => { sc.removeEventListener('scroll', update); sro?.disconnect() }
  }, [scrollRef, recordAnchor])

  const drawn: JSX.Element[] = []
  for (let i = win.start; i < win.end; i++) {
    const turn = turns[i] as Turn
    drawn.push(
      <div key={turn.id} className="turn-slot" data-turn={turn.id} ref={observe}>
        {turn.role === 'user'
          ? <UserTurn item={turn.items[0] as Extract<TranscriptItem, { kind: 'user' }>} {...actions} />
          : <AgentTurn turn={turn} toolOutput={toolOutput} toolStatus={toolStatus} continueAt={continueAt?.get(turn.id)} onContinue={onContinue} {...actions} />}
      </div>
    )
  }
  const total = offsets[turns.length] as number
  return (
    <div ref={listRef} className="transcript" role="log" aria-label="Messages on this branch" aria-live="polite">
      <div className="transcript-spacer" aria-hidden="true" style={{ height: offsets[win.start] }} />
      <ToolCardsOpen.Provider value={toolsOpen}>{drawn}</ToolCardsOpen.Provider>
      <div className="transcript-spacer" aria-hidden="true" style={{ height: total - (offsets[win.end] as number) }} />
    </div>
  )
})

const AgentTurn = memo(function AgentTurn ({ turn, toolOutput, toolStatus, continueAt, onContinue, ...actions }: {
  turn: Turn
  toolOutput: ReadonlyMap<string, string>
  toolStatus: ReadonlyMap<string, LiveToolStatus>
  continueAt: ContinuePoint | undefined
  onContinue: ((at: ContinuePoint) => void) | undefined
} & TranscriptActions): JSX.Element {
  return (
    <section className="turn agent" aria-label="Agent">
      {turn.items.map(item => <AgentItem key={item.id} item={item} toolOutput={toolOutput} toolStatus={toolStatus} {...actions} />)}
      <ContinueAction at={continueAt} onContinue={onContinue} />
    </section>
  )
})

/** "Continue from here" under an earlier agent turn: the next message branches off after it. */
function ContinueAction ({ at, onContinue }: { at: ContinuePoint | undefined; onContinue: ((at: ContinuePoint) => void) | undefined }): JSX.Element | null {
  if (at === undefined || onContinue === undefined) return null
  return (
    <div className="msg-actions continue-action">
      <button
        type="button"
        className="link"
        onClick={() => onContinue(at)}
        aria-label={`Continue from here: a new branch after “${at.label}”`}
        title="Write a message that follows this turn, as a new branch; later turns stay on theirs"
      >Continue from here
      </button>
    </div>
  )
}

function Forks ({ forks, onSwitch, focusAt }: { forks: readonly Fork[] } & Pick<TranscriptActions, 'onSwitch' | 'focusAt'>): JSX.Element | null {
  if (forks.length === 0) return null
  return <>{forks.map(f => <BranchSwitcher key={f.at} fork={f} onSwitch={onSwitch} focusAt={focusAt} />)}</>
}

/** "‹ 2/3 ›" where the branch forks. */
export function BranchSwitcher ({ fork, onSwitch, focusAt }: { fork: Fork } & Pick<TranscriptActions, 'onSwitch' | 'focusAt'>): JSX.Element {
  const prevRef = useRef<HTMLButtonElement>(null)
  const nextRef = useRef<HTMLButtonElement>(null)
  useEffect(() => {
    if (focusAt?.id !== fork.at) return
    const want = focusAt.dir < 0 ? (fork.prev !== undefined ? prevRef : nextRef) : (fork.next !== undefined ? nextRef : prevRef)
    want.current?.focus()
  }, [focusAt, fork])
  const onKey = (e: KeyboardEvent<HTMLDivElement>): void => {
    if (e.key === 'ArrowLeft' && fork.prev !== undefined) { e.preventDefault(); onSwitch(fork.prev, -1) }
    if (e.key === 'ArrowRight' && fork.next !== undefined) { e.preventDefault(); onSwitch(fork.next, 1) }
  }
  return (
    <div className="branch-switch" role="group" aria-label={`Branch ${fork.index + 1} of ${fork.count}`} onKeyDown={onKey}>
      <button
        ref={prevRef}
        type="button"
        aria-label="Previous branch"
        disabled={fork.prev === undefined}
        onClick={() => fork.prev !== undefined && onSwitch(fork.prev, -1)}
      >‹
      </button>
      <span aria-hidden="true">{fork.index + 1}/{fork.count}</span>
      <button
        ref={nextRef}
        type="button"
        aria-label="Next branch"
        disabled={fork.next === undefined}
        onClick={() => fork.next !== undefined && onSwitch(fork.next, 1)}
      >›
      </button>
    </div>
  )
}

const UserTurn = memo(function UserTurn ({ item, onSwitch, onEdit, focusAt, canSend }: { item: Extract<TranscriptItem, { kind: 'user' }> } & TranscriptActions): JSX.Element {
  const [editing, setEditing] = useState(false)
  const editRef = useRef<HTMLButtonElement>(null)
  const stopEditing = (): void => {
    setEditing(false)
    requestAnimationFrame(() => editRef.current?.focus())
  }
  return (
    <section className="turn user" aria-label="You">
      {editing && item.parent !== undefined
        ? <EditBox initial={item.text} onCancel={stopEditing} onSubmit={text => onEdit(text, item.parent as string).then(() => setEditing(false))} />
        : <div className="bubble user-text">{item.text}</div>}
      <div className="msg-actions">
        <Forks forks={item.forks} onSwitch={onSwitch} focusAt={focusAt} />
        {!editing && item.parent !== undefined
          ? (
            <button
              ref={editRef}
              type="button"
              className="link"
              onClick={() => setEditing(true)}
              disabled={!canSend}
              aria-label="Edit this message (makes a new branch)"
              title="Edit and resend: the original stays as another branch"
            >Edit
            </button>
            )
          : null}
      </div>
    </section>
  )
})

function EditBox ({ initial, onCancel, onSubmit }: { initial: string; onCancel: () => void; onSubmit: (text: string) => Promise<void> }): JSX.Element {
  const [text, setText] = useState(initial)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>()
  const ref = useRef<HTMLTextAreaElement>(null)
  useEffect(() => {
    const el = ref.current
    if (el === null) return
    el.focus()
    el.setSelectionRange(el.value.length, el.value.length)
  }, [])
  const submit = (): void => {
    if (busy || text.trim() === '') return
    setBusy(true)
    setError(undefined)
    onSubmit(text).catch(err => { setBusy(false); setError(err instanceof Error ? err.message : String(err)) })
  }
  return (
    <div className="edit-box">
      <textarea
        ref={ref}
        value={text}
        aria-label="Edited message"
        rows={Math.min(12, Math.max(2, text.split('\n').length))}
        onChange={e => setText(e.target.value)}
        onKeyDown={e => {
          if (e.key === 'Escape') { e.preventDefault(); onCancel() }
          if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) { e.preventDefault(); submit() }
        }}
      />
      {error !== undefined ? <p className="form-error" role="alert">{error}</p> : null}
      <div className="form-actions">
        <button type="button" onClick={onCancel}>Cancel</button>
        <button type="button" className="primary" onClick={submit} disabled={busy || text.trim() === ''}>Send as new branch</button>
      </div>
    </div>
  )
}

const AgentItem = memo(function AgentItem ({ item, toolOutput, toolStatus, onSwitch, focusAt }: { item: TranscriptItem; toolOutput: ReadonlyMap<string, string>; toolStatus: ReadonlyMap<string, LiveToolStatus> } & TranscriptActions): JSX.Element | null {
  const forks = <Forks forks={item.forks} onSwitch={onSwitch} focusAt={focusAt} />
  switch (item.kind) {
    case 'assistant':
      return (
        <article className="assistant" aria-label="Assistant message">
          {item.forks.length > 0 ? <div className="msg-actions top">{forks}</div> : null}
          {item.reasoning !== undefined
            ? <details className="reasoning"><summary>Thinking</summary><div className="reasoning-text">{item.reasoning}</div></details>
            : null}
          {item.text !== '' ? <Markdown text={item.text} /> : null}
          {item.tools.map(t => <ToolCard key={t.callId} tool={withLiveStatus(t, toolStatus)} live={toolOutput.get(t.callId)} />)}
          {item.usage !== undefined
            ? <div className="usage-line" aria-label={`${item.usage.input} input and ${item.usage.output} output tokens`}>{formatCount(item.usage.input)} in · {formatCount(item.usage.output)} out{item.model !== undefined ? ` · ${item.model}` : ''}</div>
            : null}
        </article>
      )
    case 'tool':
      return (
        <div>
          {item.forks.length > 0 ? <div className="msg-actions top">{forks}</div> : null}
          <ToolCard tool={withLiveStatus(item.tool, toolStatus)} live={toolOutput.get(item.tool.callId)} />
        </div>
      )
    case 'notice':
      return (
        <div className={`notice ${item.tone}${item.system === true ? ' system' : ''}`} role="note">
          <span className="notice-icon" aria-hidden="true">{item.tone === 'error' ? '⚠' : item.tone === 'warn' ? '!' : 'i'}</span>
          <div>
            <div className="notice-text">{item.tone === 'error' ? <span className="sr-only">Error: </span> : null}{item.text}</div>
            {item.detail !== undefined ? <div className="notice-detail">{item.detail}</div> : null}
          </div>
          {item.forks.length > 0 ? <div className="msg-actions">{forks}</div> : null}
        </div>
      )
    case 'user':
      return null
  }
})

/** A call the entries show as not yet finished, as the agent's live events tell it (they run ahead of the entries). */
export function withLiveStatus (tool: ToolCallView, live: ReadonlyMap<string, LiveToolStatus>): ToolCallView {
  const status = live.get(tool.callId)
  if (status === undefined || (tool.status !== 'pending' && tool.status !== 'running') || status === tool.status) return tool
  return { ...tool, status }
}

const STATUS_LABEL: Record<ToolStatus, string> = {
  pending: 'starting',
  running: 'running',
  ok: 'done',
  error: 'failed',
  unknown: 'outcome unknown',
  cancelled: 'cancelled',
  interrupted: 'no result'
}

/** One line about the arguments: the command, path or URL if there is one, else compact JSON. */
export function argsSummary (args: unknown): string {
  if (args !== null && typeof args === 'object' && !Array.isArray(args)) {
    const a = args as Record<string, unknown>
    for (const k of ['command', 'cmd', 'path', 'url', 'query']) {
      const v = a[k]
      if (typeof v === 'string') return oneLine(v)
    }
  }
  if (args === undefined) return ''
  return oneLine(typeof args === 'string' ? args : JSON.stringify(args) ?? '')
}

function oneLine (s: string): string {
  const flat = s.replace(/\s+/g, ' ').trim()
  return flat.length > 120 ? flat.slice(0, 119) + '…' : flat
}

function prettyArgs (args: unknown): string {
  if (typeof args === 'string') return args
  try { return JSON.stringify(args, null, 2) ?? String(args) } catch { return String(args) }
}

export function ToolCard ({ tool, live }: { tool: ToolCallView; live: string | undefined }): JSX.Element {
  const active = tool.status === 'running' || tool.status === 'pending'
  const remembered = useContext(ToolCardsOpen)
  const [open, setOpenState] = useState<boolean | undefined>(() => remembered?.get(tool.callId))
  const setOpen = (v: boolean): void => { remembered?.set(tool.callId, v); setOpenState(v) }
  const expanded = open ?? (active || tool.status === 'error')
  const bodyId = useId()
  const output = tool.output ?? live
  const summary = argsSummary(tool.args)
  return (
    <div className={`tool-card status-${tool.status}`}>
      <button
        type="button"
        className="tool-head"
        aria-expanded={expanded}
        aria-controls={bodyId}
        onClick={() => setOpen(!expanded)}
      >
        <span className="chevron" aria-hidden="true">{expanded ? '▾' : '▸'}</span>
        <span className="tool-name">{tool.name}</span>
        <span className="tool-args">{summary}</span>
        <span className={`tool-status ${tool.status}`}>
          {active ? <span className="spinner small" aria-hidden="true" /> : null}
          {STATUS_LABEL[tool.status]}
        </span>
      </button>
      {expanded
        ? (
          <div className="tool-body" id={bodyId}>
            <div className="tool-section-label">Arguments{tool.effect !== undefined ? <span className="effect"> · effect: {tool.effect}</span> : null}</div>
            <pre className="tool-pre" tabIndex={0} aria-label="Arguments">{prettyArgs(tool.args)}</pre>
            <div className="tool-section-label">Output{tool.truncated === true ? <span className="effect"> · truncated</span> : null}{tool.output === undefined && live !== undefined ? <span className="effect"> · live</span> : null}</div>
            {output !== undefined && output !== ''
              ? <LiveOutput text={output} follow={tool.output === undefined} />
              : <div className="tool-empty">{active ? 'waiting for output…' : '(no output)'}</div>}
          </div>
          )
        : null}
    </div>
  )
}

function LiveOutput ({ text, follow }: { text: string; follow: boolean }): JSX.Element {
  const ref = useRef<HTMLPreElement>(null)
  useEffect(() => {
    const el = ref.current
    if (follow && el !== null) el.scrollTop = el.scrollHeight
  }, [text, follow])
  return <pre ref={ref} className="tool-pre output" tabIndex={0} aria-label="Output">{text}</pre>
}
