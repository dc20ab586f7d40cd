import type { HistoryStore } from '../../history/history-store'
import type { Entry, EntryDraft, EntryOf } from '../../../shared/entry/entry'
import type { IrToolCall, IrToolSpec } from '../../../shared/llm-ir'
import { LlmError, type LlmProvider } from '../../llm/provider'
import type { Tool, ToolResult } from '../../tools/tool'
import { runTool } from '../../tools/tool-registry'
import type { SandboxPolicy } from '../../tools/sandbox-policy'
import { idemKey, planNext, rerunnable, type UnknownWhy } from './step-planner'
import { ModelMessages } from './model-messages'
import { compareRefs, ownerOf, type AgentRef } from '../placement/placement'
import type { AgentWait } from '../../../shared/conversation/agent-wait'
import { requestOverhead, summarise } from './compaction-step'
import { estimateContext } from './compaction'
import type { InstructionFile } from './project-instructions'
import type { WindowSource } from '../../llm/context-window'
import { limitReached, stepsInTurn, tokensSpent, type TurnLimits } from './turn-limits'

/**
 * What an agent reports while it works, for the UI and the CLI. `run` names the agent's run
 * (AgentRun.id); streamed text names `parent`, the entry its assistant message will attach
 * to, so a UI shows it only on the branch it extends.
 */
export type AgentEvent =
  | { type: 'token'; conversation: string; run: string; parent: string; delta: string }
  | { type: 'reasoning'; conversation: string; run: string; parent: string; delta: string }
  | { type: 'tool-start'; conversation: string; run: string; callId: string; tool: string; args: unknown }
  | { type: 'tool-output'; conversation: string; run: string; callId: string; chunk: string }
  | { type: 'tool-end'; conversation: string; run: string; callId: string; status: ToolResult['status'] }
  | { type: 'entry'; conversation: string; entry: Entry }

/**
 * Step boundaries where a test can make the agent crash (let it crash, then check).
 * Crashes inside a step come from the step itself: a provider or a tool that throws.
 */
export type FaultPoint = 'before-model' | 'after-model' | 'after-intent' | 'before-tool' | 'after-tool' | 'after-result'

export interface AgentDeps {
  history: HistoryStore
  provider: LlmProvider
  model: string
  tools: ReadonlyMap<string, Tool>
  sandbox: SandboxPolicy
  system: string
  /** the project instructions joined to `system` (AGENTS.md …), recorded in agent.started */
  instructions?: InstructionFile[]
  onEvent: (ev: AgentEvent) => void
  /** test hook: may throw to simulate a crash at that point */
  fault?: (point: FaultPoint, detail: { tool?: string }) => void
  /** the agent that outranks this one, if any: checked at every step boundary (one agent per side) */
  supersededBy?: (run: AgentRun) => AgentRef | null
  /**
   * Resolves once this agent may act (its device holds the lease, placement/lease.ts; at once
   * where no lease applies); awaited at every step boundary and before every tool call.
   */
  lease?: (run: AgentRun, signal: AbortSignal) => Promise<void>
  /**
   * Resolves once a step that must not run twice (workspace, external) may start: another
   * device holds its intent (acknowledged intents, ARCHITECTURE §14; at once where that does
   * not apply). Awaited once the intent is stored, before the tool starts; it may set
   * `run.waiting` while it waits.
   */
  held?: (run: AgentRun, signal: AbortSignal) => Promise<void>
  /**
   * The model's context window in tokens (llm/context-window.ts): before a model step the branch
   * is compacted when it would not fit. Without it, only a server's refusal of a context too
   * long compacts it.
   */
  contextWindow?: ContextWindowSource
  /** this device's limits for the conversation (turn-limits.ts); without them, none */
  limits?: TurnLimits
}

/** The model's window as the agent's device knows it, and where a refusal's word on it goes. */
export interface ContextWindowSource {
  get: () => Promise<number>
  /** the window and where it comes from (the chat header shows it) */
  resolve?: () => Promise<{ tokens: number; source: WindowSource }>
  /** a server refused a request as too long, naming its window */
  learn: (tokens: number) => void
}

