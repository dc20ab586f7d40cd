import fs from 'node:fs/promises'
import type { EntriesEvent, HistoryStore } from '../../history/history-store'
import type { Entry } from '../../../shared/entry/entry'
import type { Logger } from '../../../shared/logger'
import { systemClock, type Clock, type ClockTimer } from '../../../shared/clock'
import { writeStateFile } from '../../disk/state-file'
import type { AgentHost, StartOptions } from '../agent/agent-host'
import type { AgentRun } from '../agent/agent-loop'
import type { AgentWait } from '../../../shared/conversation/agent-wait'
import { retryElsewhereText } from '../../../shared/conversation/retry-point'
import { compareRefs, decide, EpochLedger, nextEpoch, openWork, runModelAt, topRef, type AgentRef, type PlacementAction } from './placement'

/** What placement needs to know of the other devices (the sync layer provides it). */
export interface PeerView {
  /** connected peers, not suspected, that hold the conversation */
  live (conversation: string): string[]
  /** whether a device is considered dead: not connected and silent past the detection window */
  down (device: string): boolean
  /** agents the connected peers announce running for the conversation */
  announced (conversation: string): AgentRef[]
  /** blocks of the conversation that live peers announced and this device has not read yet */
  unread (conversation: string): number
  /** a device's name, for notes the model and the user read */
  name (device: string): string
}

export interface AgentPlacementOptions {
  history: HistoryStore
  agents: AgentHost
  /** starts an agent (the node's start, which reports it to the UI and to peers) */
  start: (conversation: string, opts: StartOptions) => Promise<void>
  peers: PeerView
  /** this device's name */
  name: () => string
  /** where the list of agents running here is kept, to continue them after a crash */
  stateFile: string
  /** how often conversations that may need reviving are looked at again (default 1000 ms) */
  sweepMs?: number
  /** the sweep's and retries' timers (default: the system's; tests pause a device through it) */
  clock?: Clock
  log: Logger
}

/** Where a conversation's agent runs, as this device sees it. */
export interface PlacementStatus {
  owner: AgentRef | null
  /** an agent a connected peer announces, if higher than the owner in the history this device holds */
  announced: AgentRef[]
  runningHere: AgentRef | null
  autoRevival: boolean
  ownerDown: boolean
  /** what the agent here waits for before its next step, if it says so */
  waiting: AgentWait | null
}

/** What a message posted on this device leads to. */
export type PostOutcome =
  /** queued: the agent here is busy and answers it when its current run ends */
  | { runs: 'here'; queued?: boolean }
  | { runs: 'elsewhere'; device: string; name: string; reachable: boolean }

/** The entries that can change where an agent should run. */
const PLACEMENT_KINDS: ReadonlySet<Entry['kind']> = new Set(['user', 'agent.started', 'agent.stopped', 'meta'])

/** The epochs of a history not read yet. */
const NO_EPOCHS = new EpochLedger()

/** How long after a failed placement decision it is taken again. */
const RETRY_MS = 1000

/** How long a revival waits for the blocks live peers announced before it gives up until the next sweep. */
export const REVIVAL_READ_MS = 2000

/** What placement keeps of a conversation between events: the epochs its history held here honours, and so its owner. */
interface Known { epochs: EpochLedger }

/**
 * Decides and carries out where each conversation's agent runs on this device (DESIGN.md,
 * "Placement"): the owner answers peers' messages that replicate to it, an agent outranked
 * by a higher one stops at its next step boundary, a dead device's opt-in agents are revived
 * by one live device, and agents cut short by a crash of this node continue after restart.
 * Every decision is the pure `decide` over the current view, taken again on every change.
 */
