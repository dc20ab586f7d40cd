import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { countLines, cutNote, groupDigits, limitOutput, OutputAccumulator } from '../../../src/main/tools/output-limit'

const NOTE = /… ([\d,]+) characters(?: \(([\d,]+) lines?\))? cut …/

// Text with plenty of line breaks and some long lines.
const textArb = fc.array(fc.oneof(fc.string({ maxLength: 40 }), fc.string({ maxLength: 400 }), fc.constant('')), { maxLength: 300 })
  .map(lines => lines.join('\n'))

describe('limitOutput', () => {
  it('formats the note with grouped digits', () => {
    expect(groupDigits(12345)).toBe('12,345')
    expect(groupDigits(1234567)).toBe('1,234,567')
    expect(groupDigits(999)).toBe('999')
    expect(cutNote(12345, 0)).toBe('… 12,345 characters cut …')
    expect(cutNote(12345, 1)).toBe('… 12,345 characters (1 line) cut …')
  })

  it('leaves short text untouched', () => {
    fc.assert(fc.property(textArb, text => {
      const r = limitOutput(text, { maxChars: text.length, maxLines: countLines(text) })
      expect(r.truncated).toBe(false)
      expect(r.text).toBe(text)
    }))
  })

  it('cuts the middle of long output by characters', () => {
    const text = 'A'.repeat(10_000) + 'B'.repeat(10_000) + 'C'.repeat(10_000)
    const r = limitOutput(text, { maxChars: 1000, maxLines: 100 })
    expect(r.truncated).toBe(true)
    expect(r.text.length).toBeLessThanOrEqual(1000)
    expect(r.text.startsWith('AAAA')).toBe(true)
    expect(r.text.endsWith('CCCC')).toBe(true)
    expect(r.text).toMatch(NOTE)
    expect(r.cutChars).toBe(text.length - r.keptHead - r.keptTail)
    expect(r.text).toContain(`… ${groupDigits(r.cutChars)} characters cut …`)
  })

  it('cuts the middle of long output by lines, on line boundaries', () => {
    const text = Array.from({ length: 5000 }, (_, i) => `line ${i}`).join('\n')
    const r = limitOutput(text, { maxChars: 100_000, maxLines: 11, headShare: 0.4 })
    const lines = r.text.split('\n')
    expect(lines).toHaveLength(11)
    expect(lines.slice(0, 4)).toEqual(['line 0', 'line 1', 'line 2', 'line 3'])
    expect(lines[4]).toMatch(NOTE)
    expect(lines.slice(5)).toEqual(['line 4994', 'line 4995', 'line 4996', 'line 4997', 'line 4998', 'line 4999'])
    expect(lines[4]).toContain('(4,990 lines)')
  })

  it('always stays within both limits, keeps a prefix and a suffix, and reports the cut exactly', () => {
    fc.assert(fc.property(
      textArb,
      fc.integer({ min: 48, max: 3000 }),
      fc.integer({ min: 1, max: 60 }),
      fc.double({ min: 0, max: 1, noNaN: true }),
      (text, maxChars, maxLines, headShare) => {
        const r = limitOutput(text, { maxChars, maxLines, headShare })
        expect(r.text.length).toBeLessThanOrEqual(maxChars)
        expect(countLines(r.text)).toBeLessThanOrEqual(maxLines)
        if (!r.truncated) {
          expect(r.text).toBe(text)
          return
        }
        const head = text.slice(0, r.keptHead)
        const tail = text.slice(text.length - r.keptTail)
        expect(r.text.startsWith(head)).toBe(true)
        expect(r.text.endsWith(tail)).toBe(true)
        expect(r.cutChars).toBe(text.length - r.keptHead - r.keptTail)
        const m = NOTE.exec(r.text.slice(r.keptHead))
        expect(m).not.toBeNull()
        expect(m?.[1]).toBe(groupDigits(r.cutChars))
      }
    ), { numRuns: 500 })
  })

  it('keeps a fair share of head and tail when only characters bind', () => {
    fc.assert(fc.property(fc.string({ minLength: 5000, maxLength: 20_000, unit: 'grapheme-ascii' }).filter(s => !s.includes('\n')), text => {
      const r = limitOutput(text, { maxChars: 2000, maxLines: 10 })
      expect(r.truncated).toBe(true)
      expect(r.keptHead).toBeGreaterThan(600)
      expect(r.keptTail).toBeGreaterThan(900)
    }), { numRuns: 50 })
  })

  it('hard-cuts when the budget is too small for a note', () => {
    const r = limitOutput('x'.repeat(100), { maxChars: 10 })
    expect(r.text).toBe('x'.repeat(10))
    expect(limitOutput('a\nb\nc\nd', { maxChars: 5, maxLines: 2 }).text).toBe('a\nb')
  })
})

describe('OutputAccumulator', () => {
  it('gives the same as limitOutput while nothing was dropped, and exact counts after', () => {
    fc.assert(fc.property(fc.array(fc.string({ maxLength: 300 }), { maxLength: 60 }), fc.integer({ min: 48, max: 400 }), (chunks, maxChars) => {
      const acc = new OutputAccumulator({ maxChars, maxLines: 20 })
      for (const c of chunks) acc.push(c)
      const whole = chunks.join('')
      const got = acc.finish()
      expect(acc.length).toBe(whole.length)
      expect(got.text.length).toBeLessThanOrEqual(maxChars)
      expect(countLines(got.text)).toBeLessThanOrEqual(20)
      if (whole.length <= 4 * maxChars) expect(got).toEqual(limitOutput(whole, { maxChars, maxLines: 20 }))
      expect(whole.startsWith(got.text.slice(0, got.keptHead))).toBe(true)
      expect(whole.endsWith(got.text.slice(got.text.length - got.keptTail))).toBe(true)
      expect(got.cutChars).toBe(got.truncated ? whole.length - got.keptHead - got.keptTail : 0)
      if (got.truncated) {
        const middle = whole.slice(got.keptHead, whole.length - got.keptTail)
        expect(got.cutLines).toBe(countLines(middle) - 1)
      }
    }), { numRuns: 300 })
  })
})