export interface AgentRun {
  /** names this run in live events (kept across restarts of the same run) */
  id: string
  conversation: string
  epoch: number
  reason: EntryOf<'agent.started'>['body']['reason']
  /** the agent this one takes over from (resume, revival) */
  previous?: AgentRef
  /** the model asked for beyond the device's setting, for this run only (recorded in its start) */
  model?: string
  /** the entry the agent continues from; moved forward as it appends (survives restarts) */
  cursor: { tip: string }
  /** what it waits for before its next step, if it says so (the agent bar, `arbor status`) */
  waiting?: AgentWait
}

/** Why an agent loop ended without crashing. */
export type AgentOutcome = 'done' | 'cancelled' | 'error' | 'idle' | 'superseded'

/**
 * One agent incarnation: writes agent.started, then plans and runs steps from the
 * entries until the model answers without tool calls. Every step is journaled before
 * and after, so a crash anywhere is recovered by starting the loop again.
 * Errors a restart cannot fix (a refused API key, an unknown model) end the run with an
 * agent.stopped entry that says what to do; anything else is thrown: a crash.
 */
export async function runAgent (deps: AgentDeps, run: AgentRun, signal: AbortSignal): Promise<AgentOutcome> {
  const journal = new Journal(deps, run)
  try {
    const outcome = await steps(deps, run, signal, journal)
    await journal.stored()
    return outcome
  } catch (err) {
    // A crash is recorded after what was journaled before it (the cursor must have reached it).
    await journal.stored().catch(() => undefined)
    throw err
  }
}

/**
 * What an agent writes, in order. An entry is built and queued at once and stored behind
 * the agent's back; `stored()` waits for everything queued so far. The loop waits before
 * what must follow the journal (a step that may not run twice, the end of the run); a
 * model call or a read need not, so a step's entries are written while the next one runs.
 * The cursor moves, and the 'entry' event goes out, only once an entry is stored.
 */
class Journal {
  /** the path root → last entry written, kept here rather than re-read every step (its ancestors never change) */
  branch: Entry[] = []
  /** the entry the next one attaches to: the last one queued */
  tip: string
  private last: Promise<void> = Promise.resolve()
  private readonly agent: string

  constructor (private readonly deps: AgentDeps, private readonly run: AgentRun) {
    this.tip = run.cursor.tip
    this.agent = `agent#${run.epoch}`
  }

  async append (draft: EntryDraft): Promise<Entry> {
    const { history, onEvent } = this.deps
    const { conversation, cursor } = this.run
    let queued
    try {
      queued = await history.enqueue(conversation, [{ ...draft, agent: this.agent, parents: [this.tip] } as EntryDraft])
    } catch (err) {
      await this.last // an earlier write that failed is the cause: report that one
      throw err
    }
    const entry = queued.entries[0] as Entry
    this.tip = entry.id
    this.branch.push(entry)
    // Stored in call order: each write waits for the one before, so `last` covers them all.
    const prev = this.last
    this.last = (async () => {
      await prev
      await queued.stored
      cursor.tip = entry.id
      onEvent({ type: 'entry', conversation, entry })
    })()
    this.last.catch(() => undefined) // surfaced by stored(), the next append or the end of the run
    return entry
  }

  /**
   * Sends an event once every entry queued before it is stored, so listeners see a call's
   * intent before its tool-start even when the call did not wait for the disk.
   */
  emit (ev: AgentEvent): void {
    this.last = this.last.then(() => { this.deps.onEvent(ev) })
    this.last.catch(() => undefined) // surfaced by stored(), the next append or the end of the run
  }

  /** Resolves once every entry appended so far is stored; rejects if one could not be. */
  stored (): Promise<void> {
    return this.last
  }

  /**
   * Settings this device wrote below the agent's tip while it waited (auto-revival turned off
   * at a step waiting for another device): the branch goes on from them, not beside them.
   */
  async adoptSettings (): Promise<void> {
    const { history } = this.deps
    const dag = await history.open(this.run.conversation)
    for (;;) {
      const next = dag.children(this.tip).find(e => e.kind === 'meta' && e.author.device === history.device)
      if (next === undefined) return
      this.tip = next.id
      this.branch.push(next)
      this.run.cursor.tip = next.id
    }
  }
}

