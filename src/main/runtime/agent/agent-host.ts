import { randomBytes } from 'node:crypto'
import type { HistoryStore } from '../../history/history-store'
import type { Entry } from '../../../shared/entry/entry'
import type { Clock } from '../../../shared/clock'
import { DynamicSupervisor } from '../supervisor/dynamic-supervisor'
import { Supervisor } from '../supervisor/supervisor'
import { taskChild } from '../supervisor/task-child'
import type { ExitReason, SupervisorTree } from '../supervisor/types'
import { describeExit } from '../supervisor/types'
import { ownerOf, type AgentRef } from '../placement/placement'
import { runAgent, type AgentDeps, type AgentEvent, type AgentOutcome, type AgentRun } from './agent-loop'

/** Everything an agent for one conversation needs, decided by the composition root. */
export type AgentConfig = Omit<AgentDeps, 'history' | 'onEvent' | 'fault'>

export interface AgentHostOptions {
  history: HistoryStore
  /** `run`: what one run asks beyond the conversation's settings (StartOptions.model) */
  configFor: (conversation: string, run?: RunOverrides) => Promise<AgentConfig>
  onEvent?: (ev: AgentEvent) => void
  /** restarts allowed per agent within periodMs before it is stopped as crash-looping */
  intensity?: number
  periodMs?: number
  /** how long a stopping agent may take to record its stop (then it is killed) */
  shutdownMs?: number
  clock?: Clock
  fault?: AgentDeps['fault']
  /** the agent that outranks a running one (checked at its step boundaries; see placement) */
  supersededBy?: AgentDeps['supersededBy']
  /** waits until a running agent may act (the lease of auto-revival agents; see agent-loop) */
  lease?: AgentDeps['lease']
  /** waits until a step that must not run twice may start (acknowledged intents; see agent-loop) */
  held?: AgentDeps['held']
}

/** What one run of an agent asks for beyond the conversation's settings, for that run only. */
export interface RunOverrides {
  /** another model of this device's provider (a retry's `model`): never a setting a peer could write */
  model?: string
}

export interface StartOptions extends RunOverrides {
  /** the entry to continue from (default: the tip of the branch this device shows) */
  leaf?: string
  reason?: AgentRun['reason']
  epoch?: number
  /** the agent this one takes over from (resume, revival) */
  previous?: AgentRef
}

/** How an agent's run ended. */
export type AgentEnd = AgentOutcome | 'crash-loop' | 'stopped'

interface Running {
  run: AgentRun
  outcome: AgentOutcome | null
  lastError: unknown
  ended: Promise<AgentEnd>
  /** lets the history evict the conversation's DAG again (held while the agent runs: it reads it every step) */
  release: () => void
}

/**
 * Runs conversation agents under supervision (DESIGN.md, "Agents"): a dynamic
 * supervisor of per-conversation supervisors, each restarting its agent loop on a
 * crash (transient, `intensity` in `periodMs`). An agent past its intensity stops with
 * agent.stopped{crash-loop}; the others keep running.
 */
export class AgentHost {
  private readonly opts: AgentHostOptions
  private readonly agents: DynamicSupervisor<Supervisor>
  private readonly running = new Map<string, Running>()

  constructor (opts: AgentHostOptions) {
    this.opts = opts
    const supOpts = opts.clock !== undefined ? { clock: opts.clock } : {}
    this.agents = new DynamicSupervisor<Supervisor>('agents', {
      restart: 'temporary',
      type: 'supervisor',
      shutdown: 'infinity',
      start: async sup => { await sup.ready(); return sup }
    }, {}, supOpts)
  }

  ready (): Promise<void> { return this.agents.ready() }

  /** Stops every agent (each records its stop), then the host. */
  async close (): Promise<void> {
    await this.agents.close()
    await Promise.allSettled([...this.running.values()].map(r => r.ended))
  }

  isRunning (conversation: string): boolean { return this.running.has(conversation) }

  /** The agent running here for a conversation (device = this one), if any. */
  runOf (conversation: string): AgentRun | undefined { return this.running.get(conversation)?.run }

  /** Every agent running here. */
  runs (): AgentRun[] { return [...this.running.values()].map(r => r.run) }

  tree (): SupervisorTree { return this.agents.tree() }

