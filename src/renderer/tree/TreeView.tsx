// The whole conversation as a tree of turns: one row per turn, indented at branch points,
// the shown branch highlighted, each device in its own colour. Virtualised: only the rows
// in view (plus a few) are drawn, so 10,000 entries scroll smoothly. Forks fold (this
// device's view state, kept per conversation in localStorage); branches can be named.
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type FormEvent, type JSX, type KeyboardEvent } from 'react'
import { BRANCH_NAME_MAX } from '../../shared/conversation/branch-name'
import type { ConversationDag } from '../../shared/conversation/conversation-dag'
import { useApi } from '../api-context'
import { continuePointOf, type ContinuePoint } from '../chat/continue-from'
import { ariaPositions } from './tree-aria'
import { ariaParent, canFold, foldRows, hiddenText, shownIndexOf, unfoldPathTo } from './tree-fold'
import { loadFolds, saveFolds } from './tree-fold-store'
import { treeLayoutOf } from './layout-cache'
import { deviceColour, laneRuns, visibleWindow, type TreeNode } from './tree-layout'

export const TREE_ROW_HEIGHT = 32
const LANE_WIDTH = 18
/** the tree's height before it is measured (a window's worth; overscan covers the difference) */
const OPEN_HEIGHT_GUESS = 600

