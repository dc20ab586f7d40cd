import { useCallback, useEffect, useId, useRef, useState, type FormEvent, type JSX } from 'react'
import type { ApiMethods, SettingsDto } from '../../shared/api/api'
import { errorText, useApi } from '../api-context'
import { contextWindowOf, EMPTY_FORM, maxStepsOf, withLoaded, type ProviderChoice, type SettingsField, type SettingsForm } from './settings-form'

type Found = ApiMethods['settings.detect']['result']

/** Node settings: the model provider, its key, the default working directory; finds local servers. */
export function SettingsView ({ onClose, onSaved, autoDetect = false }: { onClose: () => void; onSaved?: (s: SettingsDto) => void; autoDetect?: boolean }): JSX.Element {
  const client = useApi()
  const [loaded, setLoaded] = useState<SettingsDto | undefined>()
  const [loadError, setLoadError] = useState<string | undefined>()
  const [form, setForm] = useState<SettingsForm>(EMPTY_FORM)
  const { provider, baseURL, model, apiKey, cwd, maxSteps, contextWindow } = form
  // The fields the user changed since the form was last filled: a late load must not undo them.
  const touched = useRef(new Set<SettingsField>())
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>()
  const [saved, setSaved] = useState(false)
  const [detecting, setDetecting] = useState(false)
  const [found, setFound] = useState<Found | undefined>()
  const [detectError, setDetectError] = useState<string | undefined>()
  const ids = { provider: useId(), baseURL: useId(), model: useId(), key: useId(), cwd: useId(), maxSteps: useId(), window: useId() }
  const headingRef = useRef<HTMLHeadingElement>(null)

  /** The user's own change of some fields. */
  const edit = useCallback((change: Partial<SettingsForm>) => {
    for (const f of Object.keys(change) as SettingsField[]) touched.current.add(f)
    setForm(f => ({ ...f, ...change }))
    setSaved(false)
  }, [])

  /** What the node stored (loaded, or saved): fills only what the user has not touched meanwhile. */
  const load = useCallback((s: SettingsDto) => {
    setLoaded(s)
    setForm(f => withLoaded(f, touched.current, s))
  }, [])

  const detect = useCallback(() => {
    setDetecting(true)
    setDetectError(undefined)
    client.call('settings.detect', {}).then(
      r => { setFound(r); setDetecting(false) },
      err => { setDetectError(errorText(err)); setDetecting(false) }
    )
  }, [client])

  useEffect(() => {
    headingRef.current?.focus()
    client.call('settings.get', {}).then(load, err => setLoadError(errorText(err)))
    if (autoDetect) detect()
  }, [client, load, autoDetect, detect])

  const submit = (e: FormEvent): void => {
    e.preventDefault()
    if (busy) return
    setBusy(true)
    setError(undefined)
    setSaved(false)
    const p: ApiMethods['settings.set']['params'] = { model: model.trim(), defaultCwd: cwd.trim() }
    if (provider === 'fake') p.provider = 'fake'
    else {
      p.provider = 'openai'
      p.baseURL = provider === 'compatible' ? baseURL.trim() : ''
      if (provider === 'compatible' && p.baseURL === '') { setBusy(false); setError('Enter the server’s base URL (for example http://127.0.0.1:11434/v1).'); return }
    }
    if (apiKey !== '') p.apiKey = apiKey
    const steps = maxStepsOf(maxSteps)
    if (typeof steps !== 'number') { setBusy(false); setError(steps.error); return }
    // sent only when changed: a default left as shown stays the default
    if (maxSteps.trim() !== String(loaded?.maxSteps)) p.maxSteps = steps
    const window = contextWindowOf(contextWindow)
    if (typeof window !== 'number') { setBusy(false); setError(window.error); return }
    if (contextWindow.trim() !== String(loaded?.contextWindow ?? '')) p.contextWindow = window
    // what is sent now is what the answer fills in; a change typed while it saves stays
    touched.current.clear()
    client.call('settings.set', p).then(
      s => { load(s); setBusy(false); setSaved(touched.current.size === 0); onSaved?.(s) },
      err => { setBusy(false); setError(errorText(err)) }
    )
  }

  const forgetKey = (): void => {
    setBusy(true)
    setError(undefined)
    client.call('settings.set', { apiKey: '' }).then(
      s => { setLoaded(s); setBusy(false); onSaved?.(s) },
      err => { setBusy(false); setError(errorText(err)) }
    )
  }

  const use = (server: Found[number], m: string | undefined): void => {
    edit({ provider: 'compatible', baseURL: server.baseURL, ...(m !== undefined ? { model: m } : {}) })
  }

  return (
    <section className="placeholder screen narrow" aria-labelledby="settings-heading"
      onKeyDown={e => { if (e.key === 'Escape') { e.preventDefault(); onClose() } }}>
      <div className="screen-head">
        <h2 id="settings-heading" ref={headingRef} tabIndex={-1}>Settings</h2>
        <button type="button" onClick={onClose}>Back to chat</button>
      </div>
      {loadError !== undefined
        ? <p className="form-error" role="alert">Could not load the settings: {loadError}</p>
        : loaded === undefined ? <p role="status">Loading the stored settings… (what you change meanwhile is kept)</p> : null}
      <form className="new-form screen-form" aria-label="Node settings" onSubmit={submit}>
        <label htmlFor={ids.provider}>Provider</label>
        <select id={ids.provider} value={provider} onChange={e => edit({ provider: e.target.value as ProviderChoice })}>
          <option value="openai">OpenAI</option>
          <option value="compatible">OpenAI-compatible server</option>
          <option value="fake">Fake (scripted, for testing)</option>
        </select>
        {provider === 'compatible'
          ? (
            <>
              <label htmlFor={ids.baseURL}>Base URL</label>
              <input id={ids.baseURL} className="mono" value={baseURL} onChange={e => edit({ baseURL: e.target.value })} placeholder="http://127.0.0.1:11434/v1" spellCheck={false} autoCapitalize="off" autoCorrect="off" />
            </>
            )
          : null}
        <label htmlFor={ids.model}>Model</label>
        <input id={ids.model} value={model} onChange={e => edit({ model: e.target.value })} placeholder="the provider’s default" spellCheck={false} autoCapitalize="off" autoCorrect="off" />
        {provider !== 'fake'
          ? (
            <>
              <label htmlFor={ids.key}>API key</label>
              <input id={ids.key} type="password" autoComplete="off" value={apiKey} onChange={e => edit({ apiKey: e.target.value })}
                placeholder={loaded?.apiKeySet === true ? 'a key is stored; type to replace it' : provider === 'compatible' ? 'optional for local servers' : 'sk-…'} aria-describedby={`${ids.key}-state`} />
              <span id={`${ids.key}-state`} className="field-note">
                {loaded?.apiKeySet === true
                  ? <>A key is stored {loaded.apiKeyStorage} (it is never shown). <button type="button" className="link" onClick={forgetKey} disabled={busy}>Forget the stored key</button></>
                  : loaded !== undefined ? `No key is stored. A key you enter is kept ${loaded.apiKeyStorage}.` : 'No key is stored.'}
              </span>
            </>
            )
          : null}
        <label htmlFor={ids.cwd}>Default working directory</label>
        <input id={ids.cwd} className="mono" value={cwd} onChange={e => edit({ cwd: e.target.value })} placeholder="/home/you/projects" spellCheck={false} autoCapitalize="off" autoCorrect="off" />
        <label htmlFor={ids.maxSteps}>Model steps per turn</label>
        <input id={ids.maxSteps} inputMode="numeric" value={maxSteps} onChange={e => edit({ maxSteps: e.target.value })} placeholder="the default" aria-describedby={`${ids.maxSteps}-note`} />
        <span id={`${ids.maxSteps}-note`} className="field-note">The agent stops after this many model steps in one turn and says so; a message (or resume) goes on.</span>
        <label htmlFor={ids.window}>Context window (tokens)</label>
        <input id={ids.window} inputMode="numeric" value={contextWindow} onChange={e => edit({ contextWindow: e.target.value })} placeholder="what the server says" aria-describedby={`${ids.window}-note`} />
        <span id={`${ids.window}-note`} className="field-note">When a conversation would no longer fit, older turns are summarised. Empty: the size the model server reports, else a known model’s, else 8192.</span>
        {error !== undefined ? <p className="form-error" role="alert">{error}</p> : null}
        {saved ? <p role="status">Saved.</p> : null}
        <div className="form-actions">
          <button type="submit" className="primary" disabled={busy || loaded === undefined}>{busy ? 'Saving…' : 'Save'}</button>
        </div>
      </form>
      <section aria-label="Local servers">
        <button type="button" onClick={detect} disabled={detecting}>{detecting ? 'Looking…' : 'Look for a local server'}</button>
        {detectError !== undefined ? <p className="form-error" role="alert">{detectError}</p> : null}
        {found !== undefined && !detecting
          ? found.length === 0
            ? <p role="status">No local server answered (Ollama, llama.cpp, LM Studio, vLLM). Start one, or enter an OpenAI key.</p>
            : (
              <ul aria-label="Local servers found" className="plain-list">
                {found.flatMap(s => (s.models.length > 0 ? s.models : [undefined]).map(m => (
                  <li key={`${s.baseURL} ${m ?? ''}`}>
                    <button type="button" className="link" onClick={() => use(s, m)}>
                      Use {s.name}{m !== undefined ? ` · ${m}` : ''} ({s.baseURL})
                    </button>
                  </li>
                )))}
              </ul>
              )
          : null}
      </section>
    </section>
  )
}