export class AgentPlacement {
  private readonly opts: AgentPlacementOptions
  private readonly known = new Map<string, Known>()
  /** one decision at a time per conversation */
  private readonly queue = new Map<string, Promise<void>>()
  private readonly again = new Set<string>()
  /** per conversation: messages for the agent that arrived or were posted while it ran elsewhere, not yet answered */
  private readonly fresh = new Map<string, Set<string>>()
  /**
   * per conversation: messages sent while the agent here was busy, in order; written (and
   * answered) once its run ends, after what the run wrote — not into the middle of its turn
   */
  private readonly held = new Map<string, string[]>()
  private sweepTimer: ClockTimer | null = null
  private closed = false
  private readonly retries = new Set<ClockTimer>()
  private opened = false
  /** what a node that restores nothing read as running here: written back as it was, for the next node */
  private leftRunning = new Set<string>()
  /** conversations whose agent is being started here (recorded as running before it writes its start) */
  private readonly starting = new Map<string, number>()
  /** false: this node decides nothing by itself (only what it is asked: posted, resume) */
  private restoring = true
  /** the agents the state file said ran here */
  private savedRunning: string[] = []
  /** devices this one takes for dead → since when it has (placement clock): later devices in a revival order wait their turns from it */
  private readonly seenDown = new Map<string, number>()
  /** per conversation: how many unread blocks the log last said held its revival back */
  private readonly unreadSaid = new Map<string, number>()
  /** waits for entries to arrive (readAnnounced), ended early by close */
  private readonly wakers = new Set<() => void>()
  private readonly onEntries = (ev: EntriesEvent): void => { this.entriesArrived(ev) }

  constructor (opts: AgentPlacementOptions) {
    this.opts = opts
  }

  /**
   * `restore: false` (a node opened for one CLI command): agents a crash cut short, and messages
   * waiting for them, stay recorded for the device's own node; nothing is continued or revived.
   */
  async ready (opts: { restore?: boolean } = {}): Promise<void> {
    const { history } = this.opts
    history.on('entries', this.onEntries)
    const restore = opts.restore !== false
    this.restoring = restore
    // Opt-in conversations are watched for a dead owner; the others wait for events.
    if (restore) for (const s of history.list()) if (s.autoRevival === true) await this.learn(s.id)
    const saved = await this.readState()
    if (restore) for (const conversation of saved) this.reconcile(conversation)
    else this.leftRunning = new Set(this.savedRunning)
    this.opened = true
    if (restore) this.sweepSoon()
  }

  async close (): Promise<void> {
    this.closed = true
    this.opts.history.off('entries', this.onEntries)
    if (this.sweepTimer !== null) this.clock.clearTimeout(this.sweepTimer)
    for (const t of this.retries) this.clock.clearTimeout(t)
    for (const wake of [...this.wakers]) wake()
    await Promise.allSettled([...this.queue.values()])
    await this.writing.catch(() => undefined) // a failed write was reported when it failed
  }

  /** For the agent loop: the agent that outranks `run` (it then stops at its step boundary). */
  supersededBy (run: AgentRun): AgentRef | null {
    const self = { device: this.opts.history.device, epoch: run.epoch }
    const k = this.known.get(run.conversation)
    // an agent started here other than through placement: its history is read for the next step
    if (k === undefined) this.learn(run.conversation).catch((err: Error) => { this.opts.log.warn(`placement of ${run.conversation.slice(0, 12)}: ${err.message}`) })
    const top = topRef([k?.epochs.owner ?? null, ...this.announced(run.conversation)])
    return top !== null && compareRefs(top, self) > 0 ? top : null
  }

  async status (conversation: string): Promise<PlacementStatus> {
    const k = await this.learn(conversation)
    const run = this.opts.agents.runOf(conversation)
    const owner = k.epochs.owner
    return {
      owner,
      announced: this.announced(conversation),
      runningHere: run === undefined ? null : { device: this.opts.history.device, epoch: run.epoch },
      autoRevival: this.autoRevival(conversation),
      ownerDown: owner !== null && owner.device !== this.opts.history.device && this.downSince(owner.device) !== null,
      waiting: run?.waiting ?? null
    }
  }

