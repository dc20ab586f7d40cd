// Properties of the compaction planner (runtime/agent/compaction.ts) over random conversations
// of long and short turns with tool calls, compacted as an agent would before each model step:
// a cut never separates a tool call from its intent or result, keeps the latest user message
// (and all after it, unless its turn alone does not fit: then it is kept verbatim and the turn is
// cut after a completed step), the model is then sent [system, summary, (message,) ...kept] and it
// fits whenever some cut could make it fit, and planning again once it fits changes nothing. fast-check prints the seed and path of a failure.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import {
  contextView, entryTokens, estimateContext, planCompaction, replyReserve, safeCuts, summaryBudget, summaryMessage, summaryRequest, type CompactionPlan, type ContextBudget
} from '../../../src/main/runtime/agent/compaction'
import { toIrMessages } from '../../../src/main/runtime/agent/step-planner'
import type { Entry, EntryDraft, EntryOf } from '../../../src/shared/entry/entry'
import type { IrMessage } from '../../../src/shared/llm-ir'

const SELF = 'a'.repeat(64)
const SYSTEM = 'You are a test agent.'

interface Call { out: number; intent: boolean }
interface Step { text: number; calls: Call[] }
interface Turn { user: number; steps: Step[]; answer: number; note: boolean; usage: boolean }

const callArb: fc.Arbitrary<Call> = fc.record({ out: fc.oneof(fc.nat({ max: 200 }), fc.nat({ max: 6000 })), intent: fc.boolean() })
const stepArb: fc.Arbitrary<Step> = fc.record({ text: fc.nat({ max: 400 }), calls: fc.array(callArb, { minLength: 1, maxLength: 3 }) })
const turnArb: fc.Arbitrary<Turn> = fc.record({
  user: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 3000 })),
  steps: fc.oneof(fc.array(stepArb, { maxLength: 3 }), fc.array(stepArb, { maxLength: 10 })),
  answer: fc.nat({ max: 1500 }),
  note: fc.boolean(),
  usage: fc.boolean()
})
const windowArb = fc.constantFrom(2048, 4096, 8192)

/** A conversation written as an agent would: the root, then each turn's entries, compacting before each model step. */
class Sim {
  branch: Entry[]
  compactions = 0
  plans: Array<Extract<CompactionPlan, { kind: 'compact' }>> = []
  private n = 0
  constructor (readonly budget: ContextBudget) {
    this.branch = [makeEntry({ kind: 'conversation', body: { title: 't', nonce: 'n' }, parents: [] }, { conversation: null, device: SELF, ts: 0 })]
  }

  add (draft: Omit<EntryDraft, 'parents'>): Entry {
    const root = this.branch[0] as Entry
    const e = makeEntry({ ...draft, parents: [(this.branch.at(-1) as Entry).id] } as EntryDraft, { conversation: root.id, device: SELF, ts: ++this.n })
    this.branch.push(e)
    return e
  }

  /** Before a model step: compact if the planner says so; then what the server would count of the request. */
  beforeModel (): number {
    const plan = planCompaction(this.branch, this.budget)
    if (plan.kind === 'compact') this.apply(plan)
    return serverTokens(toIrMessages(this.branch, SYSTEM)) + this.budget.overhead - textTokensOf(SYSTEM)
  }

  apply (plan: Extract<CompactionPlan, { kind: 'compact' }>): EntryOf<'compaction'> {
    this.plans.push(plan)
    this.compactions++
    // the longest summary the budget allows
    const summary = 'S'.repeat(Math.max(0, summaryBudget(this.budget.window) * 4 - 200))
    return this.add({ kind: 'compaction', body: { summary, folded: { from: plan.from, to: plan.to }, model: 'm', tokens: plan.tokens, ...(plan.keep !== undefined ? { keep: plan.keep.id } : {}) } }) as EntryOf<'compaction'>
  }

  turn (t: Turn): void {
    this.add({ kind: 'user', body: { text: 'u'.repeat(t.user) } })
    if (t.note) this.add({ kind: 'note', body: { text: 'a note' } })
    for (const s of t.steps) {
      const prompt = this.beforeModel()
      const calls = s.calls.map(() => ({ id: `call${++this.n}`, name: 'bash', args: { command: 'echo' } }))
      this.add({ kind: 'assistant', body: { text: 't'.repeat(s.text), toolCalls: calls, ...(t.usage ? { usage: { input: prompt, output: 10 } } : {}) } })
      s.calls.forEach((c, i) => {
        const id = (calls[i] as { id: string }).id
        if (c.intent) this.add({ kind: 'tool.intent', body: { callId: id, tool: 'bash', args: {}, effect: 'workspace', idemKey: id } })
        this.add({ kind: 'tool.result', body: { callId: id, status: 'ok', output: 'o'.repeat(c.out) } })
      })
    }
    const prompt = this.beforeModel()
    this.add({ kind: 'assistant', body: { text: 'a'.repeat(t.answer), ...(t.usage ? { usage: { input: prompt, output: Math.ceil(t.answer / 4) } } : {}) } })
  }
}