export function TreeView ({ dag, size, selected, self, onPick, onContinue, onClose }: {
  dag: ConversationDag
  /** the DAG's size: it stands for its (mutable) contents */
  size: number
  selected: string | undefined
  /** this device's key (rows by others are marked), as the chat knows it */
  self: string | undefined
  /** shows the branch through this entry */
  onPick: (entry: string) => void
  /** starts a message that continues from a turn (a new branch when the turn has a continuation) */
  onContinue: (at: ContinuePoint) => void
  onClose: () => void
}): JSX.Element {
  const client = useApi()

  const { rows: all, current: currentAll } = useMemo(() => treeLayoutOf(dag, size, selected), [dag, size, selected])
  // the folds kept from last time, except those that would hide the shown branch: the tree
  // opens on it. Folding an ancestor of it later is the user's choice, and the fold shows it
  // (the folded row is on the shown branch, so it is marked current and takes the highlight).
  const [folded, setFolded] = useState(() => unfoldPathTo(all, currentAll, loadFolds(dag.conversation)))
  const rows = useMemo(() => foldRows(all, folded), [all, folded])
  const current = useMemo(() => shownIndexOf(all, rows, currentAll), [all, rows, currentAll])
  const aria = useMemo(() => ariaPositions(rows), [rows])
  const forks = useMemo(() => all.filter(r => r.childCount > 1).length, [all])
  const [active, setActive] = useState(current)
  const [naming, setNaming] = useState<TreeNode | undefined>()
  const [nameError, setNameError] = useState<string | undefined>()
  // the first render already draws the rows around the shown branch's turn (where the view opens),
  // so the layout effect's measured view keeps them rather than replacing a screenful from the top
  const [view, setViewState] = useState(() => ({ top: Math.max(0, current * TREE_ROW_HEIGHT - OPEN_HEIGHT_GUESS / 2), height: OPEN_HEIGHT_GUESS }))
  // the same view keeps the same state: the resize observer's first call (and a scroll within a row) draws nothing again
  const setView = useCallback((v: { top: number; height: number }) => setViewState(p => p.top === v.top && p.height === v.height ? p : v), [])
  const ref = useRef<HTMLDivElement>(null)

  // open at the shown branch's last turn, in the middle of the view
  useLayoutEffect(() => {
    const el = ref.current
    if (el === null) return
    el.focus()
    el.scrollTop = Math.max(0, current * TREE_ROW_HEIGHT - el.clientHeight / 2)
    setView({ top: el.scrollTop, height: el.clientHeight })
  }, [])

  useEffect(() => {
    const el = ref.current
    if (el === null || typeof ResizeObserver === 'undefined') return
    const ro = new ResizeObserver(() => setView({ top: el.scrollTop, height: el.clientHeight }))
    ro.observe(el)
    return () => ro.disconnect()
  }, [setView])

  const moveTo = (i: number, count = rows.length): void => {
    const n = Math.max(0, Math.min(count - 1, i))
    setActive(n)
    const el = ref.current
    if (el === null) return
    const y = n * TREE_ROW_HEIGHT
    if (y < el.scrollTop) el.scrollTop = y
    else if (y + TREE_ROW_HEIGHT > el.scrollTop + el.clientHeight) el.scrollTop = y + TREE_ROW_HEIGHT - el.clientHeight
  }

  /** Folds or unfolds fork `n`; a highlight inside what folds moves to the fork. */
  const toggle = (n: TreeNode): void => {
    if (!canFold(n)) return
    const next = new Set(folded)
    if (!next.delete(n.id)) next.add(n.id)
    const activeRow = rows[active]
    const nextRows = foldRows(all, next)
    setFolded(next)
    saveFolds(dag.conversation, next)
    if (activeRow !== undefined) moveTo(shownIndexOf(all, nextRows, all.indexOf(activeRow)), nextRows.length)
  }

  const startNaming = (n: TreeNode | undefined): void => { setNameError(undefined); setNaming(n) }
  const saveName = (e: FormEvent<HTMLFormElement>): void => {
    e.preventDefault()
    const n = naming
    if (n === undefined) return
    const name = String(new FormData(e.currentTarget).get('name') ?? '')
    client.call('branch.name', { conversation: dag.conversation, entry: n.id, name }).then(
      () => { setNaming(undefined); ref.current?.focus() },
      (err: unknown) => setNameError(err instanceof Error ? err.message : String(err))
    )
  }

  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>): void => {
    const page = Math.max(1, Math.floor(view.height / TREE_ROW_HEIGHT) - 1)
    const here = rows[active]
    const keys: Record<string, () => void> = {
      ArrowDown: () => moveTo(active + 1),
      ArrowUp: () => moveTo(active - 1),
      // the ARIA tree pattern: → opens a fork, then steps into it; ← folds it, or goes up to the fork above
      ArrowRight: () => { if (here !== undefined && canFold(here)) { if (folded.has(here.id)) toggle(here); else moveTo(active + 1) } },
      ArrowLeft: () => {
        if (here !== undefined && canFold(here) && !folded.has(here.id)) toggle(here)
        else { const up = ariaParent(rows, active); if (up >= 0) moveTo(up) }
      },
      F2: () => startNaming(here),
      PageDown: () => moveTo(active + page),
      PageUp: () => moveTo(active - page),
      Home: () => moveTo(0),
      End: () => moveTo(rows.length - 1),
      Enter: () => { const n = rows[active]; if (n !== undefined) onPick(n.select) },
      ' ': () => { const n = rows[active]; if (n !== undefined) onPick(n.select) },
      c: () => { const n = rows[active]; if (n !== undefined) onContinue(continuePointOf(n)) },
      Escape: onClose
    }
    const fn = e.ctrlKey || e.metaKey || e.altKey ? undefined : keys[e.key === 'C' ? 'c' : e.key]
    if (fn === undefined) return
    e.preventDefault()
    fn()
  }

  const { start, end } = visibleWindow(rows.length, TREE_ROW_HEIGHT, view.top, view.height)
  const drawn: JSX.Element[] = []
  for (let i = start; i < end; i++) {
    const n = rows[i] as TreeNode
    drawn.push(
      <TreeRow
        key={n.id} node={n} index={i} active={i === active} self={self} pos={aria.pos[i] as number} setSize={aria.size[i] as number}
        folded={folded.has(n.id)}
        onToggle={() => toggle(n)}
        onPick={() => { setActive(i); onPick(n.select) }}
        onContinue={() => onContinue(continuePointOf(n))}
      />
    )
  }
  const activeRow = rows[active]

  return (
    <div className="tree-view">
      <div className="tree-head">
        <span>{rows.length} turn{rows.length === 1 ? '' : 's'} · {forks} branch point{forks === 1 ? '' : 's'}</span>
        <span className="tree-hint" id="tree-hint">↑↓ to move, ←→ to fold and unfold, Enter to show a branch, C to continue from a turn, F2 to name a branch, Esc to go back</span>
      </div>
      <div
        ref={ref}
        className="tree-scroll"
        role="tree"
        aria-label="Conversation tree"
        aria-describedby="tree-hint"
        tabIndex={0}
        aria-activedescendant={activeRow !== undefined && active >= start && active < end ? `tree-row-${activeRow.id}` : undefined}
        onKeyDown={onKeyDown}
        onScroll={e => setView({ top: e.currentTarget.scrollTop, height: e.currentTarget.clientHeight })}
      >
        <div className="tree-inner" style={{ height: rows.length * TREE_ROW_HEIGHT }}>{drawn}</div>
      </div>
      {naming !== undefined
        ? (
          <form className="tree-actions" aria-label="Name the branch" onSubmit={saveName} onKeyDown={e => { if (e.key === 'Escape') { e.stopPropagation(); startNaming(undefined); ref.current?.focus() } }}>
            <label className="tree-actions-label" htmlFor="tree-name">Name the branch from “{naming.label}”</label>
            {/* empty clears the name */}
            <input id="tree-name" name="name" defaultValue={naming.name ?? ''} maxLength={BRANCH_NAME_MAX} autoFocus aria-invalid={nameError !== undefined} aria-describedby={nameError !== undefined ? 'tree-name-error' : undefined} />
            <button type="submit" className="primary">Save name</button>
            <button type="button" onClick={() => { startNaming(undefined); ref.current?.focus() }}>Cancel</button>
            {nameError !== undefined ? <span id="tree-name-error" className="tree-name-error" role="alert">{nameError}</span> : null}
          </form>
          )
        : activeRow !== undefined
          ? (
            <div className="tree-actions" role="group" aria-label="Highlighted turn">
              <span className="tree-actions-label">{activeRow.name !== undefined ? <strong>{activeRow.name} · </strong> : null}“{activeRow.label}”</span>
              <button type="button" onClick={() => startNaming(activeRow)}>{activeRow.name !== undefined ? 'Rename branch' : 'Name branch'}</button>
              <button type="button" onClick={() => onPick(activeRow.select)}>Show this branch</button>
              <button type="button" className="primary" onClick={() => onContinue(continuePointOf(activeRow))}>Continue from here</button>
            </div>
            )
          : null}
    </div>
  )
}