  /**
   * A user message was just written here (`entry`): run the agent here if it belongs here
   * (or to nobody yet); otherwise the owner picks it up through replication.
   */
  async posted (conversation: string, entry: Entry): Promise<PostOutcome> {
    const k = await this.learn(conversation)
    const self = this.opts.history.device
    // an agent just started here counts before its start entry is written
    const run = this.opts.agents.runOf(conversation)
    const top = topRef([k.epochs.owner, ...this.announced(conversation), run === undefined ? null : { device: self, epoch: run.epoch }])
    if (top === null || top.device === self) {
      // Fresh until answered, so a crash before its agent starts leaves it to be answered after the restart.
      this.addFresh(conversation, [entry.id])
      // Busy here (or starting): the message waits its turn; the agent takes it up when the current run ends.
      if (this.opts.agents.isRunning(conversation) || this.starting.has(conversation)) return { runs: 'here', queued: true }
      await this.run(conversation, { leaf: entry.id, epoch: top?.epoch ?? 0, reason: 'user' })
      return { runs: 'here' }
    }
    this.addFresh(conversation, [entry.id])
    this.reconcile(conversation) // a dead owner's opt-in agent may be revived here
    return { runs: 'elsewhere', device: top.device, name: this.opts.peers.name(top.device), reachable: this.opts.peers.live(conversation).includes(top.device) }
  }

  /**
   * A message sent while the agent here is busy: kept (on disk) and written after what its
   * run wrote, once the run ends; then answered like any message. Returns how many wait.
   */
  async hold (conversation: string, text: string): Promise<number> {
    const texts = this.held.get(conversation) ?? []
    texts.push(text)
    this.held.set(conversation, texts)
    // acknowledged only once on disk: a crash before the run ends loses nothing
    await this.writeState()
    // the run may have ended while the state was written
    this.reconcile(conversation)
    return texts.length
  }

  /** Writes the messages held for a conversation after the branch shown here, and has them answered. */
  private async writeHeld (conversation: string): Promise<void> {
    const texts = this.held.get(conversation)
    if (texts === undefined || this.opts.agents.isRunning(conversation)) return
    const { history } = this.opts
    const dag = await history.open(conversation)
    let tip = dag.branch(history.selected(conversation)).at(-1)?.id
    if (tip === undefined) return
    const written: Entry[] = []
    for (const text of texts) {
      const [entry] = await history.append(conversation, [{ kind: 'user', body: { text }, parents: [tip] }])
      written.push(entry as Entry)
      tip = (entry as Entry).id
    }
    this.held.delete(conversation)
    history.select(conversation, tip)
    // the last is the one answered; the decision taken again sees it fresh
    this.addFresh(conversation, [tip])
    this.again.add(conversation)
  }

  /**
   * Runs the agent here again from `from` (a retry: its reply is a new branch beside the old
   * one), with the epoch it has; refused while it runs or when it belongs to another device.
   */
  async retry (conversation: string, from: string, model?: string): Promise<void> {
    // after a decision under way (a pickup may be starting the agent here right now)
    for (let p = this.queue.get(conversation); p !== undefined; p = this.queue.get(conversation)) await p
    if (this.opts.agents.isRunning(conversation)) throw new Error('the agent already runs on this device')
    const k = await this.learn(conversation)
    const top = topRef([k.epochs.owner, ...this.announced(conversation)])
    if (top !== null && top.device !== this.opts.history.device) {
      throw new Error(retryElsewhereText(this.opts.peers.name(top.device)))
    }
    await this.run(conversation, { leaf: from, epoch: top?.epoch ?? 0, reason: 'user', ...(model !== undefined ? { model } : {}) })
  }

