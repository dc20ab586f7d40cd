import type { EffectClass, Entry, EntryOf } from '../../../shared/entry/entry'
import type { IrMessage, IrToolCall } from '../../../shared/llm-ir'
import { contextView, summaryMessage } from './compaction'

/**
 * What the agent does next on a branch, decided from the entries alone, so an agent
 * restarted anywhere continues where the history says it is (DESIGN.md, "Durable steps").
 */
export type NextStep =
  | { kind: 'idle' }                       // no user message to answer
  | { kind: 'model' }                      // call the model with the branch so far
  | { kind: 'tool'; assistant: EntryOf<'assistant'>; call: IrToolCall; effect: EffectClass; intent?: EntryOf<'tool.intent'> }
  /** a call not run here: interrupted, planned by another agent that may have started it unseen, or by another device */
  | { kind: 'unknown-outcome'; assistant: EntryOf<'assistant'>; call: IrToolCall; why: UnknownWhy; intent?: EntryOf<'tool.intent'> }
  | { kind: 'done' }                       // the model answered without tool calls

/**
 * Why a call's outcome is recorded as unknown instead of running it: `interrupted` (an intent
 * without a result), `other-agent` (an earlier agent of this device planned a step that
 * changes things), `other-device` (another device wrote the call: an entry, never an instruction),
 * `not-an-agent` (no agent wrote it: a session imported from another harness is history only).
 */
export type UnknownWhy = 'interrupted' | 'other-agent' | 'other-device' | 'not-an-agent'

/** Who is planning: this device, and its agent (author.agent of the entries it writes). */
export interface Planner { device: string; agent: string }

/** The idempotency key of a tool call: stable across restarts, unique per call. */
export function idemKey (assistant: Entry, callId: string): string {
  return `${assistant.id}:${callId}`
}

/**
 * Interrupted steps: read and idempotent ones run again (with the same idemKey);
 * workspace and external ones may have changed something, so their outcome is unknown.
 */
export function rerunnable (effect: EffectClass): boolean {
  return effect === 'read' || effect === 'idempotent'
}

/**
 * Plans the next step of the turn that ends the branch: the entries after its last user
 * message. Pure: what runs is decided from the entries and this device's tool registry alone.
 *
 * - A call's effect class is `effectOf(tool)` — this device's registry, 'external' for a tool
 *   it does not know — never the effect an entry (an intent) names.
 * - A call in an assistant entry another device wrote is never run here, whatever its effect:
 *   its outcome is unknown and the model decides again (DESIGN.md, "Trust"). Nor one in an
 *   assistant entry no agent wrote (conversation.import): a file's tool calls are history.
 * - A step an earlier agent of this device planned that changes things (workspace, external)
 *   is not run either, even without an intent in view: that agent may have started it on the
 *   other side of a partition, where its intent cannot be seen. Read and idempotent ones are
 *   run again (with their idemKey), and so are this agent's own interrupted ones.
 */
export function planNext (branch: readonly Entry[], effectOf: (tool: string) => EffectClass | undefined, self: Planner): NextStep {
  // Only what follows the turn's last assistant message counts: read back to it, not the
  // whole turn (an agent plans every step of a turn of hundreds of entries).
  let assistant: EntryOf<'assistant'> | undefined
  const intents = new Map<string, EntryOf<'tool.intent'>>()
  const results = new Set<string>()
  let i = branch.length - 1
  for (; i >= 0; i--) {
    const e = branch[i] as Entry
    if (e.kind === 'user') break
    if (e.kind === 'assistant') { assistant = e; break }
    // the latest intent for a call is the one that counts
    if (e.kind === 'tool.intent') { if (!intents.has(e.body.callId)) intents.set(e.body.callId, e) }
    else if (e.kind === 'tool.result') results.add(e.body.callId)
  }
  // No user message in the branch at all: nothing to answer.
  while (i >= 0 && branch[i]?.kind !== 'user') i--
  if (i < 0) return { kind: 'idle' }
  if (assistant === undefined) return { kind: 'model' }
  const calls = assistant.body.toolCalls ?? []
  if (calls.length === 0) return { kind: 'done' }
  const fromHere = assistant.author.device === self.device
  const mine = fromHere && assistant.author.agent === self.agent
  for (const call of calls) {
    if (results.has(call.id)) continue
    const intent = intents.get(call.id)
    const withIntent = intent === undefined ? {} : { intent }
    if (!fromHere) return { kind: 'unknown-outcome', assistant, call, why: 'other-device', ...withIntent }
    if (assistant.author.agent === undefined) return { kind: 'unknown-outcome', assistant, call, why: 'not-an-agent', ...withIntent }
    const effect = effectOf(call.name) ?? 'external'
    if (!rerunnable(effect)) {
      if (intent !== undefined) return { kind: 'unknown-outcome', assistant, call, why: 'interrupted', intent }
      if (!mine) return { kind: 'unknown-outcome', assistant, call, why: 'other-agent' }
    }
    return { kind: 'tool', assistant, call, effect, ...withIntent }
  }
  return { kind: 'model' }
}

