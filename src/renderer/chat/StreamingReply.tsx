// The reply being streamed, below the transcript: it alone re-renders per token (the rest of the
// chat waits for the entries that record it), and of it only the blocks still growing.
import { useLayoutEffect, useSyncExternalStore, type JSX } from 'react'
import type { ConversationStore } from './conversation-store'
import { StreamingMarkdown } from '../markdown/Markdown'

/** The reply being streamed: re-renders per token on its own, then keeps the end in view. */
export function StreamingReply ({ store, thinking, onFollow }: { store: ConversationStore; thinking: string; onFollow: () => void }): JSX.Element {
  const text = useSyncExternalStore(store.subscribe, store.streamingText)
  useLayoutEffect(onFollow, [text, thinking, onFollow])
  return (
    <section className="turn agent streaming" aria-label="Agent is writing" aria-busy="true">
      <article className="assistant">
        {thinking !== ''
          ? <details className="reasoning" open><summary>Thinking…</summary><div className="reasoning-text">{thinking}</div></details>
          : null}
        {text !== '' ? <StreamingMarkdown text={text} /> : null}
        <span className="caret" aria-hidden="true" />
      </article>
    </section>
  )
}
