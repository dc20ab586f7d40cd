// The chat screen: the conversation's title and usage, the agent bar, the transcript (or the
// tree), what the agent is doing below it, and the message box; it sends, resumes and switches.
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, useSyncExternalStore, type JSX } from 'react'
import { branchName, branchNameKey } from '../../shared/conversation/branch-name'
import type { RemoteAgentDto } from '../../shared/api/api'
import type { Entry } from '../../shared/entry/entry'
import { AgentBar } from './AgentBar'
import { sentText, stillWaiting, unknownCommandText, type CommandName } from './agent-place'
import { errorText, useApi } from '../api-context'
import { Composer } from './Composer'
import { ExportMenu } from './ExportMenu'
import { LimitsMenu } from './LimitsMenu'
import { continuePoints, type ContinuePoint } from './continue-from'
import { contextUsed } from './context-used'
import { formatCount, placesText } from '../common/format'
import type { ConversationStore } from './conversation-store'
import { StreamingReply } from './StreamingReply'
import { Transcript } from '../transcript/Transcript'
import { warmTreeLayout } from '../tree/layout-cache'
import { TreeView } from '../tree/TreeView'
import { buildTranscript, groupTurns } from '../transcript/transcript-items'
import { nearBottom } from '../transcript/transcript-window'
import { useAgentStatus } from './use-agent-status'

