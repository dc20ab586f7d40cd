// "Import session…": a Pi or Claude Code session file (JSONL) chosen by the person, sent whole
// to conversation.import; the new conversation opens, and what was skipped is said.
import { useRef, useState, type JSX } from 'react'
import { importTooLarge, MAX_IMPORT_CHARS } from '../../shared/api/import-limit'
import { errorText, useApi } from '../api-context'

export function ImportSession ({ disabled, onImported }: { disabled: boolean; onImported: (id: string) => void }): JSX.Element {
  const client = useApi()
  const input = useRef<HTMLInputElement>(null)
  const [busy, setBusy] = useState(false)
  const [outcome, setOutcome] = useState<{ error: boolean; text: string; problems: string[] } | undefined>()

  const chosen = async (file: File): Promise<void> => {
    setBusy(true)
    setOutcome(undefined)
    try {
      // refused unread when even at 4 bytes a character it could not fit
      const large = file.size > 4 * MAX_IMPORT_CHARS ? importTooLarge(file.size, file.name) : undefined
      const text = large === undefined ? await file.text() : ''
      const refused = large ?? importTooLarge(text.length, file.name) ?? tooLargeToSend(text, file.name)
      if (refused !== undefined) { setOutcome({ error: true, text: refused, problems: [] }); return }
      const made = await client.call('conversation.import', { format: 'auto', text })
      setOutcome({ error: false, text: `Imported ${made.entries} entries of a ${made.format === 'pi' ? 'Pi' : 'Claude Code'} session${made.problems.length > 0 ? '; some lines were not:' : '.'}`, problems: made.problems })
      onImported(made.id)
    } catch (err) {
      setOutcome({ error: true, text: `Not imported: ${errorText(err)}`, problems: [] })
    } finally {
      setBusy(false)
      if (input.current !== null) input.current.value = ''
    }
  }

  return (
    <div className="import-session">
      <button type="button" disabled={disabled || busy} onClick={() => input.current?.click()}>{busy ? 'Importing…' : 'Import session…'}</button>
      <input
        ref={input}
        type="file"
        accept=".jsonl,.json,application/jsonl,application/x-ndjson,text/plain"
        aria-label="Session file to import (Pi or Claude Code, JSONL)"
        hidden
        onChange={e => { const f = e.target.files?.[0]; if (f !== undefined) chosen(f).catch(() => undefined) }}
      />
      {outcome !== undefined
        ? (
          <div className={outcome.error ? 'import-outcome error' : 'import-outcome'} role={outcome.error ? 'alert' : 'status'}>
            <span>{outcome.text}</span>
            {outcome.problems.length > 0 ? <ul>{outcome.problems.map((p, i) => <li key={i}>{p}</li>)}</ul> : null}
            <button type="button" aria-label="Dismiss" onClick={() => setOutcome(undefined)}>×</button>
          </div>
          )
        : null}
    </div>
  )
}

/** The web server takes API messages of up to 8 MiB (web-server.ts): text far from ASCII can pass the character limit and not that one. */
const MAX_REQUEST_BYTES = 7.5 * 1024 * 1024

function tooLargeToSend (text: string, name: string): string | undefined {
  const bytes = new TextEncoder().encode(JSON.stringify(text)).length
  return bytes <= MAX_REQUEST_BYTES ? undefined : `${name} is ${(bytes / 1024 / 1024).toFixed(1)} MiB as a request; up to 7.5 MiB can be sent`
}