function textTokensOf (s: string): number { return Math.ceil(s.length / 4) }
/** What a server counts: ~4 characters of the request a token, as the test server does. */
function serverTokens (ir: IrMessage[]): number { return Math.ceil(JSON.stringify(ir).length / 4) }

function budgetOf (window: number): ContextBudget {
  return { window, reserve: replyReserve(window), overhead: 150 }
}

/** Every tool call in the IR is answered by a tool message before the next user or assistant message, and every tool message answers one. */
function wellFormed (ir: IrMessage[]): void {
  let open = new Set<string>()
  for (const m of ir) {
    if (m.role === 'tool') {
      expect(open.has(m.callId), `a tool message without its call: ${m.callId}`).toBe(true)
      open.delete(m.callId)
    } else if (m.role === 'user' || m.role === 'assistant') {
      expect([...open], 'a call left without its result').toEqual([])
      open = new Set(m.role === 'assistant' ? (m.toolCalls ?? []).map(c => c.id) : [])
    }
  }
}

/** The least a cut could keep of the view: the latest message and all after it, or that message and what follows a completed step of its turn. */
function leastKept (branch: Entry[]): number {
  const v = contextView(branch).entries
  const cuts = safeCuts(v)
  const lastUser = v.findLastIndex(e => e.kind === 'user')
  const from = (k: number): number => v.slice(k).reduce((n, e) => n + entryTokens(e), 0)
  let least = from(lastUser)
  for (let k = lastUser + 2; k < v.length; k++) if (cuts[k]) least = Math.min(least, entryTokens(v[lastUser] as Entry) + from(k))
  return least
}

function checkPlan (branch: Entry[], plan: Extract<CompactionPlan, { kind: 'compact' }>): void {
  const view = contextView(branch).entries
  expect([...plan.folded, ...plan.kept].map(e => e.id)).toEqual(view.map(e => e.id))
  const first = plan.kept[0] as Entry
  expect(['user', 'assistant']).toContain(first.kind)
  // the latest user message and all after it are kept; or, its turn cut, the message itself verbatim
  const lastUser = view.findLast(e => e.kind === 'user') as Entry
  if (plan.keep === undefined) expect(plan.kept.map(e => e.id)).toContain(lastUser.id)
  else {
    expect(plan.keep.id).toBe(lastUser.id)
    expect(plan.folded.map(e => e.id)).toContain(lastUser.id)
    expect(plan.kept.some(e => e.kind === 'user')).toBe(false)
    expect(first.kind).toBe('assistant')
  }
  // no call is separated from its intent or result
  const foldedCalls = new Set(plan.folded.flatMap(e => e.kind === 'assistant' ? (e.body.toolCalls ?? []).map(c => c.id) : []))
  for (const e of plan.kept) {
    if (e.kind === 'tool.intent' || e.kind === 'tool.result') expect(foldedCalls.has(e.body.callId), `call ${e.body.callId} cut from its ${e.kind}`).toBe(false)
  }
  expect(plan.to).toBe((plan.folded.at(-1) as Entry).id)
}

