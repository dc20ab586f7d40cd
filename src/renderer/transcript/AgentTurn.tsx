// What the agent did between two user messages: its messages (with reasoning and usage), tool
// cards, lifecycle notices, and "Continue from here" under a turn that a later message follows.
import { memo, type JSX } from 'react'
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
