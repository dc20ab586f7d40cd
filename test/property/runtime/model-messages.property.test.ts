// ModelMessages (runtime/agent/model-messages.ts) extends an agent's model messages as its branch
// grows instead of walking the whole branch each model step. Property: for any branch built of
// user/assistant/tool-result/note/compaction entries, grown, cut back or replaced between model
// steps as an agent's journal is, what it returns equals toIrMessages of the branch, and messages
// it returned before are never changed afterwards (a provider remembers them by identity).
// fast-check prints the seed and path of a failure.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import { ModelMessages } from '../../../src/main/runtime/agent/model-messages'
import { toIrMessages } from '../../../src/main/runtime/agent/step-planner'
import type { Entry, EntryDraft } from '../../../src/shared/entry/entry'
import type { IrMessage } from '../../../src/shared/llm-ir'

const SELF = 'a'.repeat(64)
const SYSTEM = 'You are a test agent.'

type Op =
  | { op: 'user' | 'note'; text: number }
  | { op: 'assistant'; calls: number }
  | { op: 'result'; which: number; status: 'ok' | 'error' | 'unknown' | 'cancelled' }
  /** folds from the `from`-th to the `to`-th entry back (or names an entry not on the branch: a peer's, looked past) */
  | { op: 'compaction'; from: number; to: number; foreign: boolean }
  /** the journal's branch read again (the same entries, a new array) or cut back to an earlier entry and grown from there */
  | { op: 'reread' }
  | { op: 'cut'; back: number }
  /** the same array cut back in place (then grown again by the ops after) */
  | { op: 'truncate'; back: number }
  | { op: 'model' }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constantFrom('user' as const, 'note' as const), text: fc.nat({ max: 30 }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('assistant' as const), calls: fc.nat({ max: 3 }) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('result' as const), which: fc.nat({ max: 5 }), status: fc.constantFrom('ok' as const, 'error' as const, 'unknown' as const, 'cancelled' as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('compaction' as const), from: fc.nat({ max: 20 }), to: fc.nat({ max: 20 }), foreign: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reread' as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('cut' as const), back: fc.integer({ min: 1, max: 6 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('truncate' as const), back: fc.integer({ min: 1, max: 6 }) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('model' as const) }) }
)

describe('ModelMessages', () => {
  it('equals toIrMessages of the branch at every model step, for any growth, cut or compaction (fast-check)', () => {
    fc.assert(fc.property(fc.array(opArb, { maxLength: 80 }), ops => {
      const root = makeEntry({ kind: 'conversation', body: { title: 't', nonce: 'n' }, parents: [] }, { conversation: null, device: SELF, ts: 0 })
      let branch: Entry[] = [root]
      let n = 0
      const calls: string[] = [] // call ids of the branch's assistant messages, newest last
      const add = (draft: Omit<EntryDraft, 'parents'>): void => {
        branch.push(makeEntry({ ...draft, parents: [(branch.at(-1) as Entry).id] } as EntryDraft, { conversation: root.id, device: SELF, ts: ++n }))
      }
      const messages = new ModelMessages(SYSTEM)
      const returned: Array<{ got: IrMessage[]; copy: IrMessage[] }> = []
      for (const o of ops) {
        switch (o.op) {
          case 'user': add({ kind: 'user', body: { text: 'u'.repeat(o.text) } }); break
          case 'note': add({ kind: 'note', body: { text: 'n'.repeat(o.text) } }); break
          case 'assistant': {
            const made = Array.from({ length: o.calls }, () => ({ id: `call${++n}`, name: 'bash', args: { n } }))
            calls.push(...made.map(c => c.id))
            add({ kind: 'assistant', body: { text: `a${n}`, ...(made.length > 0 ? { toolCalls: made } : {}) } })
            break
          }
          case 'result': {
            const id = calls.at(-1 - o.which) ?? `call${++n}`
            add({ kind: 'tool.result', body: { callId: id, status: o.status, output: `o${n}` } })
            break
          }
          case 'compaction': {
            const at = (k: number): Entry => branch[Math.max(0, branch.length - 1 - k)] as Entry
            const to = o.foreign ? 'f'.repeat(64) : at(Math.min(o.from, o.to)).id
            add({ kind: 'compaction', body: { summary: `s${n}`, folded: { from: at(Math.max(o.from, o.to)).id, to }, model: 'm', tokens: 1 } })
            break
          }
          case 'reread': branch = branch.slice(); break
          case 'cut': branch = branch.slice(0, Math.max(1, branch.length - o.back)); break
          case 'truncate': branch.length = Math.max(1, branch.length - o.back); break
          case 'model': {
            const got = messages.of(branch)
            expect(got).toEqual(toIrMessages(branch, SYSTEM))
            returned.push({ got, copy: structuredClone(got) })
            break
          }
        }
      }
      const got = messages.of(branch)
      expect(got).toEqual(toIrMessages(branch, SYSTEM))
      for (const r of returned) expect(r.got).toEqual(r.copy)
    }), { numRuns: 300 })
  })
})
