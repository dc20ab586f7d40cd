// A user message in the transcript: its bubble, its forks, and "Edit" (resend as a new branch).
import { memo, useEffect, useRef, useState, type JSX } from 'react'
import { Forks } from './BranchSwitcher'
import type { TranscriptActions } from './transcript-actions'
import type { TranscriptItem } from './transcript-items'

export const UserTurn = memo(function UserTurn ({ item, onSwitch, onEdit, focusAt, canSend }: { item: Extract<TranscriptItem, { kind: 'user' }> } & TranscriptActions): JSX.Element {
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
