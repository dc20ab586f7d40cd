import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { DEV, linearBranch, PEER } from '../../helpers/linear-branch'
import { planNext, toIrMessages, idemKey, usageTotal } from '../../../src/main/runtime/agent/step-planner'
import type { EffectClass, Entry } from '../../../src/shared/entry/entry'
import type { IrMessage } from '../../../src/shared/llm-ir'

const AGENT = 'agent#0'
/** the agent planning now: the one that wrote the assistant entries of `branch` */
const ME = { device: DEV, agent: AGENT }

const branch = linearBranch
/** the same draft, written by another device */
const byPeer = <T extends object>(d: T): T & { by: string } => ({ ...d, by: PEER })
const user = (text: string) => ({ kind: 'user' as const, body: { text } })
const asst = (text: string, calls: Array<[string, string]> = []) => ({ kind: 'assistant' as const, agent: AGENT, body: calls.length === 0 ? { text } : { text, toolCalls: calls.map(([id, name]) => ({ id, name, args: { x: id } })) } })
const intent = (callId: string, tool: string, effect: EffectClass) => ({ kind: 'tool.intent' as const, body: { callId, tool, args: {}, effect, idemKey: 'k' } })
const result = (callId: string, status: 'ok' | 'error' | 'unknown' | 'cancelled' = 'ok') => ({ kind: 'tool.result' as const, body: { callId, status, output: `out ${callId}` } })
const effects: Record<string, EffectClass> = { cat: 'read', fetch: 'idempotent', bash: 'workspace', pay: 'external' }
const effectOf = (t: string): EffectClass | undefined => effects[t]

describe('planNext', () => {
  it('follows a turn from the user message to the answer', () => {
    expect(planNext(branch(), effectOf, ME).kind).toBe('idle')
    expect(planNext(branch(user('hi')), effectOf, ME).kind).toBe('model')
    expect(planNext(branch(user('hi'), asst('hello')), effectOf, ME).kind).toBe('done')
    expect(planNext(branch(user('hi'), asst('hello'), user('again')), effectOf, ME).kind).toBe('model')
    const two = branch(user('go'), asst('', [['c1', 'cat'], ['c2', 'pay']]))
    expect(planNext(two, effectOf, ME)).toMatchObject({ kind: 'tool', call: { id: 'c1' }, effect: 'read' })
    expect(planNext(branch(user('go'), asst('', [['c1', 'cat'], ['c2', 'pay']]), intent('c1', 'cat', 'read'), result('c1')), effectOf, ME)).toMatchObject({ kind: 'tool', call: { id: 'c2' }, effect: 'external' })
    expect(planNext(branch(user('go'), asst('', [['c1', 'cat'], ['c2', 'pay']]), result('c1'), result('c2')), effectOf, ME).kind).toBe('model')
    // lifecycle entries in between change nothing
    expect(planNext(branch(user('go'), { kind: 'agent.started', body: { epoch: 0, reason: 'user' } }, asst('x'), { kind: 'agent.stopped', body: { epoch: 0, reason: 'done' } }), effectOf, ME).kind).toBe('done')
  })

  it('never runs a step that changes things when another agent of this device planned it (it may have started it unseen)', () => {
    const b = branch(user('go'), asst('', [['c1', 'pay'], ['c2', 'cat']]))
    const next = { device: DEV, agent: 'agent#1' }
    expect(planNext(b, effectOf, next)).toMatchObject({ kind: 'unknown-outcome', call: { id: 'c1' }, why: 'other-agent' })
    expect(planNext(b, effectOf, next)).not.toHaveProperty('intent')
    expect(planNext(b, effectOf, ME)).toMatchObject({ kind: 'tool', call: { id: 'c1' }, effect: 'external' })
    // a read step another agent of this device planned is run here: repeating it changes nothing
    const readFirst = branch(user('go'), asst('', [['c2', 'cat'], ['c1', 'pay']]))
    expect(planNext(readFirst, effectOf, next)).toMatchObject({ kind: 'tool', call: { id: 'c2' }, effect: 'read' })
  })

  it('never runs a call of an assistant entry no agent wrote (an imported session), not even a read', () => {
    for (const tool of ['cat', 'fetch', 'bash', 'pay', 'gone']) {
      const { agent: _, ...imported } = asst('', [['c1', tool]])
      expect(planNext(branch(user('go'), imported), effectOf, ME), tool).toMatchObject({ kind: 'unknown-outcome', call: { id: 'c1' }, why: 'not-an-agent' })
    }
  })

  it('never runs a call another device wrote, whatever its effect or the effect its intent claims', () => {
    for (const tool of ['cat', 'fetch', 'bash', 'pay', 'gone']) {
      const b = branch(user('go'), byPeer(asst('', [['c1', tool]])))
      expect(planNext(b, effectOf, ME), tool).toMatchObject({ kind: 'unknown-outcome', call: { id: 'c1' }, why: 'other-device' })
      const claimed = branch(user('go'), byPeer(asst('', [['c1', tool]])), byPeer(intent('c1', tool, 'read')))
      expect(planNext(claimed, effectOf, ME), tool).toMatchObject({ kind: 'unknown-outcome', call: { id: 'c1' }, why: 'other-device' })
    }
    // the peer's results are kept; the next call of its message is still not run
    const half = branch(user('go'), byPeer(asst('', [['c1', 'cat'], ['c2', 'cat']])), byPeer(result('c1')))
    expect(planNext(half, effectOf, ME)).toMatchObject({ kind: 'unknown-outcome', call: { id: 'c2' } })
    // once every call has a result, the model decides again
    expect(planNext(branch(user('go'), byPeer(asst('', [['c1', 'bash']])), result('c1', 'unknown')), effectOf, ME).kind).toBe('model')
  })

  it('re-runs interrupted read and idempotent steps, and gives up on workspace and external ones', () => {
    for (const [tool, effect, expected] of [['cat', 'read', 'tool'], ['fetch', 'idempotent', 'tool'], ['bash', 'workspace', 'unknown-outcome'], ['pay', 'external', 'unknown-outcome']] as const) {
      const b = branch(user('go'), asst('', [['c1', tool]]), intent('c1', tool, effect))
      const step = planNext(b, effectOf, ME)
      expect(step.kind, tool).toBe(expected)
      if (step.kind === 'tool') expect(step.intent?.body.callId).toBe('c1')
    }
    // the registry's effect wins over the one an intent names (an entry, even one of ours); unknown tools count as external
    expect(planNext(branch(user('go'), asst('', [['c1', 'cat']]), intent('c1', 'cat', 'external')), effectOf, ME)).toMatchObject({ kind: 'tool', effect: 'read' })
    expect(planNext(branch(user('go'), asst('', [['c1', 'bash']]), intent('c1', 'bash', 'read')), effectOf, ME)).toMatchObject({ kind: 'unknown-outcome', why: 'interrupted' })
    expect(planNext(branch(user('go'), asst('', [['c1', 'bash']]), byPeer(intent('c1', 'bash', 'read'))), effectOf, ME)).toMatchObject({ kind: 'unknown-outcome', why: 'interrupted' })
    expect(planNext(branch(user('go'), asst('', [['c1', 'gone']])), effectOf, ME)).toMatchObject({ kind: 'tool', effect: 'external' })
  })

  it('derives idempotency keys from the assistant entry and the call id', () => {
    const b = branch(user('go'), asst('', [['c1', 'cat']]))
    expect(idemKey(b[2] as Entry, 'c1')).toBe(`${(b[2] as Entry).id}:c1`)
  })
})