const UNKNOWN_OUTCOME = 'The outcome of this call is unknown: the agent stopped while it ran, before its result was recorded. It may or may not have taken effect; check before repeating it.'
const NO_RESULT = 'No result was recorded for this call: the turn ended before it ran.'

/** What the model is told when a step's outcome is unknown. */
export function unknownOutcomeText (): string { return UNKNOWN_OUTCOME }

/**
 * The branch as model messages: user and assistant messages, tool results (with the
 * tool's name), notes as system messages; entries from a newer version are left out. Every tool call gets a tool message, so the
 * conversation stays well-formed for the API even when a turn was cut short. From the latest
 * compaction on the branch (contextView): its summary, then the entries it did not fold.
 */
export function toIrMessages (branch: readonly Entry[], system: string): IrMessage[] {
  return irMessagesOf(branch, system).finish()
}

/** The builder that has walked the branch's context view (from its latest compaction). */
export function irMessagesOf (branch: readonly Entry[], system: string): IrMessageBuilder {
  const view = contextView(branch)
  const messages = new IrMessageBuilder(system, view.compaction)
  for (const e of view.entries) messages.push(e)
  return messages
}

/**
 * toIrMessages' walk, one entry at a time, so an agent can extend the messages of its branch
 * as it appends (model-messages.ts) instead of walking the whole branch every model step.
 * `push` takes the entries of a context view (contextView: no compaction entries); the
 * messages it has made are never changed afterwards, so a provider may remember them by identity.
 */
export class IrMessageBuilder {
  private readonly out: IrMessage[]
  private readonly pendingNotes: string[] = []
  /** calls of the last assistant message without a result yet */
  private open = new Map<string, IrToolCall>()

  constructor (system: string, compaction?: EntryOf<'compaction'>) {
    this.out = [{ role: 'system', text: system }]
    if (compaction !== undefined) this.out.push(summaryMessage(compaction))
  }

  push (e: Entry): void {
    const out = this.out
    switch (e.kind) {
      case 'user':
        this.closeOpen(out)
        out.push({ role: 'user', text: e.body.text })
        break
      case 'assistant': {
        this.closeOpen(out)
        const calls = e.body.toolCalls ?? []
        const msg: IrMessage = { role: 'assistant', text: e.body.text }
        if (calls.length > 0) msg.toolCalls = calls.map(c => ({ id: c.id, name: c.name, args: c.args }))
        if (e.body.reasoning !== undefined) msg.reasoning = e.body.reasoning
        out.push(msg)
        for (const c of calls) this.open.set(c.id, { id: c.id, name: c.name, args: c.args })
        break
      }
      case 'tool.result': {
        const call = this.open.get(e.body.callId)
        if (call === undefined) break // a result for a call of an older message: already closed
        this.open.delete(e.body.callId)
        const output = e.body.status === 'unknown' ? UNKNOWN_OUTCOME : e.body.status === 'cancelled' ? `Cancelled by the user. ${e.body.output}`.trim() : e.body.output
        out.push({ role: 'tool', callId: call.id, name: call.name, output, status: e.body.status })
        break
      }
      case 'note':
        // A note between a tool call and its result would break the message order: after.
        if (this.open.size === 0) out.push({ role: 'system', text: e.body.text })
        else this.pendingNotes.push(e.body.text)
        break
      case 'unknown':
        // From a newer version: this one cannot say what it means, so the model is not shown it
        // (and the turn goes on around it, as the planner reads the branch without it).
        break
      default:
        break
    }
    if (this.open.size === 0 && this.pendingNotes.length > 0) {
      for (const text of this.pendingNotes.splice(0)) out.push({ role: 'system', text })
    }
  }

  /** The messages so far, every call closed (the builder itself is left as it was: more may be pushed). */
  finish (): IrMessage[] {
    const out = this.out.slice()
    if (this.open.size === 0 && this.pendingNotes.length === 0) return out
    const open = new Map(this.open)
    const notes = this.pendingNotes.slice()
    this.closeOpen(out, open, notes)
    return out
  }

  private closeOpen (out: IrMessage[], open = this.open, notes = this.pendingNotes): void {
    for (const call of open.values()) out.push({ role: 'tool', callId: call.id, name: call.name, output: NO_RESULT, status: 'unknown' })
    open.clear()
    for (const text of notes.splice(0)) out.push({ role: 'system', text })
  }
}

/** Tokens used by every assistant entry of the conversation (all branches). */
export function usageTotal (entries: Iterable<Entry>): { input: number; output: number; reasoning: number } {
  const total = { input: 0, output: 0, reasoning: 0 }
  for (const e of entries) {
    if (e.kind !== 'assistant' || e.body.usage === undefined) continue
    total.input += e.body.usage.input
    total.output += e.body.usage.output
    total.reasoning += e.body.usage.reasoning ?? 0
  }
  return total
}