  /** Starts the agent of a conversation on this device; resolves once it runs. */
  async start (conversation: string, opts: StartOptions = {}): Promise<void> {
    if (this.running.has(conversation)) throw new Error(`an agent already runs for conversation ${conversation.slice(0, 12)} on this device`)
    const history = this.opts.history
    const dag = await history.open(conversation)
    const tip = opts.leaf ?? dag.branch(history.selected(conversation)).at(-1)?.id
    if (tip === undefined) throw new Error(`conversation ${conversation.slice(0, 12)} has no entries yet`)
    const config = await this.opts.configFor(conversation, opts.model !== undefined ? { model: opts.model } : {})
    const run: AgentRun = { id: randomBytes(8).toString('hex'), conversation, epoch: opts.epoch ?? currentEpoch(dag.entries()), reason: opts.reason ?? 'user', cursor: { tip } }
    if (opts.previous !== undefined) run.previous = opts.previous
    if (opts.model !== undefined) run.model = opts.model
    const onEvent = this.opts.onEvent ?? (() => {})
    const deps: AgentDeps = {
      ...config,
      history,
      onEvent,
      ...(this.opts.fault !== undefined ? { fault: this.opts.fault } : {}),
      ...(this.opts.supersededBy !== undefined ? { supersededBy: this.opts.supersededBy } : {}),
      ...(this.opts.lease !== undefined ? { lease: this.opts.lease } : {}),
      ...(this.opts.held !== undefined ? { held: this.opts.held } : {})
    }

    let attempts = 0
    let settle!: (end: AgentEnd) => void
    const r: Running = { run, outcome: null, lastError: undefined, ended: new Promise(resolve => { settle = resolve }), release: () => {} }
    const loop = {
      id: 'loop',
      restart: 'transient' as const,
      // When the loop ends by itself (done, cancelled, an error it reported), so does its supervisor.
      significant: true,
      shutdown: this.opts.shutdownMs ?? 10_000,
      start: async () => taskChild(async signal => {
        const attempt = { ...run, reason: attempts++ === 0 ? run.reason : 'restart' as const }
        try {
          r.outcome = await runAgent(deps, attempt, signal)
        } catch (err) {
          r.lastError = err
          // Record the crash where the agent was, then crash: the supervisor decides what next.
          await history.append(conversation, [{ kind: 'agent.stopped', body: { epoch: run.epoch, reason: 'error', message: errorText(err) }, parents: [run.cursor.tip], agent: `agent#${run.epoch}` }])
            .then(([e]) => { run.cursor.tip = (e as Entry).id })
            .catch(() => undefined) // the history itself may be what failed; the crash is reported below
          throw err
        }
      })
    }
    const sup = new Supervisor(`agent:${conversation.slice(0, 12)}`, { intensity: this.opts.intensity ?? 3, periodMs: this.opts.periodMs ?? 60_000, autoShutdown: 'any_significant' }, [loop], this.opts.clock !== undefined ? { clock: this.opts.clock } : {})
    // The supervisor of a run that just ended may not be forgotten yet (its exit is handled in
    // turn): finish forgetting it, or starting this run under the same id would be refused.
    if (this.agents.childIds().includes(conversation)) {
      await this.agents.terminateChild(conversation).catch((err: Error) => { if (!/no child/.test(err.message)) throw err })
    }
    if (this.running.has(conversation)) throw new Error(`an agent already runs for conversation ${conversation.slice(0, 12)} on this device`)
    this.running.set(conversation, r)
    r.release = history.hold(conversation)
    void sup.exit.then(reason => this.onAgentExit(r, reason, settle))
    try {
      await this.agents.startChild(conversation, sup)
    } catch (err) {
      this.running.delete(conversation)
      r.release()
      throw err
    }
  }

  /** Stops a conversation's agent at once: the current step is cut short and recorded as cancelled. */
  async cancel (conversation: string): Promise<void> {
    if (!this.running.has(conversation)) return
    await this.agents.terminateChild(conversation)
  }

  /** Resolves when the conversation's agent has ended, with how. */
  wait (conversation: string): Promise<AgentEnd> {
    const r = this.running.get(conversation)
    return r === undefined ? Promise.resolve('stopped') : r.ended
  }

  private async onAgentExit (r: Running, reason: ExitReason, settle: (end: AgentEnd) => void): Promise<void> {
    const { conversation, epoch, cursor } = r.run
    let end: AgentEnd = r.outcome ?? 'stopped'
    if (reason.kind === 'shutdown' && reason.detail === 'reached_max_restart_intensity') {
      end = 'crash-loop'
      const message = `the agent crashed ${(this.opts.intensity ?? 3) + 1} times within ${Math.round((this.opts.periodMs ?? 60_000) / 1000)} s and was stopped; last error: ${errorText(r.lastError)}. Fix the cause, then send a message or resume to start it again.`
      try {
        const [e] = await this.opts.history.append(conversation, [{ kind: 'agent.stopped', body: { epoch, reason: 'crash-loop', message }, parents: [cursor.tip], agent: `agent#${epoch}` }])
        cursor.tip = (e as Entry).id
      } catch (err) {
        console.error(`arbor agents: could not record that the agent of ${conversation.slice(0, 12)} stopped: ${(err as Error).message}`)
      }
    } else if (reason.kind !== 'normal' && reason.kind !== 'shutdown') {
      end = 'stopped'
      console.error(`arbor agents: the supervisor of ${conversation.slice(0, 12)} ended: ${describeExit(reason)}`)
    }
    this.running.delete(conversation)
    r.release()
    settle(end)
  }
}

/** The highest epoch any agent of this conversation ran with (0 if none), among epochs that count (placement's EpochLedger). */
export function currentEpoch (entries: Iterable<Entry>): number {
  return ownerOf(entries)?.epoch ?? 0
}

function errorText (err: unknown): string {
  if (err instanceof Error) return err.message
  return String(err)
}