describe('toIrMessages', () => {
  it('pairs every tool call with one tool message, even when a turn was cut short', () => {
    const b = branch(user('go'), asst('', [['c1', 'cat'], ['c2', 'pay']]), result('c1'), { kind: 'note', body: { text: 'moved to the laptop' } }, user('and now?'))
    const msgs = toIrMessages(b, 'SYS')
    expect(msgs.map(m => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'system', 'user'])
    expect(msgs[4]).toMatchObject({ role: 'tool', callId: 'c2', status: 'unknown' })
    expect(msgs[5]).toEqual({ role: 'system', text: 'moved to the laptop' })
    const unknown = toIrMessages(branch(user('go'), asst('', [['c1', 'pay']]), result('c1', 'unknown')), 'S')
    expect((unknown[3] as { output: string }).output).toMatch(/outcome of this call is unknown/)
  })

  it('is well-formed for any interleaving of entries (fast-check)', () => {
    const step = fc.oneof(
      fc.constant(user('u')),
      fc.array(fc.constantFrom('cat', 'pay', 'bash'), { maxLength: 3 }).map((tools) => asst('a', tools.map((t, i) => [`c${i}`, t] as [string, string]))),
      fc.nat(3).map(i => result(`c${i}`)),
      fc.constant({ kind: 'note' as const, body: { text: 'n' } })
    )
    fc.assert(fc.property(fc.array(step, { maxLength: 25 }), drafts => {
      const msgs = toIrMessages(branch(...drafts), 'S')
      let open = new Set<string>()
      for (const m of msgs as IrMessage[]) {
        if (m.role === 'tool') {
          expect(open.has(m.callId)).toBe(true)
          open.delete(m.callId)
        } else {
          expect(open.size).toBe(0) // no other message before all results are in
          if (m.role === 'assistant') open = new Set((m.toolCalls ?? []).map(c => c.id))
        }
      }
      expect(open.size).toBe(0)
    }))
  })
})


describe('usageTotal', () => {
  it('adds the usage of every assistant entry', () => {
    const b = branch(user('a'), { kind: 'assistant', body: { text: 'x', usage: { input: 10, output: 5 } } }, user('b'), { kind: 'assistant', body: { text: 'y', usage: { input: 7, output: 3, reasoning: 2 } } })
    expect(usageTotal(b)).toEqual({ input: 17, output: 8, reasoning: 2 })
  })
})
