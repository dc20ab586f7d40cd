// What the agent did between two user messages: its messages (with reasoning and usage), tool
// cards, lifecycle notices, and "Continue from here" under a turn that a later message follows.
import { memo, useState, type JSX } from 'react'
import type { ContinuePoint } from '../chat/continue-from'
import { formatCount } from '../common/format'
import { Markdown } from '../markdown/Markdown'
import { Forks } from './BranchSwitcher'
import { CompactionBlock } from './CompactionBlock'
import { ToolCard } from './ToolCard'
import type { TranscriptActions } from './transcript-actions'
import { withLiveStatus, type LiveToolStatus, type TranscriptItem, type Turn } from './transcript-items'

export const AgentTurn = memo(function AgentTurn ({ turn, toolOutput, toolStatus, continueAt, onContinue, ...actions }: {
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

const AgentItem = memo(function AgentItem ({ item, toolOutput, toolStatus, onSwitch, focusAt, onRetry, onFork, canSend }: { item: TranscriptItem; toolOutput: ReadonlyMap<string, string>; toolStatus: ReadonlyMap<string, LiveToolStatus> } & TranscriptActions): JSX.Element | null {
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
          <ReplyActions entry={item.id} model={item.model} onRetry={onRetry} onFork={onFork} canSend={canSend} />
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
      if (item.folded !== undefined) return <CompactionBlock item={item} folded={item.folded} forks={item.forks.length > 0 ? forks : null} />
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

/** Retry (optionally with another model) and Fork under a reply. */
function ReplyActions ({ entry, model, onRetry, onFork, canSend }: { entry: string; model: string | undefined } & Pick<TranscriptActions, 'onRetry' | 'onFork' | 'canSend'>): JSX.Element | null {
  const [asking, setAsking] = useState(false)
  const [other, setOther] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>()
  if (onRetry === undefined && onFork === undefined) return null
  const act = (p: Promise<void>): void => {
    setBusy(true)
    setError(undefined)
    p.then(() => { setAsking(false); setOther('') }, (err: unknown) => setError(err instanceof Error ? err.message : String(err))).finally(() => setBusy(false))
  }
  const retry = (m: string | undefined): void => { if (onRetry !== undefined) act(onRetry(entry, m)) }
  return (
    <div className="msg-actions reply-actions">
      {onRetry !== undefined
        ? <>
          <button type="button" className="link" disabled={!canSend || busy} onClick={() => retry(undefined)} aria-label="Retry this reply (a new branch)" title="Answer again from the same message; this reply stays as another branch">Retry</button>
          <button type="button" className="link" disabled={!canSend || busy} aria-expanded={asking} onClick={() => setAsking(v => !v)} aria-label="Retry with another model" title="Answer again with another model of this device's provider (this once)">Retry with…</button>
        </>
        : null}
      {onFork !== undefined
        ? <button type="button" className="link" disabled={busy} onClick={() => act(onFork(entry))} aria-label="Fork into a new conversation" title="A new conversation holding a copy of this branch up to here">Fork</button>
        : null}
      {asking
        ? (
          <form className="retry-model" onSubmit={e => { e.preventDefault(); if (other.trim() !== '') retry(other.trim()) }}>
            <input type="text" value={other} onChange={e => setOther(e.target.value)} placeholder={model ?? 'model'} aria-label="Model for the retry" autoFocus />
            <button type="submit" disabled={busy || other.trim() === '' || !canSend}>Retry</button>
          </form>
          )
        : null}
      {error !== undefined ? <p className="form-error" role="alert">{error}</p> : null}
    </div>
  )
}
