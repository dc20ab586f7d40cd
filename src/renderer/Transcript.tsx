import { memo, useEffect, useId, useRef, useState, type JSX, type KeyboardEvent } from 'react'
import type { Fork } from './branch-nav'
import type { ContinuePoint } from './continue-from'
import { formatCount } from './conversation-list'
import { Markdown } from './Markdown'
import type { ToolCallView, ToolStatus, TranscriptItem, Turn } from './transcript'

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
  /** agent turn id → where "continue from here" attaches (turns followed by another message) */
  continueAt?: ReadonlyMap<string, ContinuePoint>
  onContinue?: (at: ContinuePoint) => void
  /** how running tools stand per the agent's live events (before their results are recorded) */
  toolStatus?: ReadonlyMap<string, LiveToolStatus>
}

type LiveToolStatus = 'running' | 'ok' | 'error'
const NO_STATUS: ReadonlyMap<string, LiveToolStatus> = new Map()

export function Transcript ({ turns, toolOutput, continueAt, onContinue, toolStatus = NO_STATUS, ...actions }: TranscriptProps): JSX.Element {
  return (
    <div className="transcript" role="log" aria-label="Messages on this branch" aria-live="polite">
      {turns.map(turn => turn.role === 'user'
        ? <UserTurn key={turn.id} item={turn.items[0] as Extract<TranscriptItem, { kind: 'user' }>} {...actions} />
        : (
          <section key={turn.id} className="turn agent" aria-label="Agent">
            {turn.items.map(item => <AgentItem key={item.id} item={item} toolOutput={toolOutput} toolStatus={toolStatus} {...actions} />)}
            <ContinueAction at={continueAt?.get(turn.id)} onContinue={onContinue} />
          </section>
          ))}
    </div>
  )
}

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
  const [open, setOpen] = useState<boolean | undefined>(undefined)
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