async function steps (deps: AgentDeps, run: AgentRun, signal: AbortSignal, journal: Journal): Promise<AgentOutcome> {
  const { history } = deps
  const conversation = run.conversation
  const agent = `agent#${run.epoch}`
  const append = (draft: EntryDraft): Promise<Entry> => journal.append(draft)
  const stop = async (reason: EntryOf<'agent.stopped'>['body']['reason'], message?: string, by?: AgentRef): Promise<void> => {
    const body: EntryOf<'agent.stopped'>['body'] = { epoch: run.epoch, reason }
    if (message !== undefined) body.message = message
    if (by !== undefined) body.by = by
    await append({ kind: 'agent.stopped', body, parents: [] })
  }
  const effectOf = (name: string): Tool['effect'] | undefined => deps.tools.get(name)?.effect
  const specs: IrToolSpec[] = [...deps.tools.values()].map(t => ({ name: t.name, description: t.description, parameters: t.parameters }))
  // the branch's model messages, extended step by step rather than rebuilt (equal to toIrMessages)
  const modelMessages = new ModelMessages(deps.system)

  // Whether it may take its next step: a lease held, nothing outranking it (after a stall the
  // lease waits for fresh word from peers, so a revival they announced is seen here first).
  const outranked = async (): Promise<AgentRef | null> => {
    await deps.lease?.(run, signal)
    const by = deps.supersededBy?.(run) ?? null
    if (by !== null || deps.lease === undefined) return by
    // The history as indexed now, not placement's view, which follows arriving entries a moment late.
    const owner = ownerOf((await history.open(conversation)).entries())
    return owner !== null && compareRefs(owner, { device: history.device, epoch: run.epoch }) > 0 ? owner : null
  }
  const giveWay = async (by: AgentRef): Promise<'superseded'> => {
    await stop('superseded', `the agent now runs with epoch ${by.epoch} on device ${by.device.slice(0, 12)}`, by)
    return 'superseded'
  }

  // Outranked before it began (a higher agent arrived meanwhile): start nothing. Not under the
  // lease: the start is what the user or placement asked for and only says so in the history;
  // acting waits for the lease at the loop's first step (a device cut off from its peers records
  // a resume at once and says it waits).
  // Compaction (compaction.ts): at most once before a model step, and once more when the
  // server refuses the context anyway; then the step is tried again, or the run says why not.
  let compactedAt: string | undefined // the tip a compaction of this run left: not compacted again before a model step
  let retriedAt: string | undefined // the tip a compaction after a refusal left: a second refusal there ends the run
  let learned: number | undefined // the window a refusal named (or implied), when smaller than the one known
  const compact = async (force: boolean, window: number): Promise<'compacted' | 'none' | AgentOutcome> => {
    let made
    try {
      made = await summarise({ provider: deps.provider, model: deps.model, system: deps.system, tools: specs, branch: journal.branch, window, force, signal })
    } catch (err) {
      if (signal.aborted) { await stop('cancelled'); return 'cancelled' }
      if (err instanceof LlmError && !err.transient && err.code !== 'scripted') {
        await stop('error', `the conversation could not be compacted: ${err.message}`)
        return 'error'
      }
      throw err
    }
    if (made.kind !== 'compaction') return 'none'
    const byNow = await outranked()
    if (byNow !== null && !signal.aborted) return await giveWay(byNow)
    await append({ kind: 'compaction', body: made.body, parents: [] })
    compactedAt = journal.tip
    return 'compacted'
  }
  const windowNow = async (): Promise<number | undefined> => {
    const known = await deps.contextWindow?.get()
    return known === undefined ? learned : Math.min(known, learned ?? known)
  }

  if (deps.supersededBy?.(run) != null) return 'superseded'
  const dag = await history.open(conversation)
  journal.branch = dag.pathTo(run.cursor.tip)
  await append({
    kind: 'agent.started',
    body: {
      epoch: run.epoch,
      reason: run.reason,
      ...(run.previous !== undefined ? { previous: run.previous } : {}),
      ...(run.model !== undefined ? { model: run.model } : {}),
      ...(deps.instructions !== undefined && deps.instructions.length > 0 ? { instructions: deps.instructions } : {})
    },
    parents: []
  })
  const limits = new LimitCount(deps.limits, journal.branch, dag.entries(), history.device)
  for (;;) {
    const by = await outranked()
    if (signal.aborted) { await stop('cancelled'); return 'cancelled' }
    if (by !== null) return await giveWay(by)
    const branch = journal.branch
    const step = planNext(branch, effectOf, { device: history.device, agent })
    switch (step.kind) {
      case 'idle':
        await stop('done', 'there is no message to answer')
        return 'idle'
      case 'done':
        await stop('done')
        return 'done'
      case 'model': {
        const over = limits.reached()
        if (over !== undefined) {
          // at a step boundary: every call of the turn so far has its result
          await append({ kind: 'agent.stopped', body: { epoch: run.epoch, reason: 'done', message: over.message, limit: over.limit }, parents: [] })
          return 'done'
        }
        deps.fault?.('before-model', {})
        const window = compactedAt === journal.tip ? undefined : await windowNow()
        if (window !== undefined) {
          const c = await compact(false, window)
          if (c === 'compacted') break // planned again on the compacted branch
          if (c !== 'none') return c
        }
        let result
        // The reply will be a child of the current tip: streamed text belongs to that branch.
        const parent = journal.tip
        try {
          result = await deps.provider.chat({
            model: deps.model,
            messages: modelMessages.of(branch),
            tools: specs,
            signal,
            onEvent: ev => {
              if (ev.type === 'text') deps.onEvent({ type: 'token', conversation, run: run.id, parent, delta: ev.delta })
              else if (ev.type === 'reasoning') deps.onEvent({ type: 'reasoning', conversation, run: run.id, parent, delta: ev.delta })
            }
          })
        } catch (err) {
          if (signal.aborted) { await stop('cancelled'); return 'cancelled' }
          if (err instanceof LlmError && err.code === 'context-length' && retriedAt !== journal.tip) {
            // The estimate was short (or no window was known): fold all that may be folded, and try once more.
            const sent = estimateContext(branch, requestOverhead(deps.system, specs))
            learned = err.window ?? Math.min(learned ?? Infinity, Math.floor(sent * 0.8))
            if (err.window !== undefined) deps.contextWindow?.learn(err.window)
            const c = await compact(true, err.window ?? await windowNow() ?? learned)
            if (c === 'compacted') { retriedAt = journal.tip; break }
            if (c !== 'none') return c
          }
          if (err instanceof LlmError && err.code === 'context-length') {
            await stop('error', `${err.message}. It was compacted as far as it can be: the latest message and its latest step alone do not fit. Start a new branch from an earlier message, or use a model with a larger window`)
            return 'error'
          }
          if (err instanceof LlmError && !err.transient && err.code !== 'scripted') {
            await stop('error', err.message)
            return 'error'
          }
          throw err
        }
        deps.fault?.('after-model', {})
        // A reply that arrives after a stall is not written if another agent took over meanwhile.
        const byNow = await outranked()
        if (byNow !== null && !signal.aborted) return await giveWay(byNow)
        const body: EntryOf<'assistant'>['body'] = { text: result.text, model: result.model, finish: result.finish }
        if (result.toolCalls.length > 0) body.toolCalls = result.toolCalls.map(c => ({ id: c.id, name: c.name, args: c.args }))
        if (result.reasoning !== undefined) body.reasoning = result.reasoning
        if (result.usage !== undefined) body.usage = result.usage
        await append({ kind: 'assistant', body, parents: [] })
        limits.stepped(body.usage)
        break
      }
      case 'unknown-outcome':
        await append({ kind: 'tool.result', body: { callId: step.call.id, status: 'unknown', output: NOT_RUN[step.why] }, parents: [] })
        break
      case 'tool': {
        const tool = deps.tools.get(step.call.name)
        const key = idemKey(step.assistant, step.call.id)
        if (step.intent === undefined) {
          await append({ kind: 'tool.intent', body: { callId: step.call.id, tool: step.call.name, args: step.call.args ?? null, effect: step.effect, idemKey: key }, parents: [] })
        }
        // A step that must not run twice runs only once the journal says it will (the intent,
        // and all before it, stored). A read or idempotent one is run again after a crash
        // anyway (planNext), so it need not wait for the disk.
        if (!rerunnable(step.effect)) await journal.stored()
        deps.fault?.('after-intent', { tool: step.call.name })
        if (!rerunnable(step.effect) && deps.held !== undefined) {
          // Only once another device holds the intent: whoever revives this agent sees it.
          await deps.held(run, signal)
          await journal.adoptSettings()
          if (signal.aborted) {
            await append({ kind: 'tool.result', body: { callId: step.call.id, status: 'cancelled', output: 'stopped before it started' }, parents: [] })
            await stop('cancelled')
            return 'cancelled'
          }
        }
        // The start of a tool call: under the lease, and only if nobody took over.
        const byAtStart = await outranked()
        if (byAtStart !== null && !signal.aborted) return await giveWay(byAtStart)
        deps.fault?.('before-tool', { tool: step.call.name })
        const res = tool === undefined
          ? { status: 'error' as const, output: `there is no tool named "${step.call.name}"; the tools are: ${[...deps.tools.keys()].join(', ')}` }
          : await runOne(deps, run, tool, step.call, key, signal, ev => { journal.emit(ev) })
        deps.fault?.('after-tool', { tool: step.call.name })
        // A call that ended during a stall: its result is not written if the agent was revived meanwhile
        // (the reviver recorded the outcome as unknown).
        const byAfter = signal.aborted ? null : await outranked()
        if (byAfter !== null && !signal.aborted) return await giveWay(byAfter)
        if (signal.aborted) {
          await append({ kind: 'tool.result', body: { callId: step.call.id, status: 'cancelled', output: res.output }, parents: [] })
          await stop('cancelled')
          return 'cancelled'
        }
        const resultBody: EntryOf<'tool.result'>['body'] = { callId: step.call.id, status: res.status, output: res.output }
        if (res.truncated === true) resultBody.truncated = true
        await append({ kind: 'tool.result', body: resultBody, parents: [] })
        deps.fault?.('after-result', { tool: step.call.name })
        break
      }
    }
  }
}

