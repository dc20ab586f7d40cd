// Where a conversation's agent runs (DESIGN.md, "Placement", "One agent per side"): pure
// decisions over what a device sees — the history it holds, the agents its peers announce,
// which peers are live — so they can be property-tested without disks or sockets.
import { createHash } from 'node:crypto'
import type { Entry } from '../../../shared/entry/entry'
import type { ConversationDag } from '../../../shared/conversation/conversation-dag'
import { compareRefs, EpochLedger, type AgentRef } from './epochs'

export { compareRefs, EpochLedger, honouredEpoch, MAX_EPOCH, type AgentRef } from './epochs'

export function sameRef (a: AgentRef | null, b: AgentRef | null): boolean {
  return a !== null && b !== null && a.epoch === b.epoch && a.device === b.device
}

/** The highest of some agents (null for none). */
export function topRef (refs: Iterable<AgentRef | null>): AgentRef | null {
  let top: AgentRef | null = null
  for (const r of refs) if (r !== null && (top === null || compareRefs(r, top) > 0)) top = r
  return top
}

/** The agent a conversation belongs to: the highest (epoch, device) that ever started in it, among epochs that count (EpochLedger). */
export function ownerOf (entries: Iterable<Entry>): AgentRef | null {
  return new EpochLedger(entries).owner
}

/** The epoch an agent that takes over from `top` (resume, revival) starts with; it names `top` as its `previous`. */
export function nextEpoch (top: AgentRef | null): number {
  return top === null ? 0 : top.epoch + 1
}

/**
 * How long each device in a revival order waits for the ones before it: the device of rank k
 * revives once the owner has been down, as it observed it, for k turns. Well above what an
 * honest reviver takes (up to REVIVAL_READ_MS = 2 s for blocks peers announced, a 1 s sweep,
 * its start announced to its peers), so honest devices do not revive twice; a device ahead
 * that never revives delays the conversation by one turn, never for ever.
 */
export const REVIVAL_TURN_MS = 10_000

/**
 * The order in which the live candidates revive a conversation's agent: rendezvous hashing,
 * so every device that sees the same candidates finds the same order, and the conversations
 * of a dead device spread over the survivors instead of all landing on one.
 */
export function revivalOrder (conversation: string, candidates: Iterable<string>): string[] {
  const scored = [...new Set(candidates)].map(device => ({ device, score: createHash('sha256').update(conversation).update(':').update(device).digest('hex') }))
  scored.sort((a, b) => a.score < b.score ? -1 : a.score > b.score ? 1 : a.device < b.device ? -1 : a.device > b.device ? 1 : 0)
  return scored.map(x => x.device)
}

/** The first device of the revival order: the one that revives at once. */
export function reviverOf (conversation: string, candidates: Iterable<string>): string | undefined {
  return revivalOrder(conversation, candidates)[0]
}

/** A branch tip that waits for an agent. */
export type OpenWork =
  /** a user message nobody has answered (nothing but notes or settings follow it) */
  | { kind: 'message'; leaf: Entry; message: Entry }
  /** an agent's turn that started and never ended (its device died or was cut off mid-turn) */
  | { kind: 'turn'; leaf: Entry; agent: AgentRef }

/** How far back a tip is followed to find the turn it belongs to. */
const MAX_WALK = 100_000

/** The tips of a conversation that wait for an agent, oldest first. */
export function openWork (dag: ConversationDag, epochs = new EpochLedger(dag.entries())): OpenWork[] {
  const out: OpenWork[] = []
  for (const head of dag.heads()) {
    const w = workAt(dag, head, epochs)
    if (w !== null) out.push(w)
  }
  return out
}

/**
 * What the tip `head` waits for: walks back to the last user message or agent boundary. A
 * start whose epoch does not count (yet) is read like a note, as placement reads it everywhere.
 */
