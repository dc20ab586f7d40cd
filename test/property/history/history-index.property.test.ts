// The history index on disk against a crash at any point (history-index.ts, index-codec.ts):
// random sequences of record changes and removals, clean-flag changes, saves (compacting into a
// new snapshot when the journal outgrows its share), then, for every save, the images a kill
// during it can leave (the journal cut at any byte; a compaction stopped between its snapshot
// and its new journal) and a byte flipped anywhere in the journal. Each must load as the state
// of a save made whole, the last one before the damage, and say it is not clean when anything
// after that was lost (the store then reconciles from the feeds). A failure prints fast-check's
// seed and path: replay with fc.assert(..., { seed, path }).
import { afterEach, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import fs from 'node:fs/promises'
import { HistoryIndexFile, emptyIndex, type IndexState } from '../../../src/main/history/index/history-index'
import { decodeIndex } from '../../../src/main/history/index/index-codec'
import { tempDirs } from '../../helpers/temp-dir'

const LONG = process.env.ARBOR_LONG === '1'
const dirs = tempDirs()
afterEach(() => dirs.cleanup())

const hex = (n: number, c: string): string => n.toString(16).padStart(64, c)
const DEVICE = hex(1, 'd')

type Op =
  | { t: 'conversation'; i: number; title: string; heads: number; cwd: boolean }
  | { t: 'feed'; i: number; indexed: number; device: number }
  | { t: 'drop-conversation'; i: number }
  | { t: 'drop-feed'; i: number }
  | { t: 'clean'; clean: boolean }
  | { t: 'manifest'; n: number }
  | { t: 'save' }

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ t: fc.constant('conversation' as const), i: fc.nat(12), title: fc.string({ maxLength: 40 }), heads: fc.nat(3), cwd: fc.boolean() }),
  fc.record({ t: fc.constant('feed' as const), i: fc.nat(16), indexed: fc.nat(100_000), device: fc.nat(3) }),
  fc.record({ t: fc.constant('drop-conversation' as const), i: fc.nat(12) }),
  fc.record({ t: fc.constant('drop-feed' as const), i: fc.nat(16) }),
  fc.record({ t: fc.constant('clean' as const), clean: fc.boolean() }),
  fc.record({ t: fc.constant('manifest' as const), n: fc.nat(1000) }),
  fc.constant({ t: 'save' as const }),
  fc.constant({ t: 'save' as const })
)

function apply (state: IndexState, index: HistoryIndexFile, o: Op): void {
  if (o.t === 'conversation') {
    const id = hex(o.i, 'a')
    state.conversations[id] = { id, title: o.title, createdAt: 1_764_000_000_000 + o.i, updatedAt: 1_764_000_000_000 + o.title.length, heads: Array.from({ length: o.heads }, (_, k) => hex(o.i * 10 + k, 'b')), size: o.heads + 1, waiting: 0, ...(o.cwd ? { cwd: '/w/' + o.title } : {}) }
    index.changed('conversation', id)
  } else if (o.t === 'feed') {
    const key = hex(o.i, 'f')
    state.feeds[key] = { key, conversation: hex(o.i % 12, 'a'), device: o.device === 0 ? '' : hex(o.device, 'd'), own: o.device === 1, indexed: o.indexed }
    index.changed('feed', key)
  } else if (o.t === 'drop-conversation') {
    delete state.conversations[hex(o.i, 'a')]
    index.changed('conversation', hex(o.i, 'a'))
  } else if (o.t === 'drop-feed') {
    delete state.feeds[hex(o.i, 'f')]
    index.changed('feed', hex(o.i, 'f'))
  } else if (o.t === 'clean') {
    state.clean = o.clean
  } else if (o.t === 'manifest') {
    state.manifestIndexed = o.n
  }
}

/** Canonical form for comparing: keys sorted, optional fields as written. */
function plain (s: IndexState | null, clean?: boolean): unknown {
  if (s === null) return null
  const sort = <T>(r: Record<string, T>): Array<[string, T]> => Object.entries(r).sort(([a], [b]) => a < b ? -1 : 1)
  return JSON.parse(JSON.stringify({ device: s.device, clean: clean ?? s.clean, manifestIndexed: s.manifestIndexed, feeds: sort(s.feeds), conversations: sort(s.conversations) }))
}

interface Saved { snapshot: Buffer; journal: Buffer; state: IndexState }

const load = (snapshot: Buffer | null, journal: Buffer | null): IndexState | null => decodeIndex({ legacy: null, snapshot, journal }, DEVICE).state

describe('history index files under crashes', () => {
  it('load the last save made whole, or an earlier one marked not clean, whatever byte a crash or a fault hits', async () => {
    await fc.assert(fc.asyncProperty(fc.array(op, { maxLength: 60 }), fc.double({ min: 0.05, max: 1, noNaN: true }), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 3, maxLength: 3 }), async (ops, fraction, picks) => {
      const dir = await dirs.make()
      const index = new HistoryIndexFile(dir, { fraction, minBytes: 0 })
      const state = emptyIndex(DEVICE)
      const saves: Saved[] = []
      const take = async (): Promise<void> => {
        await index.save(state)
        saves.push({ snapshot: await fs.readFile(index.files.snapshot), journal: await fs.readFile(index.files.journal), state: structuredClone(state) })
      }
      await take()
      for (const o of ops) {
        if (o.t === 'save') await take()
        else apply(state, index, o)
      }
      await take()
      // the files load as the last save
      expect(plain((await new HistoryIndexFile(dir).load(DEVICE)).state)).toEqual(plain(state))

      for (let i = 1; i < saves.length; i++) {
        const before = saves[i - 1] as Saved
        const after = saves[i] as Saved
        const pick = (k: number, n: number): number => Math.min(n, Math.floor((picks[k] as number) * (n + 1)))
        if (before.snapshot.equals(after.snapshot)) {
          // an append: the journal cut anywhere within the new frame
          const cut = before.journal.length + pick(0, after.journal.length - before.journal.length)
          const got = load(after.snapshot, after.journal.subarray(0, cut))
          if (cut === after.journal.length) expect(plain(got)).toEqual(plain(after.state))
          else if (cut === before.journal.length) expect(plain(got)).toEqual(plain(before.state))
          else expect(plain(got)).toEqual(plain(before.state, false))
        } else {
          // a compaction: stopped before its snapshot, between it and the new journal, or after both
          expect(plain(load(before.snapshot, before.journal))).toEqual(plain(before.state))
          expect(plain(load(after.snapshot, before.journal))).toEqual(plain(after.state))
          expect(plain(load(after.snapshot, null))).toEqual(plain(after.state))
        }
        // a byte flipped anywhere in the journal: the saves before its frame stand, marked not clean
        const flipAt = pick(1, after.journal.length - 1)
        if (after.journal.length > 0) {
          const bad = Buffer.from(after.journal)
          bad[flipAt] = (bad[flipAt] as number) ^ (1 + Math.floor((picks[2] as number) * 254))
          const got = load(after.snapshot, bad)
          // the newest save of this snapshot whose journal ends at or before the flipped byte (the snapshot's own, if none)
          const same = saves.slice(0, i + 1).filter(s => s.snapshot.equals(after.snapshot))
          const intact = same.filter(s => s.journal.length <= flipAt).pop() ?? same[0] as Saved
          expect(plain(got)).toEqual(plain(intact.state, false))
        }
      }
    }), { numRuns: LONG ? 1000 : 60 })
  }, LONG ? 600_000 : 120_000)
})
