// Properties of a fork's copy (shared/fork-copy.ts, as handlers/fork.ts writes it): over random
// branches with entries of this device and of peers, lifecycle entries and settings, the copy
// written as this device's own entries keeps the copied kinds in order with their bodies, holds no
// lifecycle entry, note or setting, and leaves the planner no call to run: nothing the source
// planned (a peer's model's calls included) is ever run in the fork, whichever agent plans, even
// for tools it would re-run freely. fast-check prints the seed and path of a failure.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import { planNext } from '../../../src/main/runtime/agent/step-planner'
import { copyDraft, forkCopy, notRunDraft } from '../../../src/shared/conversation/fork-copy'
import type { EffectClass, Entry, EntryDraft } from '../../../src/shared/entry/entry'

const SELF = 'a'.repeat(64)
const PEER = 'b'.repeat(64)
const CALL_IDS = ['c0', 'c1', 'c2']
// every tool re-run freely: the worst case for a copied call
const effectOf = (): EffectClass => 'read'

type Step =
  | { kind: 'user' | 'note' | 'meta' | 'agent.started'; by: string }
  | { kind: 'assistant'; by: string; calls: string[] }
  | { kind: 'tool.intent' | 'tool.result'; by: string; callId: string }

const byArb = fc.constantFrom(SELF, PEER)
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constantFrom('user' as const, 'note' as const, 'meta' as const, 'agent.started' as const), by: byArb }),
  fc.record({ kind: fc.constant('assistant' as const), by: byArb, calls: fc.uniqueArray(fc.constantFrom(...CALL_IDS), { maxLength: 3 }) }),
  fc.record({ kind: fc.constantFrom('tool.intent' as const, 'tool.result' as const), by: byArb, callId: fc.constantFrom(...CALL_IDS) })
)

function branchOf (steps: Step[]): Entry[] {
  const root = makeEntry({ kind: 'conversation', body: { title: 't', nonce: 'n' }, parents: [] }, { conversation: null, device: SELF, ts: 0 })
  const out: Entry[] = [root]
  steps.forEach((s, i) => {
    const parents = [(out.at(-1) as Entry).id]
    let draft: EntryDraft
    switch (s.kind) {
      case 'user': draft = { kind: 'user', body: { text: `u${i}` }, parents }; break
      case 'note': draft = { kind: 'note', body: { text: `n${i}` }, parents }; break
      case 'meta': draft = { kind: 'meta', body: { key: 'llm', value: { baseURL: 'http://evil' }, hlc: { wall: i, counter: 0, device: s.by } }, parents }; break
      case 'agent.started': draft = { kind: 'agent.started', body: { epoch: i, reason: 'user' }, parents, agent: `agent#${i}` }; break
      case 'assistant': draft = { kind: 'assistant', body: s.calls.length === 0 ? { text: `a${i}` } : { text: `a${i}`, toolCalls: s.calls.map(id => ({ id, name: 'cat', args: { i } })) }, parents, agent: 'agent#0' }; break
      case 'tool.intent': draft = { kind: 'tool.intent', body: { callId: s.callId, tool: 'cat', args: {}, effect: 'read', idemKey: `k${i}` }, parents, agent: 'agent#0' }; break
      case 'tool.result': draft = { kind: 'tool.result', body: { callId: s.callId, status: 'ok', output: `r${i}` }, parents, agent: 'agent#0' }; break
    }
    out.push(makeEntry(draft, { conversation: root.id, device: s.by, ts: i + 1 }))
  })
  return out
}

/** The fork as handlers/fork.ts writes it: this device's entries, no agent, each the child of the one before. */
function written (branch: Entry[]): Entry[] {
  const root = makeEntry({ kind: 'conversation', body: { title: 'f', nonce: 'm' }, parents: [] }, { conversation: null, device: SELF, ts: 100 })
  const out: Entry[] = [root]
  const copies = new Map<string, string>()
  const add = (d: EntryDraft | undefined, source?: string): void => {
    if (d === undefined) return
    const e = makeEntry({ ...d, parents: [(out.at(-1) as Entry).id] }, { conversation: root.id, device: SELF, ts: 100 + out.length })
    if (source !== undefined) copies.set(source, e.id)
    out.push(e)
  }
  const copy = forkCopy(branch)
  for (const e of copy.entries) add(copyDraft(e, 'x', copies), e.id)
  for (const callId of copy.open) add(notRunDraft(callId, 'x'))
  return out
}

describe('a fork\'s copy of a branch', () => {
  it('keeps what was said in order, drops lifecycle, notes and settings, and leaves no call to run', () => {
    const seen = { open: 0, closed: 0 }
    fc.assert(fc.property(fc.array(stepArb, { maxLength: 16 }), fc.nat(), fc.constantFrom('agent#0', 'agent#1'), (steps, cut, agent) => {
      const full = branchOf(steps)
      const branch = full.slice(0, 1 + (cut % full.length)) // root → the entry forked at
      const fork = written(branch)
      const said = branch.slice(1).filter(e => ['user', 'assistant', 'tool.intent', 'tool.result'].includes(e.kind))
      const copied = fork.slice(1, 1 + said.length)
      expect(copied.map(e => [e.kind, e.body])).toEqual(said.map(e => [e.kind, e.body]))
      for (const e of fork.slice(1 + said.length)) expect(e).toMatchObject({ kind: 'tool.result', body: { status: 'cancelled' } })
      expect(fork.some(e => ['meta', 'note', 'agent.started', 'agent.stopped'].includes(e.kind))).toBe(false)
      // the source's planner would run a call here, the fork's never does
      if (planNext(branch.map(e => ({ ...e, author: { device: SELF, agent } }) as Entry), effectOf, { device: SELF, agent }).kind === 'tool') seen.open++
      const step = planNext(fork, effectOf, { device: SELF, agent })
      expect(step.kind, 'a call copied into the fork would run there').not.toBe('tool')
      expect(step.kind).not.toBe('unknown-outcome')
      if (fork.length - 1 > said.length) seen.closed++
    }), { numRuns: 1000 })
    // the generator reaches the cases that matter (about 1 run in 20 leaves the source a call to
    // run: at 300 runs one seed in ten fell under 10, a CI run failed so; at 1,000 the mean is ~50)
    expect(seen.open).toBeGreaterThan(10)
    expect(seen.closed).toBeGreaterThan(10)
  })
})
