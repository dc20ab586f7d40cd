// Properties of planNext (DESIGN.md, "Trust" and "Durable steps"): over random branches whose
// entries come from this device (this agent or an earlier one) and from other devices, with
// intents naming random (forged) effect classes, no call of another device's assistant entry
// is ever returned as a step to run, and a step to run always has the effect class this
// device's registry gives its tool. fast-check prints the seed and path of a failure.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import { planNext, rerunnable, type Planner } from '../../../src/main/runtime/agent/step-planner'
import { EFFECT_CLASSES, type EffectClass, type Entry, type EntryDraft, type EntryOf } from '../../../src/shared/entry/entry'

const SELF = 'a'.repeat(64)
const PEERS = ['b'.repeat(64), 'c'.repeat(64)]
const AGENTS = ['agent#0', 'agent#1', 'agent#2']
const REGISTRY: Record<string, EffectClass> = { cat: 'read', fetch: 'idempotent', bash: 'workspace', pay: 'external' }
const TOOLS = [...Object.keys(REGISTRY), 'gone'] // 'gone': a tool this device does not have
const effectOf = (t: string): EffectClass | undefined => REGISTRY[t]
const CALL_IDS = ['c0', 'c1', 'c2']

type Author = { device: string; agent?: string }
type Step =
  | { kind: 'user'; by: Author }
  | { kind: 'assistant'; by: Author; calls: Array<{ id: string; tool: string }> }
  | { kind: 'tool.intent'; by: Author; callId: string; tool: string; effect: EffectClass }
  | { kind: 'tool.result'; by: Author; callId: string; status: 'ok' | 'unknown' }
  | { kind: 'note'; by: Author }

const authorArb: fc.Arbitrary<Author> = fc.oneof(
  fc.constantFrom(...AGENTS).map(agent => ({ device: SELF, agent })),
  fc.record({ device: fc.constantFrom(...PEERS), agent: fc.constantFrom(...AGENTS) }),
  fc.constantFrom(...PEERS).map(device => ({ device }))
)

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('user' as const), by: authorArb }),
  fc.record({
    kind: fc.constant('assistant' as const),
    by: authorArb,
    calls: fc.uniqueArray(fc.record({ id: fc.constantFrom(...CALL_IDS), tool: fc.constantFrom(...TOOLS) }), { selector: c => c.id, maxLength: 3 })
  }),
  fc.record({ kind: fc.constant('tool.intent' as const), by: authorArb, callId: fc.constantFrom(...CALL_IDS), tool: fc.constantFrom(...TOOLS), effect: fc.constantFrom(...EFFECT_CLASSES) }),
  fc.record({ kind: fc.constant('tool.result' as const), by: authorArb, callId: fc.constantFrom(...CALL_IDS), status: fc.constantFrom('ok' as const, 'unknown' as const) }),
  fc.record({ kind: fc.constant('note' as const), by: authorArb })
)

/** A linear branch: the root, then each step the child of the one before. */
function branchOf (steps: Step[]): Entry[] {
  const root = makeEntry({ kind: 'conversation', body: { title: 't', nonce: 'n' }, parents: [] }, { conversation: null, device: SELF, ts: 0 })
  const out: Entry[] = [root]
  steps.forEach((s, i) => {
    const parents = [(out.at(-1) as Entry).id]
    let draft: EntryDraft
    switch (s.kind) {
      case 'user': draft = { kind: 'user', body: { text: `u${i}` }, parents }; break
      case 'note': draft = { kind: 'note', body: { text: `n${i}` }, parents }; break
      case 'assistant': draft = { kind: 'assistant', body: s.calls.length === 0 ? { text: `a${i}` } : { text: `a${i}`, toolCalls: s.calls.map(c => ({ id: c.id, name: c.tool, args: { i } })) }, parents }; break
      case 'tool.intent': draft = { kind: 'tool.intent', body: { callId: s.callId, tool: s.tool, args: {}, effect: s.effect, idemKey: `k${i}` }, parents }; break
      case 'tool.result': draft = { kind: 'tool.result', body: { callId: s.callId, status: s.status, output: `r${i}` }, parents }; break
    }
    if (s.by.agent !== undefined) draft.agent = s.by.agent
    out.push(makeEntry(draft, { conversation: root.id, device: s.by.device, ts: i + 1 }))
  })
  return out
}

const plannerArb: fc.Arbitrary<Planner> = fc.constantFrom(...AGENTS).map(agent => ({ device: SELF, agent }))

