// The transcript: the shown branch as a virtualised list of turns (UserTurn, AgentTurn); the
// window arithmetic is in transcript-window.ts, the items in transcript-items.ts.
import { memo, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type JSX, type RefObject } from 'react'
import type { ContinuePoint } from '../chat/continue-from'
import { AgentTurn } from './AgentTurn'
import { ToolCardsOpen } from './ToolCard'
import type { TranscriptActions } from './transcript-actions'
import type { LiveToolStatus, TranscriptItem, Turn } from './transcript-items'
import { estimateTurnHeight, nearBottom, turnOffsets, turnWindow } from './transcript-window'
import { UserTurn } from './UserTurn'

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

const NO_STATUS: ReadonlyMap<string, LiveToolStatus> = new Map()

interface View { top: number; height: number }

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