  /** Moves the agent here with a higher epoch, continuing from `leaf` (default: the branch shown here). */
  async resume (conversation: string, leaf?: string): Promise<AgentRef> {
    // A decision under way (a revival, a pickup) may be starting the agent here right now; and
    // none starts while this move runs (the model test: a queued message taken up between the
    // check below and the start made the start fail as a second agent).
    for (let p = this.queue.get(conversation); p !== undefined; p = this.queue.get(conversation)) await p
    const moved = this.move(conversation, leaf)
    const held: Promise<void> = moved.then(() => undefined, () => undefined).finally(() => {
      if (this.queue.get(conversation) === held) this.queue.delete(conversation)
      if (this.again.delete(conversation)) this.reconcile(conversation)
    })
    this.queue.set(conversation, held)
    return await moved
  }

  private async move (conversation: string, leaf?: string): Promise<AgentRef> {
    if (this.opts.agents.isRunning(conversation)) throw new Error('the agent already runs on this device')
    const { history } = this.opts
    const dag = await history.open(conversation)
    const k = await this.learn(conversation)
    // Over an agent only announced so far this is two above the highest start held here, and
    // counts because it names that agent as `previous` (EpochLedger).
    const previous = topRef([k.epochs.owner, ...this.announced(conversation)])
    const epoch = nextEpoch(previous)
    let tip = leaf ?? dag.branch(history.selected(conversation)).at(-1)?.id
    if (tip === undefined) throw new Error(`conversation ${conversation.slice(0, 12)} has no entries yet`)
    if (previous !== null && previous.device !== history.device) {
      const from = this.opts.peers.name(previous.device)
      const [note] = await history.append(conversation, [{ kind: 'note', body: { text: `This conversation's agent now runs on ${this.opts.name()}, resumed here from ${from}. The working directory on ${from} is not on this device: files there are not available here.` }, parents: [tip] }])
      tip = (note as Entry).id
    }
    await this.run(conversation, previous === null ? { leaf: tip, epoch, reason: 'resume' } : { leaf: tip, epoch, reason: 'resume', previous })
    return { device: history.device, epoch }
  }

  /**
   * The agents connected peers announce for a conversation, but for epochs that do not count:
   * more than one above the highest start held here (EpochLedger.admits; none admitted but
   * epoch 0 before the history is read).
   */
  private announced (conversation: string): AgentRef[] {
    const epochs = this.known.get(conversation)?.epochs ?? NO_EPOCHS
    // as refs: a peer's presence row also names the conversation, which a stop's `by` must not carry
    return this.opts.peers.announced(conversation).filter(r => epochs.admits(r)).map(r => ({ device: r.device, epoch: r.epoch }))
  }

  private get clock (): Clock { return this.opts.clock ?? systemClock }

  /** The periodic sweep, on the injected clock (re-armed each time: a Clock has no interval). */
  private sweepSoon (): void {
    this.sweepTimer = unref(this.clock.setTimeout(() => {
      if (this.closed) return
      this.sweep()
      this.sweepSoon()
    }, this.opts.sweepMs ?? 1000))
  }

  /** Who is live changed: conversations that may need a decision are looked at again. */
  peersChanged (): void { this.sweep() }

  /**
   * Since when this device has taken `device` for dead, as it observed it (each sweep and
   * decision looks), or null while it does not: a device heard again starts afresh.
   */
  private downSince (device: string): number | null {
    if (!this.opts.peers.down(device)) {
      this.seenDown.delete(device)
      return null
    }
    let at = this.seenDown.get(device)
    if (at === undefined) this.seenDown.set(device, at = this.clock.now())
    return at
  }

  /** Looks at every conversation that may need an action without an event: a dead owner, or an agent here. */
  private sweep (): void {
    const self = this.opts.history.device
    for (const device of [...this.seenDown.keys()]) this.downSince(device) // one heard again starts afresh
    for (const [conversation, k] of this.known) {
      // cheap checks first: only an opt-in conversation whose owner looks dead can need reviving
      const owner = k.epochs.owner
      if (owner !== null && this.autoRevival(conversation) && owner.device !== self && this.downSince(owner.device) !== null) this.reconcile(conversation)
      // no agent yet, messages waiting: their device may have died before it started one
      else if (owner === null && this.fresh.has(conversation) && this.autoRevival(conversation)) this.reconcile(conversation)
    }
    for (const run of this.opts.agents.runs()) this.reconcile(run.conversation)
  }

