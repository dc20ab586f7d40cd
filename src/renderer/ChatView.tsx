import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, useSyncExternalStore, type JSX, type RefObject } from 'react'
import { errorText, useApi } from './api-context'
import { formatCount } from './conversation-list'
import type { ConversationStore } from './conversation-store'
import { Markdown } from './Markdown'
import { Transcript } from './Transcript'
import { TreeView } from './TreeView'
import { buildTranscript, groupTurns } from './transcript'
import { nearBottom } from './transcript-window'

export function ChatView ({ store, connected }: { store: ConversationStore; connected: boolean }): JSX.Element {
  const client = useApi()
  // not per streamed token: StreamingReply alone re-renders for those
  const snap = useSyncExternalStore(store.subscribe, store.view)
  const { dag, selected, running } = snap
  const size = dag.size
  // rebuilt when entries, the selection or the running state change; not per streamed token
  // (dag is mutable: its size stands for its contents)
  const branch = useMemo(() => dag.branch(selected), [dag, size, selected])
  const items = useMemo(() => buildTranscript(branch, id => dag.children(id), { running }), [branch, dag, running])
  const turns = useMemo(() => groupTurns(items), [items])
  const headCount = useMemo(() => dag.headIds().length, [dag, size])
  const runningTool = useMemo(() => items.some(i => (i.kind === 'assistant' ? i.tools : i.kind === 'tool' ? [i.tool] : []).some(t => t.status === 'running' || t.status === 'pending')), [items])
  const tip = branch[branch.length - 1]
  const [error, setError] = useState<string | undefined>()
  const [focusAt, setFocusAt] = useState<{ id: string; dir: -1 | 1 } | undefined>()
  const scrollRef = useRef<HTMLDivElement>(null)
  const stick = useRef(true)
  const composerRef = useRef<HTMLTextAreaElement>(null)
  const [showTree, setShowTree] = useState(false)

  const send = useCallback(async (text: string, parent: string | undefined): Promise<void> => {
    const params: { conversation: string; text: string; parent?: string } = { conversation: store.id, text }
    if (parent !== undefined) params.parent = parent
    stick.current = true
    const r = await client.call('message.send', params)
    store.addEntries([r.entry])
    store.select(r.entry.id)
  }, [client, store])

  const onSwitch = useCallback((entry: string, dir: -1 | 1) => {
    store.select(entry)
    setFocusAt({ id: entry, dir })
    client.call('conversation.select', { id: store.id, entry }).catch(err => setError(`Could not save the branch choice: ${errorText(err)}`))
  }, [client, store])

  // a row picked in the tree: show its branch, at that turn, and go back to the transcript
  const [reveal, setReveal] = useState<{ id: string } | undefined>()
  const onPick = useCallback((entry: string) => {
    store.select(entry)
    setShowTree(false)
    stick.current = false
    setReveal({ id: entry })
    client.call('conversation.select', { id: store.id, entry }).catch(err => setError(`Could not save the branch choice: ${errorText(err)}`))
  }, [client, store])

  const stop = useCallback(() => {
    client.call('agent.cancel', { conversation: store.id }).catch(err => setError(`Could not stop the agent: ${errorText(err)}`))
  }, [client, store])

  // Follow the bottom while the reader is there; leave them alone when they scrolled up.
  const onScroll = (): void => {
    const el = scrollRef.current
    if (el !== null && el.clientHeight > 0) stick.current = nearBottom(el.scrollHeight, el.scrollTop, el.clientHeight)
  }
  const follow = useCallback((): void => {
    const el = scrollRef.current
    if (el !== null && stick.current) el.scrollTop = el.scrollHeight
  }, [])
  useLayoutEffect(follow, [snap, turns, follow])

  useEffect(() => { composerRef.current?.focus() }, [store.id])

  const canSend = connected && !running

  return (
    <div className="chat">
      <header className="chat-head">
        <div className="chat-title">
          <h2>{snap.title || 'Untitled'}</h2>
          {snap.cwd !== undefined ? <span className="cwd mono" title="working directory">{snap.cwd}</span> : null}
        </div>
        <div className="chat-meta">
          {running ? <span className="badge running" role="status"><span className="spinner small" aria-hidden="true" />agent running</span> : null}
          {headCount > 1 ? <span className="badge">{headCount} branches</span> : null}
          <button type="button" className={showTree ? 'tree-toggle on' : 'tree-toggle'} aria-label="Show the conversation tree" aria-pressed={showTree} onClick={() => setShowTree(v => !v)}>Tree</button>
          <span className="usage" aria-label={`Tokens used: ${snap.usage.input} input, ${snap.usage.output} output`}>
            {formatCount(snap.usage.input)} in · {formatCount(snap.usage.output)} out tokens
          </span>
        </div>
      </header>
      {showTree
        ? <TreeView dag={dag} size={size} selected={selected} onPick={onPick} onClose={() => setShowTree(false)} />
        : null}
      <div className="scroll" ref={scrollRef} onScroll={onScroll} hidden={showTree}>
        {turns.length === 0
          ? <div className="placeholder small"><p>Send a message to start.{snap.cwd !== undefined ? <> The agent works in <code>{snap.cwd}</code>.</> : null}</p></div>
          : null}
        <Transcript turns={turns} toolOutput={snap.toolOutput} onSwitch={onSwitch} onEdit={send} focusAt={focusAt} canSend={canSend} scrollRef={scrollRef} stickRef={stick} onFollow={follow} reveal={reveal} />
        {running && snap.hasStreaming
          ? <StreamingReply store={store} onFollow={follow} />
          : running && !runningTool
            ? <div className="working" role="status"><span className="spinner small" aria-hidden="true" />Working…</div>
            : !running && items[items.length - 1]?.kind === 'user'
              ? <div className="working">No reply on this branch.</div>
              : null}
      </div>
      {error !== undefined
        ? <div className="chat-error" role="alert"><span>{error}</span><button type="button" aria-label="Dismiss error" onClick={() => setError(undefined)}>×</button></div>
        : null}
      <Composer
        textareaRef={composerRef}
        canSend={canSend}
        connected={connected}
        running={running}
        onSend={text => send(text, tip?.id).catch(err => { setError(`Not sent: ${errorText(err)}`); throw err })}
        onStop={stop}
      />
    </div>
  )
}

