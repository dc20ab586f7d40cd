// The message box: Enter sends, commands typed alone (`/resume`) are carried out, Stop while
// this device's agent works, and the note when the message continues from an earlier turn.
import { useLayoutEffect, useState, type JSX, type RefObject } from 'react'
import { commandHelp, parseCommand, type CommandName } from './agent-place'
import type { ContinuePoint } from './continue-from'

export function Composer ({ textareaRef, canSend, connected, running, queued = 0, busy: busyElsewhere, continueFrom, branches, onCancelContinue, onSend, onStop, onCommand, onUnknownCommand }: {
  textareaRef: RefObject<HTMLTextAreaElement | null>
  canSend: boolean
  connected: boolean
  /** this device's agent runs (it can be stopped here; a message sent waits for its turn to end) */
  running: boolean
  /** how many messages wait for the end of this device's agent's turn */
  queued?: number
  /** why sending waits, when another device's agent runs */
  busy?: string | undefined
  /** where the message will attach, when not at the tip */
  continueFrom: ContinuePoint | undefined
  /** whether sending there starts a new branch (the point already has a continuation) */
  branches: boolean
  onCancelContinue: () => void
  onSend: (text: string) => Promise<void>
  onStop: () => void
  /** a command typed alone (`/resume`): carried out instead of sending */
  onCommand: (name: CommandName, text?: string) => Promise<void>
  onUnknownCommand: (name: string) => void
}): JSX.Element {
  const [text, setText] = useState('')
  const [busy, setBusy] = useState(false)

  useLayoutEffect(() => {
    const el = textareaRef.current
    if (el === null) return
    el.style.height = 'auto'
    el.style.height = `${Math.min(el.scrollHeight, 240)}px`
  }, [text, textareaRef])

  const submit = (): void => {
    const t = text
    const command = parseCommand(t)
    if (command?.kind === 'unknown') { onUnknownCommand(command.name); return }
    // a command works whenever the node is there (/resume: even while another device's agent works)
    if (command === null ? !canSend : !connected) return
    if (busy || t.trim() === '') return
    setBusy(true)
    setText('')
    ;(command !== null ? onCommand(command.name, command.text) : onSend(t)).then(
      () => setBusy(false),
      () => { setBusy(false); setText(cur => cur === '' ? t : cur) }
    )
  }

  const cancelContinue = (): void => {
    onCancelContinue()
    textareaRef.current?.focus()
  }

  const hint = !connected
    ? 'Not connected to the node'
    : running
      ? queued > 0
        ? `${queued === 1 ? 'One message waits' : `${queued} messages wait`} for the agent's turn to end; Enter queues another, Stop interrupts`
        : 'The agent is working: Enter queues your message for when its turn ends, Stop interrupts'
      : busyElsewhere ?? 'Enter to send, Shift+Enter for a new line, / for commands'
  const help = commandHelp(text)
  return (
    <form
      className="composer"
      aria-label="Message"
      onSubmit={e => { e.preventDefault(); submit() }}
      onKeyDown={e => { if (e.key === 'Escape' && continueFrom !== undefined) { e.preventDefault(); cancelContinue() } }}
    >
      {continueFrom !== undefined
        ? (
          <div className="continue-note" role="status">
            <span>Continuing from “{continueFrom.label}” — {branches ? 'new branch' : 'continues that branch'}</span>
            <button type="button" className="link" onClick={cancelContinue} aria-label="Cancel continuing from there (Esc)">Cancel</button>
          </div>
          )
        : null}
      {help !== undefined ? <div className="command-help" role="status">{help}</div> : null}
      <textarea
        ref={textareaRef}
        value={text}
        rows={1}
        placeholder={continueFrom !== undefined && branches ? 'Message for the new branch…' : 'Message the agent…'}
        aria-label="Message"
        aria-describedby="composer-hint"
        onChange={e => setText(e.target.value)}
        onKeyDown={e => {
          if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) { e.preventDefault(); submit() }
        }}
      />
      <div className="composer-side">
        {running
          ? <button type="button" className="danger" onClick={onStop} aria-label="Stop the agent">Stop</button>
          : <button type="submit" className="primary" disabled={(help !== undefined ? !connected : !canSend) || busy || text.trim() === ''} aria-label="Send message">Send</button>}
      </div>
      <div id="composer-hint" className="composer-hint" role={queued > 0 ? 'status' : undefined}>{hint}</div>
    </form>
  )
}
