import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { terminalJson, terminalSafe, terminalSafeWriter } from '../../../src/main/cli/terminal-text'

/** What a terminal must never receive: ESC, C1, DEL and the C0 controls other than \t and \n. */
const FORBIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/ // eslint-disable-line no-control-regex

const isControl = (c: number): boolean => (c < 0x20 && c !== 0x09 && c !== 0x0a) || (c >= 0x7f && c <= 0x9f)
const printable = fc.string({ unit: 'binary', maxLength: 40 }).map(s => [...s].filter(ch => !isControl(ch.codePointAt(0) as number)).join(''))

const SNIPPETS = ['\x1b', '\x1b[', '\x1b]', '\x1bP', '\x1bX', '\x1b^', '\x1b_', '\x1b\\', '\x07', '\x9b', '\x9d', '\x90', '\x9c', '\r', '\n', '\r\n', '\b', '\t', '\x00', '\x7f',
  ']52;c;', '0;', '2J', '?1049h', '6n', '31m', ';', '1', '?', ' ', '!', 'm', 'H', 'a']
const controlChar = fc.oneof(fc.integer({ min: 0, max: 0x1f }), fc.integer({ min: 0x7f, max: 0x9f })).map(c => String.fromCharCode(c))
/** Text a hostile tool or model may print: controls, pieces of sequences, and any Unicode between. */
const hostile = fc.array(fc.oneof(fc.constantFrom(...SNIPPETS), controlChar, fc.string({ unit: 'binary', maxLength: 4 })), { maxLength: 24 }).map(a => a.join(''))

/** Whole sequences, in their 7- and 8-bit forms. */
const completeSequence = fc.oneof(
  fc.tuple(fc.constantFrom('\x1b[', '\x9b'), fc.string({ unit: fc.integer({ min: 0x30, max: 0x3f }).map(c => String.fromCharCode(c)), maxLength: 8 }),
    fc.string({ unit: fc.integer({ min: 0x20, max: 0x2f }).map(c => String.fromCharCode(c)), maxLength: 2 }), fc.integer({ min: 0x40, max: 0x7e }).map(c => String.fromCharCode(c)))
    .map(([a, b, c, d]) => a + b + c + d),
  fc.tuple(fc.constantFrom('\x1b]', '\x9d', '\x1bP', '\x90', '\x1b_', '\x9f', '\x1b^', '\x9e', '\x1bX', '\x98'), printable, fc.constantFrom('\x07', '\x1b\\', '\x9c'))
    .map(([a, b, c]) => a + b + c)
)

/** Splits s into chunks at the given points. */
const chunksOf = (s: string, cuts: number[]): string[] => {
  const at = [...new Set(cuts.map(c => c % (s.length + 1)))].sort((a, b) => a - b)
  const out: string[] = []
  let from = 0
  for (const c of at) { out.push(s.slice(from, c)); from = c }
  out.push(s.slice(from))
  return out
}