export function workAt (dag: ConversationDag, head: Entry, epochs = new EpochLedger(dag.entries())): OpenWork | null {
  if (besideGoneOn(dag, head, epochs)) return null
  let cur: Entry | undefined = head
  for (let i = 0; cur !== undefined && i < MAX_WALK; i++) {
    const agent = epochs.startOf(cur)
    if (agent !== null) return { kind: 'turn', leaf: head, agent }
    switch (cur.kind) {
      case 'agent.stopped': return null
      // a message answered by nothing (a note or meta after it does not answer it)
      case 'user': return answered(dag, cur, epochs) ? null : { kind: 'message', leaf: head, message: cur }
      case 'conversation': return null
    }
    const p: string | undefined = cur.parents[0]
    cur = p === undefined ? undefined : dag.get(p)
  }
  return null
}

/**
 * The model a turn cut short at `leaf` was asked to use for its run alone (a retry's choice),
 * when its start is this device's own: continuing it after a crash keeps that model. A peer's
 * start chooses nothing here.
 */
export function runModelAt (dag: ConversationDag, leaf: Entry, device: string, epochs = new EpochLedger(dag.entries())): string | undefined {
  let cur: Entry | undefined = leaf
  for (let i = 0; cur !== undefined && i < MAX_WALK; i++) {
    if (epochs.startOf(cur) !== null) {
      return cur.kind === 'agent.started' && cur.author.device === device ? cur.body.model : undefined
    }
    if (cur.kind === 'agent.stopped' || cur.kind === 'user' || cur.kind === 'conversation') return undefined
    const p: string | undefined = cur.parents[0]
    cur = p === undefined ? undefined : dag.get(p)
  }
  return undefined
}

/** Entries that wait for nobody and answer nothing: notes, settings, starts that do not count, entries from a newer version. */
function looksPast (e: Entry, epochs: EpochLedger): boolean {
  return e.kind === 'note' || e.kind === 'meta' || e.kind === 'unknown' || (e.kind === 'agent.started' && epochs.startOf(e) === null)
}

/**
 * Whether the tip `head` is only notes and settings written beside a branch that went on: a
 * peer's setting lands under the tip it saw while an agent worked, and the agent goes on from
 * its own tip. The branch that went on holds the work, if any; this tip waits for nobody.
 */
function besideGoneOn (dag: ConversationDag, head: Entry, epochs: EpochLedger): boolean {
  let from: Entry | undefined = head
  for (let i = 0; from !== undefined && looksPast(from, epochs) && i < MAX_WALK; i++) {
    const p: string | undefined = from.parents[0]
    from = p === undefined ? undefined : dag.get(p)
  }
  if (from === undefined || from === head) return false
  // anything but notes and settings below `from`, on another branch than the one to `head`
  const todo = [...dag.children(from.id)]
  for (let i = 0; i < todo.length && i < MAX_WALK; i++) {
    const e = todo[i] as Entry
    if (e === head) continue
    if (!looksPast(e, epochs)) return true
    todo.push(...dag.children(e.id))
  }
  return false
}

/** Whether an agent took a message up on some branch: a turn starts after it, past notes, settings and starts that do not count. */
function answered (dag: ConversationDag, message: Entry, epochs: EpochLedger): boolean {
  const todo = [...dag.children(message.id)]
  for (let i = 0; i < todo.length && i < MAX_WALK; i++) {
    const e = todo[i] as Entry
    if (epochs.startOf(e) !== null || e.kind === 'assistant') return true
    // an entry from a newer version is looked past, as everywhere: it neither answers nor hides an answer
    if (looksPast(e, epochs)) todo.push(...dag.children(e.id))
  }
  return false
}

/** The newest of some work (the one a single agent takes first). */
export function newestWork (work: readonly OpenWork[]): OpenWork | undefined {
  let best: OpenWork | undefined
  for (const w of work) {
    if (best === undefined || w.leaf.ts > best.leaf.ts || (w.leaf.ts === best.leaf.ts && w.leaf.id > best.leaf.id)) best = w
  }
  return best
}

/** What one device sees of one conversation, to decide what its agent does. */
export interface PlacementView {
  self: string
  conversation: string
  /** the owner by the history this device holds */
  owner: AgentRef | null
  /** agents that connected peers announce running for this conversation */
  announced: readonly AgentRef[]
  /** the agent running here for it, if any */
  running: AgentRef | null
  autoRevival: boolean
  /** connected peers not suspected, that hold the conversation */
  live: readonly string[]
  /** since when this device has taken a device for dead (not heard, directly or through a peer), or null while it does not */
  downSince: (device: string) => number | null
  /** now, on the clock of `downSince` */
  now: number
  work: readonly OpenWork[]
  /**
   * Messages posted for the agent since this device has been watching (peers' messages as
   * they replicate in, its own while the agent runs elsewhere). An older unanswered message
   * (one posted with `arbor post`, or left when its turn was edited away) calls for nobody.
   */
  fresh: ReadonlySet<string>
}

