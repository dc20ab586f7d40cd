// The conversation header's export menu: the shown branch as Markdown, or every entry as JSON
// (as `arbor export` writes them: the same shared code, read from a fresh conversation.open).
import { useCallback, useRef, useState, type JSX } from 'react'
import { conversationDag, conversationJson, exportFileName, transcriptMarkdown } from '../../shared/conversation/conversation-export'
import { errorText, useApi } from '../api-context'
import { downloadText } from '../common/download'
import { useDismiss } from '../common/use-dismiss'

export function ExportMenu ({ conversation, leaf, disabled, onError }: { conversation: string; /** the tip of the branch shown */ leaf: string | undefined; disabled: boolean; onError: (text: string) => void }): JSX.Element {
  const client = useApi()
  const menu = useRef<HTMLDetailsElement>(null)
  useDismiss(menu)
  const [busy, setBusy] = useState(false)
  const run = useCallback(async (format: 'md' | 'json') => {
    if (menu.current !== null) menu.current.open = false
    setBusy(true)
    try {
      const dag = conversationDag(await client.call('conversation.open', { id: conversation }))
      // the branch shown here, if this device holds it joined; else the one the node would show
      const tip = leaf !== undefined && dag.isJoined(leaf) ? leaf : undefined
      const name = exportFileName(dag, format)
      if (format === 'json') downloadText(name, 'application/json', JSON.stringify(conversationJson(dag), null, 2) + '\n')
      else downloadText(name, 'text/markdown', transcriptMarkdown(dag, dag.branch(tip)))
    } catch (err) {
      onError(`Could not export: ${errorText(err)}`)
    } finally {
      setBusy(false)
    }
  }, [client, conversation, leaf, onError])
  return (
    <details className="export-menu" ref={menu}>
      <summary className={disabled || busy ? 'disabled' : undefined} aria-disabled={disabled || busy}>Export</summary>
      <div className="export-items" role="menu">
        <button type="button" role="menuitem" disabled={disabled || busy} onClick={() => { run('md').catch(() => undefined) }}>Export branch as Markdown</button>
        <button type="button" role="menuitem" disabled={disabled || busy} onClick={() => { run('json').catch(() => undefined) }}>Export conversation as JSON</button>
      </div>
    </details>
  )
}