/**
 * The run's count against its limits: taken from the history once at the start (a restarted run
 * goes on counting, never from zero), then moved on by each model step this run writes.
 */
class LimitCount {
  private steps: number
  private tokens: number
  constructor (private readonly limits: TurnLimits | undefined, branch: readonly Entry[], entries: Iterable<Entry>, device: string) {
    this.steps = limits === undefined ? 0 : stepsInTurn(branch, device)
    this.tokens = limits?.tokenBudget === undefined ? 0 : tokensSpent(entries, device)
  }

  reached (): ReturnType<typeof limitReached> {
    return this.limits === undefined ? undefined : limitReached(this.limits, this.steps, this.tokens)
  }

  stepped (usage: { input: number; output: number } | undefined): void {
    this.steps++
    if (usage !== undefined) this.tokens += usage.input + usage.output
  }
}

/** What a call recorded as unknown says about why it was not run here. */
const NOT_RUN: Record<UnknownWhy, string> = {
  interrupted: 'interrupted before its result was recorded',
  'other-agent': 'planned by the agent that ran before this one, which may have started it; not run again here',
  'other-device': 'written by another device; a device runs only the calls its own agent planned, so it was not run here',
  'not-an-agent': 'imported from another program\'s session: its tool calls are history, never run here'
}

/** Runs one tool call (arguments checked, time limit kept); a tool that throws crashes the agent. */
async function runOne (deps: AgentDeps, run: AgentRun, tool: Tool, call: IrToolCall, key: string, signal: AbortSignal, emit: (ev: AgentEvent) => void): Promise<ToolResult> {
  const { conversation, id } = run
  emit({ type: 'tool-start', conversation, run: id, callId: call.id, tool: tool.name, args: call.args })
  const res = await runTool(tool, call.args, {
    cwd: deps.sandbox.cwd,
    signal,
    idemKey: key,
    sandbox: deps.sandbox,
    onOutput: chunk => { emit({ type: 'tool-output', conversation, run: id, callId: call.id, chunk }) }
  })
  emit({ type: 'tool-end', conversation, run: id, callId: call.id, status: res.status })
  return res
}
