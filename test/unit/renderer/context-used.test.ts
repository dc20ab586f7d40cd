// The header's context figure is the shown branch's, not a sum over every branch (issue 15).
import { describe, expect, it } from 'vitest'
import type { Entry } from '../../../src/shared/entry/entry'
import { contextUsed } from '../../../src/renderer/chat/context-used'

const A = 'a'.repeat(64)
let n = 0
const entry = (kind: string, body: unknown): Entry => ({ v: 1, id: (++n).toString(16).padStart(64, '0'), conversation: 'c'.repeat(64), parents: [], author: { device: A }, ts: n, kind, body } as unknown as Entry)

describe('contextUsed', () => {
  it('is what the branch\'s latest model step was sent and answered, and nothing before any step reported it', () => {
    expect(contextUsed([entry('conversation', { title: 't', nonce: 'x' }), entry('user', { text: 'hi' })])).toBeUndefined()
    const branch = [
      entry('user', { text: 'hi' }),
      entry('assistant', { text: 'a', usage: { input: 100, output: 20 } }),
      entry('user', { text: 'more' }),
      entry('assistant', { text: 'b', usage: { input: 300, output: 50 } }),
      entry('tool.intent', { callId: 'x' }),
      entry('assistant', { text: 'c' }) // no usage reported: the last that did counts
    ]
    expect(contextUsed(branch)).toBe(350)
    expect(contextUsed(branch.slice(0, 2))).toBe(120) // another branch, its own figure
    // compacted since the last step: the summary is the context now
    expect(contextUsed([...branch, entry('compaction', { summary: 's', folded: { from: 'a', to: 'b' }, model: 'm', tokens: 40 })])).toBe(40)
  })
})
