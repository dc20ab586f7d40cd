// The fake provider's answers are a function of the request's messages (their hash names tool
// calls, their size estimates usage). MessageDigests extends the previous request's digest
// instead of encoding the whole conversation each call: the answers must stay what they were.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { FakeProvider } from '../../../src/main/llm/fake-provider'
import { digestMessages, MessageDigests } from '../../../src/main/llm/message-digest'
import type { IrMessage } from '../../../src/shared/llm-ir'

const signal = new AbortController().signal

describe('the fake provider\'s answers', () => {
  it('are the ones the provider gave before its digests were incremental (ids, usage, summary)', async () => {
    // Recorded from the code before this change (every digest computed over the whole list).
    const expected = [
      { ids: ['call_c61bfc1b2c837d42_0'], usage: { input: 19, output: 4 }, text: '' },
      { ids: ['call_1a18def8d2694531_0', 'call_1a18def8d2694531_1'], usage: { input: 72, output: 7 }, text: '' },
      { ids: [], usage: { input: 165, output: 5 }, text: 'done: out of bash' },
      { summary: 'Summary 9c10026cfe9882c4 of 9 characters: Summarise', usage: { input: 186, output: 13 } }
    ]
    const p = new FakeProvider({ rules: [{ match: 'go', reply: [{ toolCalls: [{ name: 'read', args: { path: 'a' } }] }, { toolCalls: [{ name: 'read' }, { name: 'bash', args: { command: 'ls' } }] }, { text: 'done: {{lastToolOutput}}' }] }] })
    const msgs: IrMessage[] = [{ role: 'system', text: 'sys' }, { role: 'user', text: 'go ünïcode "q" \n' }]
    const out: unknown[] = []
    for (let i = 0; i < 3; i++) {
      const r = await p.chat({ model: '', messages: msgs.slice(), tools: [], signal })
      out.push({ ids: r.toolCalls.map(c => c.id), usage: r.usage, text: r.text })
      msgs.push({ role: 'assistant', text: r.text, ...(r.toolCalls.length > 0 ? { toolCalls: r.toolCalls } : {}) })
      for (const c of r.toolCalls) msgs.push({ role: 'tool', callId: c.id, name: c.name, output: `out of ${c.name}`, status: 'ok' })
    }
    const s = await p.chat({ model: '', messages: [...msgs, { role: 'user', text: 'Summarise' }], tools: [], signal, purpose: 'summary' })
    out.push({ summary: s.text, usage: s.usage })
    expect(out).toEqual(expected)
  })
})

type Op =
  | { op: 'add'; list: number; text: string; weird: boolean }
  | { op: 'ask'; list: number; copy: boolean }
  | { op: 'cut'; list: number; back: number }
  | { op: 'replace'; list: number; back: number; text: string }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('add' as const), list: fc.nat({ max: 5 }), text: fc.string({ maxLength: 12 }), weird: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('ask' as const), list: fc.nat({ max: 5 }), copy: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('cut' as const), list: fc.nat({ max: 5 }), back: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('replace' as const), list: fc.nat({ max: 5 }), back: fc.integer({ min: 1, max: 4 }), text: fc.string({ maxLength: 12 }) }) }
)

describe('MessageDigests', () => {
  it('equals the digest of the whole list for lists grown, cut, changed in place and interleaved (fast-check)', () => {
    fc.assert(fc.property(fc.array(opArb, { maxLength: 120 }), ops => {
      const digests = new MessageDigests()
      // six conversations asking one provider in turn (more than it remembers)
      const lists: IrMessage[][] = Array.from({ length: 6 }, () => [{ role: 'system', text: 'sys' }])
      for (const o of ops) {
        const list = lists[o.list] as IrMessage[]
        switch (o.op) {
          case 'add':
            // `weird`: arguments canonical JSON refuses (a non-finite number), where the digest is JSON.stringify's
            list.push(list.length % 2 === 0
              ? { role: 'assistant', text: o.text, toolCalls: [{ id: 'c', name: 'x', args: o.weird ? { n: Number.NaN } : { b: o.text, a: 1 } }] }
              : { role: 'user', text: o.text })
            break
          case 'ask': {
            const asked = o.copy ? list.map(m => ({ ...m })) : list.slice()
            expect(digests.of(asked)).toEqual(digestMessages(asked))
            break
          }
          case 'cut': list.length = Math.max(0, list.length - o.back); break
          case 'replace': list[Math.max(0, list.length - o.back)] = { role: 'user', text: o.text }; break
        }
        // the same array asked again after it changed in place
        expect(digests.of(list)).toEqual(digestMessages(list))
      }
    }), { numRuns: 200 })
  })
})