const LANE_CLASS: Record<string, string> = { '│': 'pipe', '├': 'tee', '└': 'elbow', ' ': 'blank' }

function TreeRow ({ node: n, index, active, self, pos, setSize, folded, onToggle, onPick, onContinue }: {
  node: TreeNode
  index: number
  active: boolean
  self: string | undefined
  pos: number
  setSize: number
  folded: boolean
  onToggle: () => void
  onPick: () => void
  onContinue: () => void
}): JSX.Element {
  const foreign = self !== undefined && n.device !== self
  const fork = canFold(n)
  const compacted = n.compactions?.reduce((a, b) => Math.max(a, b), 0)
  const cls = ['tree-row', n.onBranch ? 'on-branch' : '', active ? 'active' : '', fork ? 'fork' : '', folded ? 'folded' : '', compacted !== undefined ? 'compacted' : ''].filter(Boolean).join(' ')
  const lanes: JSX.Element[] = []
  // fork connectors like `arbor tree`'s ├─ └─ │ (tree-layout's guide); a run of │ or blank lanes is
  // one element: a row deep in forks has up to 40 lanes, and one element each was most of the tree's first paint
  for (const r of laneRuns(n.guide, n.lane)) {
    lanes.push(<span key={r.at} className={`tree-lane ${LANE_CLASS[r.glyph] ?? ''}`} style={r.count > 1 ? { width: r.count * LANE_WIDTH } : undefined} aria-hidden="true" />)
  }
  return (
    <div
      id={`tree-row-${n.id}`}
      className={cls}
      role="treeitem"
      aria-level={n.lane + 1}
      aria-selected={active}
      aria-current={n.onBranch ? 'true' : undefined}
      aria-expanded={fork ? !folded : undefined}
      aria-setsize={setSize}
      aria-posinset={pos}
      title={`${n.name !== undefined ? n.name + ': ' : ''}${n.label}${n.onBranch ? ' (on the shown branch)' : ''} · device ${n.device.slice(0, 8)} · ${n.entries} entries${folded ? ` · ${hiddenText(n)}` : ''}`}
      style={{ top: index * TREE_ROW_HEIGHT, height: TREE_ROW_HEIGHT, paddingLeft: 8 + Math.min(n.lane, 40) * LANE_WIDTH }}
      onClick={onPick}
    >
      {lanes.length > 0 ? <span className="tree-lanes" aria-hidden="true">{lanes}</span> : null}
      <span className="tree-dot" style={{ background: deviceColour(n.device) }} aria-hidden="true" />
      {/* after the dot, which the connectors hang from; a pointer shortcut, as Continue is: keyboard users have ← → */}
      {fork ? <button type="button" className="tree-fold" tabIndex={-1} aria-hidden="true" onClick={e => { e.stopPropagation(); onToggle() }}>{folded ? '▸' : '▾'}</button> : null}
      {n.name !== undefined ? <span className="tree-name">{n.name}</span> : null}
      <span className="tree-label">{n.label}</span>
      {compacted !== undefined ? <span className="tree-compacted">compacted {compacted} entr{compacted === 1 ? 'y' : 'ies'}</span> : null}
      {folded ? <span className="tree-hidden">{hiddenText(n)}</span> : null}
      {/* aria-label is not allowed on a plain span: screen readers get words, eyes get "1/2" */}
      {n.siblingCount > 1 ? <span className="tree-sib"><span aria-hidden="true">{n.siblingIndex + 1}/{n.siblingCount}</span><span className="sr-only">, branch {n.siblingIndex + 1} of {n.siblingCount}</span></span> : null}
      {foreign ? <span className="tree-from mono" style={{ borderColor: deviceColour(n.device) }}>from {n.device.slice(0, 8)}</span> : null}
      {n.agentDevice !== undefined && n.agentDevice !== n.device ? <span className="tree-from mono" style={{ borderColor: deviceColour(n.agentDevice) }}>answered by {n.agentDevice.slice(0, 8)}</span> : null}
      <span className="tree-count">{n.entries}<span className="sr-only"> entries</span></span>
      {/* a pointer shortcut; keyboard users have C and the buttons under the tree */}
      <button type="button" className="tree-continue" tabIndex={-1} aria-hidden="true" onClick={e => { e.stopPropagation(); onContinue() }}>Continue</button>
    </div>
  )
}
