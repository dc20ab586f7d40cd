// The conversation header's limits: this device's step limit per turn and token budget for the
// conversation (agent.configure's `limits`), beside what the budget has counted so far.
import { useCallback, useId, useRef, useState, type FormEvent, type JSX } from 'react'
import type { AgentLimitsDto } from '../../shared/api/api'
import { errorText, useApi } from '../api-context'
import { maxStepsOf, tokenBudgetOf } from '../settings/settings-form'
import { useDismiss } from '../common/use-dismiss'

const FROM: Record<AgentLimitsDto['maxStepsFrom'], string> = { conversation: 'set here', settings: 'from Settings', default: 'the default' }

export function LimitsMenu ({ conversation, disabled }: { conversation: string; disabled: boolean }): JSX.Element {
  const client = useApi()
  const menu = useRef<HTMLDetailsElement>(null)
  useDismiss(menu)
  const ids = { steps: useId(), budget: useId() }
  const [limits, setLimits] = useState<AgentLimitsDto | undefined>()
  const [steps, setSteps] = useState('')
  const [budget, setBudget] = useState('')
  const [error, setError] = useState<string | undefined>()
  const [busy, setBusy] = useState(false)
  const load = useCallback(() => {
    setError(undefined)
    client.call('agent.limits', { conversation }).then(l => {
      setLimits(l)
      setSteps(l.maxStepsFrom === 'conversation' ? String(l.maxSteps) : '')
      setBudget(l.tokenBudget !== undefined ? String(l.tokenBudget) : '')
    }, err => { setError(errorText(err)) })
  }, [client, conversation])
  const save = (e: FormEvent): void => {
    e.preventDefault()
    const s = maxStepsOf(steps)
    const b = tokenBudgetOf(budget)
    if (typeof s !== 'number') { setError(s.error); return }
    if (typeof b !== 'number') { setError(b.error); return }
    setBusy(true)
    // 0 clears: the Settings' step limit (or the default) and no budget apply again
    client.call('agent.configure', { conversation, limits: { maxSteps: s, tokenBudget: b } })
      .catch((err: unknown) => { setError(errorText(err)) })
      .finally(() => { setBusy(false); load() })
  }
  return (
    <details className="export-menu" ref={menu} onToggle={() => { if (menu.current?.open === true) load() }}>
      <summary className={disabled ? 'disabled' : undefined} aria-disabled={disabled}>Limits</summary>
      <form className="limits-form" aria-label="Limits of this conversation" onSubmit={save}>
        <label htmlFor={ids.steps}>Model steps per turn</label>
        <input id={ids.steps} inputMode="numeric" value={steps} onChange={e => setSteps(e.target.value)}
          placeholder={limits !== undefined && limits.maxStepsFrom !== 'conversation' ? `${limits.maxSteps} (${FROM[limits.maxStepsFrom]})` : ''} />
        <label htmlFor={ids.budget}>Token budget</label>
        <input id={ids.budget} inputMode="numeric" value={budget} onChange={e => setBudget(e.target.value)} placeholder="none" />
        {limits !== undefined ? <span className="field-note">This device’s agent has used {limits.tokensSpent.toLocaleString('en')} tokens here.</span> : null}
        {error !== undefined ? <p className="form-error" role="alert">{error}</p> : null}
        <button type="submit" className="primary" disabled={disabled || busy}>{busy ? 'Saving…' : 'Save limits'}</button>
      </form>
    </details>
  )
}
