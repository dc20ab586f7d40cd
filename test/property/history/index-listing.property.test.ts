// The listing `arbor ls` reads from an index snapshot (index-listing.ts, index-codec.ts):
// random summaries (titles in any script, lone surrogates, control characters, ties of time)
// written as a snapshot, then random journal saves over it (changes, removals, new ones). The
// listing read back must be, row for row, what the full index says (sortSummaries of its
// summaries), whether the snapshot has a listing or not; and any byte flipped in either file
// must give no listing, or one marked not clean (`ls` then asks the store, which rebuilds or
// reconciles): never a wrong listing. A failure prints fast-check's seed and path.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { emptyIndex, sortSummaries, type ConversationSummary, type IndexState } from '../../../src/main/history/index/history-index'
import { decodeIndex, decodeListing, encodeJournalStart, encodeSave, encodeSnapshot } from '../../../src/main/history/index/index-codec'
import type { ListRows } from '../../../src/main/history/index/index-listing'

const LONG = process.env.ARBOR_LONG === '1'
const hex = (n: number, c: string): string => n.toString(16).padStart(64, c)
const DEVICE = hex(1, 'd')

const title = fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 12 }), fc.constantFrom('', 'a\u001b]52;c;x\u0007', '会話 🌳', '\ud800', 'x\r\ny'))
const summary = fc.record({ i: fc.nat(40), title, updatedAt: fc.oneof(fc.nat(5), fc.nat(2 ** 40)), heads: fc.nat(4), size: fc.nat(100_000) })
type Change = { t: 'set'; s: { i: number; title: string; updatedAt: number; heads: number; size: number } } | { t: 'drop'; i: number } | { t: 'save' }
const change: fc.Arbitrary<Change> = fc.oneof(
  fc.record({ t: fc.constant('set' as const), s: summary }),
  fc.record({ t: fc.constant('drop' as const), i: fc.nat(40) }),
  fc.constant({ t: 'save' as const })
)

function put (state: IndexState, s: { i: number; title: string; updatedAt: number; heads: number; size: number }): string {
  const id = hex(s.i, 'a')
  state.conversations[id] = { id, title: s.title, createdAt: 1, updatedAt: s.updatedAt, heads: Array.from({ length: s.heads }, (_, k) => hex(s.i * 10 + k, 'b')), size: s.size, waiting: 0 }
  return id
}

/** What a terminal gets of a title: UTF-8 (a lone surrogate is U+FFFD either way). */
const shown = (t: string): string => Buffer.from(t, 'utf8').toString('utf8')
const rowsOf = (r: ListRows): unknown[] => Array.from({ length: r.length }, (_, i) => [r.id(i), r.updatedAt(i), r.size(i), r.branches(i), shown(r.title(i))])
const expected = (list: ConversationSummary[]): unknown[] => sortSummaries(list).map(c => [c.id, c.updatedAt, c.size, c.heads.length, shown(c.title)])

interface Files { snapshot: Buffer; journal: Buffer; state: IndexState }

/** A snapshot of the first summaries, then a journal with a frame per 'save' of the changes before it. */
function write (first: Array<Change & { t: 'set' }>, changes: Change[], withListing: boolean): Files {
  const state = emptyIndex(DEVICE)
  for (const c of first) put(state, c.s)
  state.feeds[hex(1, 'f')] = { key: hex(1, 'f'), conversation: hex(0, 'a'), device: DEVICE, own: true, indexed: 3 }
  const snapshot = encodeSnapshot(state, 1, withListing)
  const frames = [encodeJournalStart(DEVICE, 1)]
  let touched = new Set<string>()
  for (const c of [...changes, { t: 'save' } as const]) {
    if (c.t === 'set') touched.add(put(state, c.s))
    else if (c.t === 'drop') { delete state.conversations[hex(c.i, 'a')]; touched.add(hex(c.i, 'a')) } else {
      frames.push(encodeSave(state, { conversations: touched, feeds: [hex(1, 'f')] }))
      touched = new Set()
    }
  }
  return { snapshot, journal: Buffer.concat(frames), state }
}

const firsts = fc.array(fc.record({ t: fc.constant('set' as const), s: summary }), { maxLength: 30 })

describe('the listing of an index snapshot', () => {
  it('lists, row for row, what the full index holds: with or without a listing record, with any journal over it', () => {
    fc.assert(fc.property(firsts, fc.array(change, { maxLength: 30 }), fc.boolean(), (first, changes, withListing) => {
      const f = write(first, changes, withListing)
      const files = { legacy: null, snapshot: f.snapshot, journal: f.journal }
      const full = decodeIndex(files, DEVICE).state
      expect(full).not.toBe(null)
      const listed = decodeListing(files)
      expect(listed?.clean).toBe(true)
      expect(rowsOf(listed!.rows)).toEqual(expected(Object.values(full!.conversations)))
      expect(rowsOf(listed!.rows)).toEqual(expected(Object.values(f.state.conversations)))
      // an older reader skips the record it does not know: the full read ignores the listing
      expect(decodeIndex({ legacy: null, snapshot: encodeSnapshot(f.state, 2, false), journal: null }, DEVICE).outdated).toBe(true)
    }), { numRuns: LONG ? 2000 : 150 })
  })

  it('a byte flipped anywhere in the snapshot or the journal: no listing, or one marked not clean — never a wrong one', () => {
    fc.assert(fc.property(firsts, fc.array(change, { maxLength: 12 }), fc.boolean(), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), fc.integer({ min: 1, max: 255 }), (first, changes, inSnapshot, where, bits) => {
      const f = write(first, changes, true)
      const damaged = Buffer.from(inSnapshot ? f.snapshot : f.journal)
      const at = Math.floor(where * damaged.length)
      damaged[at] = (damaged[at] as number) ^ bits
      const listed = decodeListing({ legacy: null, snapshot: inSnapshot ? damaged : f.snapshot, journal: inSnapshot ? f.journal : damaged })
      if (inSnapshot) expect(listed).toBe(null)
      else expect(listed === null || !listed.clean).toBe(true)
    }), { numRuns: LONG ? 4000 : 300 })
  })
})