describe('compaction', () => {
  it('never splits a call from its result; after it the model gets [system, summary, ...kept], which fits; once it fits, planning again changes nothing', () => {
    const seen = { compacted: 0, again: 0, withIntentKept: 0, inTurn: 0, inTurnAgain: 0 }
    fc.assert(fc.property(fc.array(turnArb, { minLength: 1, maxLength: 14 }), windowArb, (turns, window) => {
      const budget = budgetOf(window)
      const sim = new Sim(budget)
      const limit = budget.window - budget.reserve
      const room = limit - budget.overhead - summaryBudget(window)
      const keep = Math.floor(room / 2)
      for (const t of turns) {
        const before = sim.plans.length
        sim.turn(t)
        for (const plan of sim.plans.slice(before)) {
          seen.compacted++
          if (plan.previous !== undefined) seen.again++
          if (plan.kept.some(e => e.kind === 'tool.intent')) seen.withIntentKept++
          if (plan.keep !== undefined) seen.inTurn++
          if (plan.keep !== undefined && plan.previous?.body.keep === plan.keep.id) seen.inTurnAgain++
        }
      }
      // replay each compaction's checks at the branch it was planned on
      for (const plan of sim.plans) {
        const at = sim.branch.findIndex(e => e.kind === 'compaction' && e.body.folded.to === plan.to && e.body.folded.from === plan.from)
        expect(at).toBeGreaterThan(0)
        const before = sim.branch.slice(0, at)
        checkPlan(before, plan)
        const after = sim.branch.slice(0, at + 1)
        const c = after[at] as EntryOf<'compaction'>
        const ir = toIrMessages(after, SYSTEM)
        const told = plan.keep === undefined ? [] : [{ role: 'user', text: plan.keep.body.text }]
        expect(ir.slice(0, 2 + told.length)).toEqual([{ role: 'system', text: SYSTEM }, summaryMessage(c), ...told])
        expect(ir.slice(2 + told.length)).toEqual(toIrMessages(plan.kept, SYSTEM).slice(1))
        wellFormed(ir)
        // a range that starts where the first compaction's did: the summary stands for all before it
        expect(c.body.folded.from).toBe((sim.branch[0] as Entry).id)
        const kept = plan.kept.reduce((n, e) => n + entryTokens(e), plan.keep === undefined ? 0 : entryTokens(plan.keep))
        // whenever some cut leaves what the window has room for, the compacted branch fits
        if (leastKept(before) <= room) expect(estimateContext(after, budget.overhead), `${plan.keep === undefined ? 'before' : 'inside'} the turn`).toBeLessThanOrEqual(limit)
        if (kept <= keep) {
          expect(estimateContext(after, budget.overhead)).toBeLessThanOrEqual(limit)
          const again = planCompaction(after, budget)
          expect(again.kind).toBe('fits')
        }
        // the summariser's request fits in what the window leaves for it
        const req = summaryRequest(plan, window - summaryBudget(window))
        expect(serverTokens(req)).toBeLessThanOrEqual(window - summaryBudget(window) + 64)
      }
      // the whole history is kept
      const users = sim.branch.filter(e => e.kind === 'user').length
      expect(users).toBe(turns.length)
      const final = planCompaction(sim.branch, budget)
      expect(planCompaction(sim.branch, budget)).toEqual(final)
    }), { numRuns: 150 })
    for (const [k, n] of Object.entries(seen)) expect(n, k).toBeGreaterThan(0)
  })

  it('a safe cut is one no call spans', () => {
    fc.assert(fc.property(fc.array(turnArb, { minLength: 1, maxLength: 6 }), turns => {
      const sim = new Sim(budgetOf(1_000_000))
      for (const t of turns) sim.turn(t)
      const v = sim.branch
      const cuts = safeCuts(v)
      v.forEach((e, k) => {
        const spans = v.slice(0, k).flatMap(a => a.kind === 'assistant' ? (a.body.toolCalls ?? []).map(c => c.id) : [])
        const crossed = v.slice(k).some(x => (x.kind === 'tool.intent' || x.kind === 'tool.result') && spans.includes(x.body.callId))
        expect(cuts[k]).toBe(!crossed && (e.kind === 'user' || e.kind === 'assistant'))
      })
    }), { numRuns: 200 })
  })

  it('a branch that fits is not compacted, even with a compaction before it', () => {
    const sim = new Sim(budgetOf(100_000))
    sim.turn({ user: 10, steps: [], answer: 10, note: false, usage: true })
    expect(planCompaction(sim.branch, sim.budget).kind).toBe('fits')
    expect(sim.compactions).toBe(0)
  })

  it('forced, it folds everything before the latest user message; with nothing before it, it says so', () => {
    const sim = new Sim(budgetOf(100_000))
    sim.turn({ user: 10, steps: [], answer: 10, note: false, usage: false })
    expect(planCompaction(sim.branch, sim.budget, { force: true })).toMatchObject({ kind: 'nothing', reason: /nothing before the latest message/ })
    sim.turn({ user: 10, steps: [], answer: 10, note: false, usage: false })
    const plan = planCompaction(sim.branch, sim.budget, { force: true })
    expect(plan.kind).toBe('compact')
    if (plan.kind !== 'compact') return
    expect(plan.kept.map(e => e.kind)).toEqual(['user', 'assistant'])
  })
})