  private entriesArrived (ev: EntriesEvent): void {
    this.known.get(ev.conversation)?.epochs.add(ev.joined)
    // Only what others wrote can call for an action here; our own writes were decided already.
    // And only messages, agent starts and stops, and settings change a decision: a peer's
    // agent writing its steps (most of an initial sync) opens nothing here.
    if (ev.local || !ev.joined.some(e => PLACEMENT_KINDS.has(e.kind))) return
    // Every message sent for an agent is for the conversation's agent, wherever it runs; one
    // written into the history only (`arbor post`: reply false) is not. Decided by the entry
    // itself, not by what else happened to arrive first.
    const messages = ev.joined.filter(e => e.kind === 'user' && e.body.reply !== false).map(e => e.id)
    this.addFresh(ev.conversation, messages)
    void this.learn(ev.conversation).then(() => { this.reconcile(ev.conversation) }, (err: Error) => { this.opts.log.warn(`placement of ${ev.conversation.slice(0, 12)}: ${err.message}`) })
  }

  private addFresh (conversation: string, ids: string[]): void {
    if (ids.length === 0) return
    let set = this.fresh.get(conversation)
    if (set === undefined) this.fresh.set(conversation, set = new Set())
    for (const id of ids) set.add(id)
    // Kept on disk: a message that arrived just before a crash is still answered after it.
    if (this.opened) this.writeState().catch((err: Error) => { this.opts.log.warn(`could not record waiting messages in ${this.opts.stateFile}: ${err.message}`) })
  }

  private holds (conversation: string): boolean {
    try {
      this.opts.history.resolve(conversation)
      return true
    } catch {
      return false
    }
  }

  /** Read each time, never kept: the summary may not exist yet when placement first hears of a conversation. */
  private autoRevival (conversation: string): boolean {
    return this.opts.history.summary(conversation)?.autoRevival === true
  }

  /** What this device knows of a conversation's placement, read once and kept up to date. */
  private async learn (conversation: string): Promise<Known> {
    const have = this.known.get(conversation)
    if (have !== undefined) return have
    const dag = await this.opts.history.open(conversation)
    // another learn may have finished while the history opened
    const k: Known = this.known.get(conversation) ?? { epochs: new EpochLedger(dag.entries()) }
    this.known.set(conversation, k)
    return k
  }

  /** Takes the decision for a conversation again (serialised per conversation). */
  reconcile (conversation: string): void {
    // A peer may announce an agent for a conversation whose history has not reached this
    // device yet: its entries call for the decision when they arrive.
    if (this.closed || !this.restoring || !this.holds(conversation)) return
    if (this.queue.has(conversation)) { this.again.add(conversation); return }
    const p = this.decideAndAct(conversation)
      .catch((err: Error) => {
        // A decision that failed (an agent that would not start) is taken again shortly.
        this.opts.log.warn(`placement of ${conversation.slice(0, 12)}: ${err.message}; trying again in ${RETRY_MS / 1000} s`)
        const t = unref(this.clock.setTimeout(() => { this.retries.delete(t); this.reconcile(conversation) }, RETRY_MS))
        this.retries.add(t)
      })
      .finally(() => {
        this.queue.delete(conversation)
        if (this.again.delete(conversation)) this.reconcile(conversation)
      })
    this.queue.set(conversation, p)
  }