export function ChatView ({ store, connected, device, onOpen, titleOf, landing }: {
  store: ConversationStore
  connected: boolean
  /** this device's key */
  device?: string | undefined
  /** shows another conversation (a fork made here, the source of this one), at `entry`'s branch if given */
  onOpen?: ((conversation: string, entry?: string) => void) | undefined
  /** a conversation's title as the list has it (undefined: not held here) */
  titleOf?: ((conversation: string) => string | undefined) | undefined
  /** an entry a search landed on (a new seq each time): shown in its branch, scrolled to, highlighted */
  landing?: { entry: string; seq: number } | undefined
}): JSX.Element {
  const client = useApi()
  // not per streamed token: StreamingReply alone re-renders for those
  const snap = useSyncExternalStore(store.subscribe, store.view)
  const { dag, selected, running } = snap
  const placement = useAgentStatus(client, store.id, connected)
  const names = placement.status?.names
  // lifecycle lines name devices as the node knows them
  const nameOf = useCallback((d: string) => names?.[d] ?? `device ${d.slice(0, 8)}`, [names])
  const size = dag.size
  // rebuilt when entries, the selection or the running state change; not per streamed token
  // (dag is mutable: its size stands for its contents)
  const branch = useMemo(() => dag.branch(selected), [dag, size, selected])
  const context = useMemo(() => contextUsed(branch), [branch])
  // the window this device's agent works with: asked again after each run (settings may have changed)
  const [contextWindow, setContextWindow] = useState<number | undefined>()
  useEffect(() => {
    if (running) return
    let live = true
    client.call('conversation.window', { conversation: store.id }).then(w => { if (live) setContextWindow(w?.tokens) }, () => { if (live) setContextWindow(undefined) })
    return () => { live = false }
  }, [client, store.id, running])
  const items = useMemo(() => buildTranscript(branch, id => dag.children(id), { running, self: device, name: nameOf, branchName: id => branchName(dag.meta(branchNameKey(id))?.value) }), [branch, dag, running, device, nameOf])
  const turns = useMemo(() => groupTurns(items), [items])
  const headCount = useMemo(() => store.headCount(), [store, size, snap.window])
  const runningTool = useMemo(() => items.some(i => (i.kind === 'assistant' ? i.tools : i.kind === 'tool' ? [i.tool] : []).some(t => t.status === 'running' || t.status === 'pending')), [items])
  const tip = branch[branch.length - 1]
  const [error, setError] = useState<string | undefined>()
  const [focusAt, setFocusAt] = useState<{ id: string; dir: -1 | 1 } | undefined>()
  const scrollRef = useRef<HTMLDivElement>(null)
  const stick = useRef(true)
  const composerRef = useRef<HTMLTextAreaElement>(null)
  const [showTree, setShowTree] = useState(false)
  const treeToggleRef = useRef<HTMLButtonElement>(null)
  // Opened as a window (the end of the shown branch): the rest comes when the view needs it —
  // the tree, the start of the branch, another branch — or, for a conversation small enough,
  // once the window is drawn.
  const windowed = snap.window !== undefined
  const loadAll = useCallback((): void => {
    store.loadAll().catch(err => setError(`Could not load the whole conversation: ${errorText(err)}`))
  }, [store])
  useEffect(() => {
    if (!store.loadsInBackground) return
    const t = setTimeout(loadAll, 0)
    return () => clearTimeout(t)
  }, [store, loadAll])
  useEffect(() => { if (showTree && windowed) loadAll() }, [showTree, windowed, loadAll])
  // the whole conversation held and the tree not shown: its layout is made in idle time, ready for a click
  useEffect(() => (showTree || windowed ? undefined : warmTreeLayout(dag, size, selected)), [showTree, windowed, dag, size, selected])
  // "continue from here": the next message attaches there instead of at the tip
  const [continueFrom, setContinueFrom] = useState<ContinuePoint | undefined>()
  const continueAt = useMemo(() => continuePoints(turns), [turns])
  // the last message handed to another device's agent, while nothing follows it
  const [sent, setSent] = useState<{ entry: string; agent: RemoteAgentDto } | undefined>()
  const [resuming, setResuming] = useState(false)
  const [revivalAsked, setRevivalAsked] = useState<boolean | undefined>()

  const shown = useCallback((r: { entry: Entry; agent?: RemoteAgentDto }): void => {
    store.addEntries([r.entry])
    store.select(r.entry.id)
    setSent(r.agent !== undefined ? { entry: r.entry.id, agent: r.agent } : undefined)
  }, [store])

  const send = useCallback(async (text: string, parent: string | undefined): Promise<void> => {
    const params: { conversation: string; text: string; parent?: string } = { conversation: store.id, text }
    if (parent !== undefined) params.parent = parent
    stick.current = true
    shown(await client.call('message.send', params))
  }, [client, store, shown])

  // Sent while this device's agent works: the node holds it and writes it after the turn.
  const [queued, setQueued] = useState(0)
  const queue = useCallback(async (text: string): Promise<void> => {
    stick.current = true
    const r = await client.call('message.queue', { conversation: store.id, text })
    if ('queued' in r) setQueued(r.queued)
    else shown(r)
  }, [client, store, shown])

  /** Moves the agent to this device (`/resume`, the Resume button). */
  const resume = useCallback(async (): Promise<void> => {
    setResuming(true)
    stick.current = true
    try {
      await client.call('agent.resume', { conversation: store.id })
      placement.refresh()
    } catch (err) {
      setError(`Not resumed: ${errorText(err)}`)
      throw err
    } finally {
      setResuming(false)
    }
  }, [client, store, placement.refresh])

  /** `/compact [focus]`: the branch shown is summarised before its latest message (a compaction entry at its tip). */
  const compact = useCallback(async (focus: string | undefined): Promise<void> => {
    stick.current = true
    try {
      await client.call('conversation.compact', { conversation: store.id, ...(focus !== undefined ? { focus } : {}) })
    } catch (err) {
      setError(`Not compacted: ${errorText(err)}`)
      throw err
    }
  }, [client, store])

  /** Answers again from what the reply answered: a new branch beside it, which the view follows. */
  const retry = useCallback(async (entry: string, model: string | undefined): Promise<void> => {
    stick.current = true
    const r = await client.call('message.retry', { conversation: store.id, entry, ...(model !== undefined ? { model } : {}) })
    store.select(r.from)
  }, [client, store])

  /** Copies the branch up to `entry` into a new conversation and shows it. */
  const fork = useCallback(async (entry: string): Promise<void> => {
    const made = await client.call('conversation.fork', { conversation: store.id, entry })
    onOpen?.(made.id)
  }, [client, store, onOpen])

  const runCommand = useCallback((name: CommandName, text?: string): Promise<void> => {
    switch (name) {
      case '/resume': return resume()
      case '/compact': return compact(text)
    }
  }, [resume, compact])

  const setAutoRevival = useCallback((on: boolean) => {
    setRevivalAsked(on)
    client.call('agent.autoRevival', { conversation: store.id, on }).then(
      s => placement.accept(s),
      err => setError(`Auto-revival not changed: ${errorText(err)}`)
    ).finally(() => setRevivalAsked(undefined))
  }, [client, store, placement.accept])

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
    // the tree had focus and is gone: the message box is where one goes next
    requestAnimationFrame(() => composerRef.current?.focus())
    client.call('conversation.select', { id: store.id, entry }).catch(err => setError(`Could not save the branch choice: ${errorText(err)}`))
  }, [client, store])

  // a search hit: its branch shown, its turn scrolled to and outlined until the next one
  const [hitTurn, setHitTurn] = useState<string | undefined>()
  useEffect(() => {
    if (landing === undefined || !dag.isJoined(landing.entry)) return
    store.select(landing.entry)
    setShowTree(false)
    stick.current = false
    setReveal({ id: landing.entry })
  }, [landing?.seq]) // each landing once, not as the DAG grows
  useEffect(() => {
    if (landing === undefined) return
    const turn = turns.find(t => t.id === landing.entry || t.items.some(i => i.id === landing.entry))
    setHitTurn(turn?.id)
  }, [landing?.seq, turns]) // landing is new with each seq
  // the transcript draws turns as they scroll into view (on its own renders): outline the hit's whenever it is drawn
  useEffect(() => {
    const el = scrollRef.current
    if (el === null || hitTurn === undefined) return
    const mark = (): void => { el.querySelector(`.turn-slot[data-turn="${CSS.escape(hitTurn)}"]`)?.classList.add('search-hit') }
    mark()
    const watch = new MutationObserver(mark)
    watch.observe(el, { childList: true, subtree: true })
    return () => {
      watch.disconnect()
      for (const prev of el.querySelectorAll('.turn-slot.search-hit')) prev.classList.remove('search-hit')
    }
  }, [hitTurn])

  const startContinue = useCallback((at: ContinuePoint) => {
    setContinueFrom(at)
    setShowTree(false)
    requestAnimationFrame(() => composerRef.current?.focus())
  }, [])

  // from the tree: also show the branch through that turn, so its context is on screen
  const onTreeContinue = useCallback((at: ContinuePoint) => {
    onPick(at.entry)
    startContinue(at)
  }, [onPick, startContinue])

  // Esc in the tree: back to the button that opened it
  const closeTree = useCallback(() => {
    setShowTree(false)
    requestAnimationFrame(() => treeToggleRef.current?.focus())
  }, [])

  const stop = useCallback(() => {
    client.call('agent.cancel', { conversation: store.id }).catch(err => setError(`Could not stop the agent: ${errorText(err)}`))
  }, [client, store])

  // Follow the bottom while the reader is there; leave them alone when they scrolled up.
  const onScroll = (): void => {
    const el = scrollRef.current
    if (el !== null && el.clientHeight > 0) stick.current = nearBottom(el.scrollHeight, el.scrollTop, el.clientHeight)
    // a screen from the window's start: what came before is wanted
    if (windowed && el !== null && el.clientHeight > 0 && el.scrollTop < el.clientHeight) loadAll()
  }
  const follow = useCallback((): void => {
    const el = scrollRef.current
    if (el !== null && stick.current) el.scrollTop = el.scrollHeight
  }, [])
  useLayoutEffect(follow, [snap, turns, follow])

  useEffect(() => { composerRef.current?.focus() }, [store.id])

  // This device can stop only its own agent; another device's shows where it runs.
  const runningHere = running && (snap.agents.length === 0 || snap.agents.some(a => a.self))
  // A message while another device's agent works goes to that agent, which takes it up next;
  // one while this device's works waits for its turn to end (only at the tip: no new branch).
  const canSend = connected && (!runningHere || continueFrom === undefined)
  const canEdit = connected && !runningHere
  // once the turn ends the node writes what was queued: it shows as entries
  useEffect(() => { if (!runningHere && queued > 0) setQueued(0) }, [runningHere, queued])
  const elsewhere = snap.agents.filter(a => !a.self)
  const where = elsewhere.length > 0 ? ` ${placesText(snap.agents)}` : ''
  // Streamed text shows only on the branch it extends (not on one the reader switched to).
  const streamHere = running && snap.streamParent !== undefined && snap.streamParent === tip?.id && (snap.hasStreaming || snap.thinking !== '')
  const sentHere = useMemo(() => sent !== undefined && stillWaiting(branch, sent.entry, sent.agent) ? sent.agent : undefined, [sent, branch])

  return (
    <div className="chat" data-window={windowed ? 'partial' : undefined}>
      <header className="chat-head">
        <div className="chat-title">
          <h2>{snap.title || 'Untitled'}</h2>
          {snap.cwd !== undefined ? <span className="cwd mono" title="working directory">{snap.cwd}</span> : null}
          <ForkedFrom dag={dag} titleOf={titleOf} onOpen={onOpen} />
        </div>
        <div className="chat-meta">
          {/* no spinner while the reply streams below: the text shows the work, and an endless animation costs every token a frame drawn again (styles.css, .caret) */}
          {running ? <span className="badge running" role="status">{streamHere ? null : <span className="spinner small" aria-hidden="true" />}agent running{where}</span> : null}
          {headCount > 1 ? <span className="badge">{headCount} branches</span> : null}
          <button ref={treeToggleRef} type="button" className={showTree ? 'tree-toggle on' : 'tree-toggle'} aria-label="Show the conversation tree" aria-pressed={showTree} onClick={() => setShowTree(v => !v)}>Tree</button>
          <LimitsMenu conversation={store.id} disabled={!connected} />
          <ExportMenu conversation={store.id} leaf={tip?.id} disabled={!connected} onError={setError} />
          <span
            className="usage"
            title={`The whole conversation, every branch: ${snap.usage.input} input, ${snap.usage.output} output tokens`}
            aria-label={`${context !== undefined ? `Context of the shown branch: ${context} tokens${contextWindow !== undefined ? ` of a ${contextWindow}-token window` : ''}. ` : ''}Tokens used in all: ${snap.usage.input} input, ${snap.usage.output} output`}
          >
            {context !== undefined ? `context ${formatCount(context)}${contextWindow !== undefined ? ` / ${formatCount(contextWindow)}` : ''} · ` : ''}{formatCount(snap.usage.input)} in · {formatCount(snap.usage.output)} out tokens
          </span>
        </div>
      </header>
      <AgentBar
        status={placement.status}
        error={placement.error}
        onResume={() => { resume().catch(() => undefined) }}
        resuming={resuming}
        onAutoRevival={setAutoRevival}
        revivalAsked={revivalAsked}
        disabled={!connected}
        working={running}
      />
      {showTree
        ? <TreeView dag={dag} size={size} selected={selected} self={device} onPick={onPick} onContinue={onTreeContinue} onClose={closeTree} />
        : null}
      <div className="scroll" ref={scrollRef} onScroll={onScroll} hidden={showTree}>
        {turns.length === 0
          ? <div className="placeholder small"><p>Send a message to start.{snap.cwd !== undefined ? <> The agent works in <code>{snap.cwd}</code>.</> : null}</p></div>
          : null}
        <Transcript turns={turns} toolOutput={snap.toolOutput} toolStatus={snap.toolStatus} onSwitch={onSwitch} onEdit={send} onRetry={retry} onFork={fork} focusAt={focusAt} canSend={canEdit} continueAt={continueAt} onContinue={startContinue} scrollRef={scrollRef} stickRef={stick} onFollow={follow} reveal={reveal} />
        {streamHere
          ? <StreamingReply store={store} thinking={snap.thinking} onFollow={follow} />
          : sentHere !== undefined
            ? <div className={sentHere.reachable ? 'working sent-note' : 'working sent-note away'} role="status">{sentText(sentHere)}</div>
            : running && !runningTool
            ? <div className="working" role="status"><span className="spinner small" aria-hidden="true" />Working{where}…</div>
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
        running={runningHere}
        queued={queued}
        busy={running && !runningHere ? `The agent is working${where}; a message you send goes to it` : undefined}
        continueFrom={continueFrom}
        branches={continueFrom !== undefined && dag.children(continueFrom.entry).length > 0}
        onCancelContinue={() => setContinueFrom(undefined)}
        onSend={text => (runningHere && continueFrom === undefined ? queue(text) : send(text, continueFrom?.entry ?? tip?.id)).then(() => setContinueFrom(undefined), err => { setError(`Not sent: ${errorText(err)}`); throw err })}
        onStop={stop}
        onCommand={runCommand}
        onUnknownCommand={name => setError(unknownCommandText(name))}
      />
    </div>
  )
}

/** "forked from <title>" in a fork's header: a link that shows the source at the entry the copy ended at. */
function ForkedFrom ({ dag, titleOf, onOpen }: { dag: ConversationStore['dag'] } & Pick<Parameters<typeof ChatView>[0], 'titleOf' | 'onOpen'>): JSX.Element | null {
  const root = dag.root
  const from = root?.kind === 'conversation' ? root.body.forkedFrom : undefined
  if (from === undefined) return null
  const title = titleOf?.(from.conversation)
  const name = title === undefined ? `conversation ${from.conversation.slice(0, 8)}` : `“${title === '' ? 'Untitled' : title}”`
  return (
    <span className="forked-from">
      forked from{' '}
      {title !== undefined && onOpen !== undefined
        ? <button type="button" className="link" onClick={() => onOpen(from.conversation, from.entry)} aria-label={`Forked from ${name}: show it where this copy ends`}>{name}</button>
        : <span title="not on this device">{name}</span>}
    </span>
  )
}