describe('planNext over branches with entries from other devices', () => {
  it('never returns a call of another device\'s assistant entry as a step to run, and runs each call with its registry effect', () => {
    const seen = { tool: 0, otherDevice: 0, otherAgent: 0, interrupted: 0, forged: 0 }
    fc.assert(fc.property(fc.array(stepArb, { maxLength: 16 }), plannerArb, (steps, self) => {
      const branch = branchOf(steps)
      const frozen = JSON.stringify(branch)
      const step = planNext(branch, effectOf, self)
      expect(JSON.stringify(branch), 'planNext changed its input').toBe(frozen)
      expect(planNext(branch, effectOf, self), 'planNext is a function of its input').toEqual(step)
      if (step.kind === 'tool') {
        seen.tool++
        expect(step.assistant.author.device, 'a call another device wrote would run here').toBe(SELF)
        expect(step.effect).toBe(REGISTRY[step.call.name] ?? 'external')
        expect(step.assistant.body.toolCalls?.some(c => c.id === step.call.id)).toBe(true)
        // a step that changes things runs only for the agent that planned it, and never twice
        if (!rerunnable(step.effect)) {
          expect(step.assistant.author.agent).toBe(self.agent)
          expect(step.intent).toBeUndefined()
        }
        if (step.intent !== undefined && step.intent.body.effect !== step.effect) seen.forged++
      } else if (step.kind === 'unknown-outcome') {
        if (step.why === 'other-device') seen.otherDevice++
        if (step.why === 'other-agent') seen.otherAgent++
        if (step.why === 'interrupted') seen.interrupted++
        expect(step.why === 'other-device').toBe(step.assistant.author.device !== SELF)
      }
      // whatever it decides about a call, it is the first open call of the turn's last assistant message
      if (step.kind === 'tool' || step.kind === 'unknown-outcome') {
        const lastUser = branch.findLastIndex(e => e.kind === 'user')
        const turn = branch.slice(lastUser + 1)
        const last = turn.findLast((e): e is EntryOf<'assistant'> => e.kind === 'assistant')
        expect(last?.id).toBe(step.assistant.id)
        const after = turn.slice(turn.findIndex(e => e.id === last?.id) + 1)
        const done = new Set(after.filter((e): e is EntryOf<'tool.result'> => e.kind === 'tool.result').map(e => e.body.callId))
        expect(step.call.id).toBe(last?.body.toolCalls?.find(c => !done.has(c.id))?.id)
      }
    }), {
      numRuns: 2000,
      // one branch per case counted below, so every run reaches each of them (random ones alone miss the rarest now and then)
      examples: [
        [[{ kind: 'user', by: { device: SELF, agent: 'agent#0' } }, { kind: 'assistant', by: { device: SELF, agent: 'agent#0' }, calls: [{ id: 'c0', tool: 'cat' }] }], { device: SELF, agent: 'agent#0' }],
        [[{ kind: 'user', by: { device: SELF, agent: 'agent#0' } }, { kind: 'assistant', by: { device: PEERS[0] as string, agent: 'agent#0' }, calls: [{ id: 'c0', tool: 'cat' }] }], { device: SELF, agent: 'agent#0' }],
        [[{ kind: 'user', by: { device: SELF, agent: 'agent#0' } }, { kind: 'assistant', by: { device: SELF, agent: 'agent#1' }, calls: [{ id: 'c0', tool: 'bash' }] }], { device: SELF, agent: 'agent#0' }],
        [[{ kind: 'user', by: { device: SELF, agent: 'agent#0' } }, { kind: 'assistant', by: { device: SELF, agent: 'agent#0' }, calls: [{ id: 'c0', tool: 'bash' }] }, { kind: 'tool.intent', by: { device: SELF, agent: 'agent#0' }, callId: 'c0', tool: 'bash', effect: 'workspace' }], { device: SELF, agent: 'agent#0' }],
        [[{ kind: 'user', by: { device: SELF, agent: 'agent#0' } }, { kind: 'assistant', by: { device: SELF, agent: 'agent#0' }, calls: [{ id: 'c0', tool: 'cat' }] }, { kind: 'tool.intent', by: { device: PEERS[0] as string, agent: 'agent#0' }, callId: 'c0', tool: 'cat', effect: 'external' }], { device: SELF, agent: 'agent#0' }]
      ]
    })
    // the generator reaches every case
    for (const [k, n] of Object.entries(seen)) expect(n, k).toBeGreaterThan(0)
  })
})

/** planNext as first written (a forward walk over the whole turn): the reference for the one that reads back from the end. */
function referencePlanNext (branch: readonly Entry[], self: Planner): ReturnType<typeof planNext> {
  let lastUser = -1
  for (let i = branch.length - 1; i >= 0; i--) if (branch[i]?.kind === 'user') { lastUser = i; break }
  if (lastUser === -1) return { kind: 'idle' }
  let assistant: EntryOf<'assistant'> | undefined
  const intents = new Map<string, EntryOf<'tool.intent'>>()
  const results = new Set<string>()
  for (let i = lastUser + 1; i < branch.length; i++) {
    const e = branch[i] as Entry
    if (e.kind === 'assistant') { assistant = e; intents.clear(); results.clear() } else if (e.kind === 'tool.intent') intents.set(e.body.callId, e)
    else if (e.kind === 'tool.result') results.add(e.body.callId)
  }
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
    const effect = effectOf(call.name) ?? 'external'
    if (!rerunnable(effect)) {
      if (intent !== undefined) return { kind: 'unknown-outcome', assistant, call, why: 'interrupted', intent }
      if (!mine) return { kind: 'unknown-outcome', assistant, call, why: 'other-agent' }
    }
    return { kind: 'tool', assistant, call, effect, ...withIntent }
  }
  return { kind: 'model' }
}

describe('planNext reads back from the end of the branch', () => {
  it('plans exactly what a walk over the whole turn plans', () => {
    const kinds = new Set<string>()
    fc.assert(fc.property(fc.array(stepArb, { maxLength: 24 }), plannerArb, (steps, self) => {
      const branch = branchOf(steps)
      const step = planNext(branch, effectOf, self)
      kinds.add(step.kind)
      expect(step).toEqual(referencePlanNext(branch, self))
    }), { numRuns: 2000 })
    expect([...kinds].sort()).toEqual(['done', 'idle', 'model', 'tool', 'unknown-outcome'])
  })
})