  private async decideAndAct (conversation: string): Promise<void> {
    const { history, agents, peers } = this.opts
    // an agent being started here decides again once its run ends
    if (this.starting.has(conversation)) return
    const k = await this.learn(conversation)
    const dag = await history.open(conversation)
    const run = agents.runOf(conversation)
    const work = openWork(dag, k.epochs)
    // Messages answered meanwhile (by anyone) are no longer fresh.
    const fresh = this.fresh.get(conversation)
    if (fresh !== undefined) {
      const open = new Set(work.map(w => w.kind === 'message' ? w.message.id : ''))
      for (const id of fresh) if (!open.has(id) && dag.isJoined(id)) fresh.delete(id)
      if (fresh.size === 0) this.fresh.delete(conversation)
    }
    const action: PlacementAction = decide({
      self: history.device,
      conversation,
      owner: k.epochs.owner,
      announced: this.announced(conversation),
      running: run === undefined ? null : { device: history.device, epoch: run.epoch },
      autoRevival: this.autoRevival(conversation),
      live: peers.live(conversation),
      downSince: d => this.downSince(d),
      now: this.clock.now(),
      work,
      fresh: this.fresh.get(conversation) ?? new Set()
    })
    if (this.closed) return
    switch (action.do) {
      case 'nothing':
        // no agent runs here now: messages sent while it was busy are written and answered
        if (this.held.has(conversation)) await this.writeHeld(conversation)
        return
      case 'stop': // the loop sees it at its next step boundary (supersededBy)
        return
      case 'start': {
        this.opts.log.info(`${action.reason === 'restart' ? 'continuing' : 'answering a message in'} ${conversation.slice(0, 12)} (epoch ${action.epoch})`)
        // a turn continued after a crash keeps the model its run was asked for (a retry's)
        const leaf = action.reason === 'restart' ? dag.get(action.leaf) : undefined
        const model = leaf === undefined ? undefined : runModelAt(dag, leaf, history.device, k.epochs)
        await this.run(conversation, { leaf: action.leaf, epoch: action.epoch, reason: action.reason, ...(model !== undefined ? { model } : {}) })
        break
      }
      case 'revive': {
        // Not before this device holds every block of it a live peer announced: the owner's
        // last intent may be among them (held by that peer before the step started, on its
        // way here over a slow link), and a revival without it would run the step again.
        if (peers.unread(conversation) > 0) {
          if (await this.readAnnounced(conversation)) this.again.add(conversation) // decided again on what arrived
          return
        }
        this.unreadSaid.delete(conversation)
        const from = peers.name(action.previous?.device ?? action.poster ?? '')
        this.opts.log.info(`reviving the agent of ${conversation.slice(0, 12)} from ${from} (epoch ${action.epoch})`)
        const why = action.previous === null
          ? `the message was sent on ${from}, which stopped responding before its agent started. The working directory on ${from} is not on this device: files there are not available here.`
          : `${from}, where it ran, stopped responding. The working directory on ${from} is not on this device: files there are not available here. A step that was running there has an unknown outcome: check before repeating it.`
        const [note] = await history.append(conversation, [{ kind: 'note', body: { text: `This conversation's agent was revived on ${this.opts.name()} because ${why}` }, parents: [action.leaf] }])
        await this.run(conversation, { leaf: (note as Entry).id, epoch: action.epoch, reason: 'revival', ...(action.previous !== null ? { previous: action.previous } : {}) })
        break
      }
    }
  }

  /**
   * Waits, at most REVIVAL_READ_MS on the placement clock, for the blocks of a conversation
   * that live peers announced to be read here: true once they are. Else it says why in the
   * log (again when the count changes) and the revival is given up for now; the next sweep
   * tries again. Reviving blind could run the owner's last step a second time.
   */
  private async readAnnounced (conversation: string): Promise<boolean> {
    const { peers, history } = this.opts
    const since = this.clock.now()
    for (;;) {
      const n = peers.unread(conversation)
      if (n === 0) return true
      const waited = this.clock.now() - since
      if (this.closed) return false
      if (waited >= REVIVAL_READ_MS) {
        if (this.unreadSaid.get(conversation) !== n) {
          this.unreadSaid.set(conversation, n)
          this.opts.log.warn(`not reviving the agent of ${conversation.slice(0, 12)} yet: the other devices announced ${n} block(s) of it that have not reached this device after ${Math.round(waited)} ms (the step its agent last started may be among them); trying again at the next sweep`)
        }
        return false
      }
      await new Promise<void>(resolve => {
        const done = (): void => {
          history.off('entries', onEntries)
          this.clock.clearTimeout(timer)
          this.wakers.delete(done)
          resolve()
        }
        const onEntries = (ev: EntriesEvent): void => { if (ev.conversation === conversation) done() }
        // blocks are counted as indexed, some join no entry (a parent still missing): looked at again shortly too
        const timer = this.clock.setTimeout(done, Math.min(100, REVIVAL_READ_MS - waited))
        history.on('entries', onEntries)
        this.wakers.add(done)
      })
    }
  }