export type PlacementAction =
  /** the agent here gives way to a higher one, at its next step boundary */
  | { do: 'stop'; by: AgentRef }
  /** the owner (this device) answers a peer's message, or continues a turn its crash cut short */
  | { do: 'start'; leaf: string; epoch: number; reason: 'user' | 'restart' }
  /**
   * this device takes over a dead device's agent with a higher epoch; or (previous null) answers,
   * at epoch 0, a message whose device died before its agent started
   */
  | { do: 'revive'; leaf: string; epoch: number; previous: AgentRef | null; poster?: string }
  | { do: 'nothing' }

/**
 * The one decision a device makes about a conversation's agent, level-triggered: it
 * depends only on the current view, so re-running it after any change is always safe.
 */
export function decide (v: PlacementView): PlacementAction {
  const top = topRef([v.owner, ...v.announced])
  if (v.running !== null) {
    if (top !== null && compareRefs(top, v.running) > 0) return { do: 'stop', by: top }
    return { do: 'nothing' }
  }
  if (top === null) return firstAgent(v)
  if (v.owner === null) return { do: 'nothing' }
  // The owner's turns cut short (only the current owner's: older ones were taken over), and new messages.
  const work = v.work.filter(w => w.kind === 'message' ? v.fresh.has(w.message.id) : w.agent.device === top.device && w.agent.epoch === top.epoch)
  if (top.device === v.self) {
    // A fresh message (a peer's, or ours queued while the agent was busy), or our own cut-short turn.
    const w = newestWork(work)
    if (w === undefined) return { do: 'nothing' }
    return { do: 'start', leaf: w.leaf.id, epoch: top.epoch, reason: w.kind === 'turn' ? 'restart' : 'user' }
  }
  // (an agent a connected peer announces is never down: `top` counts announced agents)
  const since = v.downSince(top.device)
  if (!v.autoRevival || since === null) return { do: 'nothing' }
  const w = newestWork(work)
  if (w === undefined) return { do: 'nothing' }
  if (!turnCame(v, since)) return { do: 'nothing' }
  return { do: 'revive', leaf: w.leaf.id, epoch: top.epoch + 1, previous: top }
}

/** Each in the revival order after the ones before it had their turn: one that never revives delays, never cancels. */
function turnCame (v: PlacementView, downSince: number): boolean {
  const rank = revivalOrder(v.conversation, [v.self, ...v.live]).indexOf(v.self)
  return rank <= 0 || v.now - downSince >= rank * REVIVAL_TURN_MS
}

/**
 * No agent yet: a message is answered by the device it was posted on (never for nobody), also
 * when a crash came between the message and its agent's start; in an opt-in conversation, when
 * that device died first, by a reviver in its turn, at epoch 0.
 */
function firstAgent (v: PlacementView): PlacementAction {
  const messages = v.work.filter((w): w is Extract<OpenWork, { kind: 'message' }> => w.kind === 'message' && v.fresh.has(w.message.id))
  const own = newestWork(messages.filter(w => w.message.author.device === v.self))
  if (own !== undefined) return { do: 'start', leaf: own.leaf.id, epoch: 0, reason: 'user' }
  if (!v.autoRevival) return { do: 'nothing' }
  const orphaned = messages.flatMap(w => {
    const since = v.downSince(w.message.author.device)
    return since === null ? [] : [{ w, since }]
  })
  const newest = newestWork(orphaned.map(o => o.w))
  const pick = orphaned.find(o => o.w === newest)
  if (pick === undefined || !turnCame(v, pick.since)) return { do: 'nothing' }
  return { do: 'revive', leaf: pick.w.leaf.id, epoch: 0, previous: null, poster: pick.w.message.author.device }
}
