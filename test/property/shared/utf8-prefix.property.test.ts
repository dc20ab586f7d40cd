// The project instructions are cut at a size limit on a character boundary (utf8Prefix): for
// any text and any cut, what is kept decodes whole (no replacement character), is a start of
// the text, and loses less than one character. A failure prints fast-check's seed and path:
// replay with fc.assert(..., { seed, path }).
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { utf8Prefix } from '../../../src/main/runtime/agent/project-instructions'

const RUNS = process.env.ARBOR_LONG !== undefined ? 20_000 : 1000

describe('utf8Prefix', () => {
  it('keeps the longest start of the text that ends on a character boundary', () => {
    // whole characters of every UTF-8 length (1 to 4 bytes), lone surrogates excluded (they do not round-trip)
    const text = fc.string({ unit: fc.oneof(fc.constantFrom('a', 'é', '€', '𝄞', '\u0800', '\u{10ffff}'), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 })), maxLength: 40 })
    fc.assert(fc.property(text, fc.nat(), (s, n) => {
      const whole = Buffer.from(s, 'utf8')
      const cut = whole.subarray(0, n % (whole.length + 1))
      const kept = utf8Prefix(cut)
      const back = kept.toString('utf8')
      // decodes whole: nothing became a replacement character (the text may hold U+FFFD itself)
      expect(Buffer.from(back, 'utf8').equals(kept)).toBe(true)
      expect(s.startsWith(back)).toBe(true)
      expect(cut.length - kept.length).toBeLessThan(4)
      // the longest: one more character would not fit in the cut
      const next = [...s.slice(back.length)][0]
      if (next !== undefined) expect(kept.length + Buffer.byteLength(next)).toBeGreaterThan(cut.length)
    }), { numRuns: RUNS })
  })

  it('leaves whole text, and bytes that are not UTF-8 at all, as they are', () => {
    expect(utf8Prefix(Buffer.from('héllo €'))).toEqual(Buffer.from('héllo €'))
    expect(utf8Prefix(Buffer.from([0x61, 0xff]))).toEqual(Buffer.from([0x61, 0xff]))
    expect(utf8Prefix(Buffer.alloc(0))).toEqual(Buffer.alloc(0))
  })
})