describe('terminalSafe (property)', () => {
  it('never lets ESC, C1, DEL or a C0 control other than \\t and \\n through', () => {
    fc.assert(fc.property(hostile, s => { expect(terminalSafe(s)).not.toMatch(FORBIDDEN) }), { numRuns: 2000 })
  })

  it('passes printable text unchanged, all of non-ASCII Unicode included', () => {
    fc.assert(fc.property(printable, s => { expect(terminalSafe(s)).toBe(s) }), { numRuns: 1000 })
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }).filter(s => !FORBIDDEN.test(s)), s => { expect(terminalSafe(s)).toBe(s) }))
  })

  it('changes exactly the controls: every UTF-16 code unit alone, and inside plain text', () => {
    for (let c = 0; c <= 0xffff; c++) {
      const ch = String.fromCharCode(c)
      expect(terminalSafe(ch) === ch, `U+${c.toString(16)}`).toBe(!isControl(c))
      expect(terminalSafe(`ab${ch}cd`) === `ab${ch}cd`, `U+${c.toString(16)} in text`).toBe(!isControl(c))
    }
  })

  it('is idempotent', () => {
    fc.assert(fc.property(hostile, s => { expect(terminalSafe(terminalSafe(s))).toBe(terminalSafe(s)) }), { numRuns: 2000 })
  })

  it('loses no text around a sequence: a CSI goes whole, any other is shown', () => {
    fc.assert(fc.property(printable, completeSequence, printable, (p, seq, q) => {
      const r = terminalSafe(p + seq + q)
      expect(r.startsWith(p) && r.endsWith(q)).toBe(true)
      if (/^(\x1b\[|\x9b)/.test(seq)) expect(r).toBe(p + q) // eslint-disable-line no-control-regex
      else expect(r.length).toBeGreaterThan(p.length + q.length)
    }), { numRuns: 1000 })
  })

  it('prints a stream cut anywhere as the whole text', () => {
    fc.assert(fc.property(hostile, fc.array(fc.nat(), { maxLength: 6 }), (s, cuts) => {
      let out = ''
      const w = terminalSafeWriter(t => { out += t })
      for (const c of chunksOf(s, cuts)) w.write(c)
      w.flush()
      expect(out).toBe(terminalSafe(s))
    }), { numRuns: 2000 })
  })

  it('terminalJson is the same JSON with nothing left for terminalSafe to change', () => {
    fc.assert(fc.property(fc.jsonValue(), hostile, (v, s) => {
      const value = { v, s, list: [s, { [s]: s }] }
      const text = terminalJson(value)
      expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)))
      expect(terminalSafe(text)).toBe(text)
    }), { numRuns: 500 })
  })
})

describe('terminalSafe (examples)', () => {
  it.each([
    ['clipboard, OSC 52', 'a\x1b]52;c;cm0gLXJmIH4=\x07b', 'a^[]52;c;cm0gLXJmIH4=^Gb'],
    ['title, OSC 0 and 2 with ST', '\x1b]0;pwned\x1b\\\x1b]2;x\x07', '^[]0;pwned^[\\^[]2;x^G'],
    ['hyperlink, OSC 8', '\x1b]8;;https://evil/\x1b\\click\x1b]8;;\x1b\\', '^[]8;;https://evil/^[\\click^[]8;;^[\\'],
    ['screen clear, cursor home, alternate screen', '\x1b[2J\x1b[H\x1b[?1049hshown', 'shown'],
    ['device status report (the terminal would answer as typed input)', '\x1b[6n\x1b[c\x1b[>0q', ''],
    ['colours', '\x1b[1;31merror\x1b[0m: x', 'error: x'],
    ['DCS, APC, PM, SOS', '\x1bPq#0\x1b\\\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\', '^[Pq#0^[\\^[_apc^[\\^[^pm^[\\^[Xsos^[\\'],
    ['8-bit CSI and OSC', '\x9b2J\x9d0;t\x9c', '^[]0;t^[\\'],
    ['other C1', '\x85\x8d\x90x\x9c', '^[E^[M^[Px^[\\'],
    ['lone ESC, ESC c (reset), malformed CSI', '\x1b\x1bc\x1b[1\x1b[', '^[^[c^[[1^[['],
    ['\\r and backspace cannot hide text', 'rm -rf ~\rls      \b\b\b', 'rm -rf ~^Mls      ^H^H^H'],
    ['CRLF line ends become LF', 'a\r\nb\r\r\n', 'a\nb^M\n'],
    ['BEL, NUL, DEL, vertical tab, form feed', '\x07\x00\x7f\x0b\x0c', '^G^@^?^K^L'],
    ['tabs, newlines and Unicode pass', 'é\t😀\n中文 \u2028 \u202e', 'é\t😀\n中文 \u2028 \u202e']
  ])('%s', (_what, input, expected) => {
    expect(terminalSafe(input)).toBe(expected)
  })
})
