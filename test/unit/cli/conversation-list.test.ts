// `arbor ls` prints one row per conversation, whatever a title holds: a peer names its
// conversations, and a title with line breaks must not forge rows of its own.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { writeListText } from '../../../src/main/cli/conversation-list'
import { summaryRows } from '../../../src/main/history/index/index-listing'

describe('the ls table', () => {
  it('is one line per conversation, for any title', () => {
    fc.assert(fc.property(fc.array(fc.string({ unit: fc.constantFrom('a', ' ', '\n', '\r', '\t', '\u2028', '\u0085', 'é', '\v') }), { minLength: 1, maxLength: 20 }), titles => {
      const rows = summaryRows(titles.map((title, i) => ({ id: i.toString(16).padStart(64, '0'), title, createdAt: 0, updatedAt: 1000 - i, heads: ['x'], size: 1, waiting: 0 })))
      let out = ''
      writeListText(rows, 2000, t => { out += t })
      const lines = out.split(/\r\n|\r|\n|\u2028|\u2029|\u0085|\v|\f/)
      expect(lines.at(-1)).toBe('')
      expect(lines.length - 1).toBe(titles.length + 1) // the header and one row each
    }))
  })
})