  /** Starts an agent here; when it ends, messages that queued meanwhile are looked at. */
  private async run (conversation: string, opts: StartOptions): Promise<void> {
    const failed = (err: Error): void => { this.opts.log.warn(`could not record the agents running here in ${this.opts.stateFile}: ${err.message}`) }
    // on disk before the agent writes its start: a crash after that start must find it to continue
    this.starting.set(conversation, (this.starting.get(conversation) ?? 0) + 1)
    try {
      await this.writeState().catch(failed)
      await this.opts.start(conversation, opts)
    } finally {
      const n = (this.starting.get(conversation) ?? 1) - 1
      if (n === 0) this.starting.delete(conversation)
      else this.starting.set(conversation, n)
    }
    this.writeState().catch(failed)
    void this.opts.agents.wait(conversation).then(() => { this.reconcile(conversation); return this.writeState() }).catch(failed)
  }

  /** The conversations to look at again after a restart: agents that ran here, messages waiting for them. */
  private async readState (): Promise<string[]> {
    try {
      const raw = JSON.parse(await fs.readFile(this.opts.stateFile, 'utf8')) as { running?: unknown; waiting?: unknown; held?: unknown }
      const running = Array.isArray(raw.running) ? raw.running.filter((c): c is string => typeof c === 'string') : []
      this.savedRunning = running
      const waiting = raw.waiting !== null && typeof raw.waiting === 'object' ? raw.waiting as Record<string, unknown> : {}
      for (const [conversation, ids] of Object.entries(waiting)) {
        if (Array.isArray(ids)) this.addFresh(conversation, ids.filter((id): id is string => typeof id === 'string'))
      }
      const held = raw.held !== null && typeof raw.held === 'object' ? raw.held as Record<string, unknown> : {}
      for (const [conversation, texts] of Object.entries(held)) {
        const t = Array.isArray(texts) ? texts.filter((x): x is string => typeof x === 'string') : []
        if (t.length > 0) this.held.set(conversation, t)
      }
      return [...new Set([...running, ...this.fresh.keys(), ...this.held.keys()])]
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
      this.opts.log.warn(`could not read ${this.opts.stateFile} (${(err as Error).message}); agents cut short by a crash will not continue by themselves`)
      return []
    }
  }

  /** the last write of the state file, which close waits for */
  private writing: Promise<void> = Promise.resolve()
  /** The conversations with an agent running here, and the messages waiting for them. */
  private writeState (): Promise<void> {
    // writeStateFile coalesces: a burst of messages is one write of the state as it is when
    // it runs. Also while closing: the agents stopping cleanly leave the running list
    // (nothing to continue), while messages still waiting for them are kept.
    this.writing = writeStateFile(this.opts.stateFile, () => {
      const running = [...new Set([...this.leftRunning, ...this.starting.keys(), ...this.opts.agents.runs().map(r => r.conversation)])].sort()
      const waiting = Object.fromEntries([...this.fresh].map(([c, ids]) => [c, [...ids].sort()]))
      const held = Object.fromEntries(this.held)
      return JSON.stringify(this.held.size > 0 ? { running, waiting, held } : { running, waiting })
    })
    return this.writing
  }
}

/** A system timer must not keep the process alive for a sweep or a retry; other clocks' timers have no unref. */
function unref (t: ClockTimer): ClockTimer {
  (t as { unref?: () => void }).unref?.()
  return t
}