/** The reply being streamed: re-renders per token on its own, then keeps the end in view. */
function StreamingReply ({ store, onFollow }: { store: ConversationStore; onFollow: () => void }): JSX.Element {
  const text = useSyncExternalStore(store.subscribe, store.streamingText)
  useLayoutEffect(onFollow, [text, onFollow])
  return (
    <section className="turn agent streaming" aria-label="Agent is writing" aria-busy="true">
      <article className="assistant"><Markdown text={text} /><span className="caret" aria-hidden="true" /></article>
    </section>
  )
}

function Composer ({ textareaRef, canSend, connected, running, onSend, onStop }: {
  textareaRef: RefObject<HTMLTextAreaElement | null>
  canSend: boolean
  connected: boolean
  running: boolean
  onSend: (text: string) => Promise<void>
  onStop: () => void
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
    if (!canSend || busy || t.trim() === '') return
    setBusy(true)
    setText('')
    onSend(t).then(
      () => setBusy(false),
      () => { setBusy(false); setText(cur => cur === '' ? t : cur) }
    )
  }

  const hint = !connected ? 'Not connected to the node' : running ? 'The agent is working; stop it to send' : 'Enter to send, Shift+Enter for a new line'
  return (
    <form className="composer" aria-label="Message" onSubmit={e => { e.preventDefault(); submit() }}>
      <textarea
        ref={textareaRef}
        value={text}
        rows={1}
        placeholder="Message the agent…"
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
          : <button type="submit" className="primary" disabled={!canSend || busy || text.trim() === ''} aria-label="Send message">Send</button>}
      </div>
      <div id="composer-hint" className="composer-hint">{hint}</div>
    </form>
  )
}
