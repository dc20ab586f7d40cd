import { useId, type JSX } from 'react'
import type { AgentStatusDto } from '../../shared/api/api'
import { placeView } from './agent-place'

export interface AgentBarProps {
  status: AgentStatusDto | undefined
  /** why the status could not be read */
  error: string | undefined
  /** moves the agent here (the Resume button, like `/resume`) */
  onResume: () => void
  resuming: boolean
  onAutoRevival: (on: boolean) => void
  /** the state asked for while the change is under way (the node's shows again after) */
  revivalAsked: boolean | undefined
  /** the node cannot be asked now */
  disabled: boolean
  /** an agent is at work on the conversation (the setting waits for the end of its turn) */
  working: boolean
}

/** Under the chat's title: where the agent runs, healing, Resume, auto-revival, and how it moved. */
export function AgentBar ({ status, error, onResume, resuming, onAutoRevival, revivalAsked, disabled, working }: AgentBarProps): JSX.Element {
  const hintId = useId()
  if (status === undefined) {
    return (
      <section className="agent-bar" aria-label="Where the agent runs">
        <span className="agent-place muted" role="status">{error !== undefined ? `Agent: could not tell where it runs (${error})` : 'Agent: …'}</span>
      </section>
    )
  }
  const v = placeView(status)
  // An agent waiting for another device to hold its step may be let go by turning auto-revival off.
  const canSwitch = !working || (status.waiting !== null && status.autoRevival)
  return (
    <section className="agent-bar" aria-label="Where the agent runs">
      <div className="agent-where" role="status">
        <span className={`agent-place ${v.tone}`}>{v.text}</span>
        {v.waiting !== undefined ? <span className="agent-waiting">{v.waiting}</span> : null}
        {v.healing.map(h => <span key={h} className="agent-healing">{h}</span>)}
      </div>
      {v.canResume
        ? <button type="button" className="agent-resume" onClick={onResume} disabled={resuming || disabled} title="Run the agent on this device from now on (or type /resume); the other device's agent stops at its next step">{resuming ? 'Resuming…' : 'Resume here'}</button>
        : null}
      <label className="check-label agent-revival">
        <input
          type="checkbox"
          role="switch"
          checked={revivalAsked ?? status.autoRevival}
          disabled={revivalAsked !== undefined || disabled || !canSwitch}
          aria-describedby={hintId}
          onChange={e => onAutoRevival(e.target.checked)}
        />
        Auto-revival
      </label>
      <span id={hintId} className="sr-only">
        {!canSwitch
          ? 'Can be changed when the agent has finished its turn.'
          : 'When the device running the agent stops responding, a connected device takes it over.'}
      </span>
      {status.moves.length > 0
        ? (
          <details className="agent-moves">
            <summary>Moves ({status.moves.length})</summary>
            <ol>
              {status.moves.map(m => (
                <li key={m.id}><time dateTime={new Date(m.ts).toISOString()}>{new Date(m.ts).toLocaleString()}</time> {m.text}</li>
              ))}
            </ol>
          </details>
          )
        : null}
    </section>
  )
}
