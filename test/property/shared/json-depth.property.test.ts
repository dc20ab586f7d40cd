// The nesting bound (src/shared/entry/json-depth.ts): the one-pass scan of a JSON text says how deep
// the value JSON.parse gives nests, whatever its strings hold (brackets, quotes, escapes, any
// code point); the encoders' bound refuses exactly what the scan calls too deep; and an entry is
// made exactly when its block is within the bound that reading it applies.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { TooDeepError, canonicalCopy, canonicalJson } from '../../../src/shared/entry/canonical-json'
import { MAX_JSON_DEPTH, jsonDepth, nestsDeeperThan } from '../../../src/shared/entry/json-depth'
import { TOO_DEEP, makeEntryBlock, makeOwnEntryBlock } from '../../../src/main/history/store/entry-codec'
import { decodeBlock } from '../../../src/main/history/store/feed-blocks'
import type { EntryDraft } from '../../../src/shared/entry/entry'

const RUNS = process.env.ARBOR_LONG === '1' ? 20_000 : 1000

/** The depth of a parsed value, by a walk (the reference the scan must agree with). */
function depthOf (v: unknown): number {
  if (v === null || typeof v !== 'object') return 0
  let inner = 0
  for (const x of Array.isArray(v) ? v : Object.values(v as object)) inner = Math.max(inner, depthOf(x))
  return 1 + inner
}

// Strings made to mislead a scan: brackets, quotes and backslashes in every order, escapes of
// each, runs of backslashes before a quote, any code point.
const tricky = fc.oneof(
  fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', ',', ':', 'a', ' ', '\n', '\u2028', '\ud800', '😀'), maxLength: 24 }),
  fc.string({ unit: 'binary', maxLength: 12 })
)
const scalar = fc.oneof(tricky, fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null))
const value: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>(tie => ({
  v: fc.oneof({ maxDepth: 6, depthIdentifier: 'v' },
    scalar,
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(tricky, tie('v'), { maxKeys: 4 }))
})).v
/** A chain `depth` levels deep of arrays and objects (in any mix), with a random value at the bottom and beside each level. */
const chain = fc.tuple(fc.integer({ min: 0, max: 3000 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 64 }), value, tricky)
  .map(([depth, kinds, bottom, key]) => {
    let v: unknown = bottom
    for (let i = 0; i < depth; i++) v = kinds[i % kinds.length] === true ? [key, v] : { [key]: v, z: key }
    return { text: JSON.stringify(v), depth: depth + depthOf(bottom) }
  })
/** A text as any writer may lay it out: compact, indented, or canonical. */
const layout = fc.constantFrom<(v: unknown) => string>(v => JSON.stringify(v), v => JSON.stringify(v, null, 2), v => canonicalJson(v))

describe('jsonDepth: one pass over the text, no parse', () => {
  it('is the depth of what JSON.parse gives, for any JSON text, whatever its strings hold', () => {
    fc.assert(fc.property(value, layout, (v, lay) => {
      const text = lay(v)
      expect(jsonDepth(text)).toBe(depthOf(JSON.parse(text)))
    }), { numRuns: RUNS })
  })

  it('is the depth of a chain thousands of levels deep; stopped at a limit, it says one past it', () => {
    fc.assert(fc.property(chain, fc.integer({ min: 0, max: 3500 }), ({ text, depth }, limit) => {
      expect(jsonDepth(text)).toBe(depth)
      expect(jsonDepth(text, limit)).toBe(Math.min(depth, limit + 1))
      expect(nestsDeeperThan(text, limit)).toBe(depth > limit)
    }), { numRuns: 300 })
  })

  it('counts no bracket inside a string, escaped quotes and backslash runs included', () => {
    expect(jsonDepth('"[[[{{{"')).toBe(0)
    expect(jsonDepth('["\\"[[[", "\\\\", [1]]')).toBe(2)
    expect(jsonDepth('{"a\\\\\\"[":{"b":"]]]\\\\"}}')).toBe(2)
    expect(jsonDepth('["\\u005b\\u007b"]')).toBe(1)
    expect(jsonDepth('[' + '"\\\\"'.repeat(3) + ']')).toBe(1)
    expect(jsonDepth('')).toBe(0)
    // an unterminated string ends the count: what came before it stands
    expect(jsonDepth('[["abc')).toBe(2)
  })
})

describe('the encoders refuse exactly what the scan calls too deep', () => {
  it('canonicalJson and canonicalCopy with a bound: the same text under it, a TooDeepError naming the place past it', () => {
    fc.assert(fc.property(fc.oneof(value, chain.map(c => JSON.parse(c.text) as unknown)), fc.integer({ min: 0, max: 3100 }), (v, max) => {
      const text = canonicalJson(v)
      const deep = nestsDeeperThan(text, max)
      for (const encode of [(): string => canonicalJson(v, '/x', max), (): string => canonicalCopy(v, '/x', max).json]) {
        let out: string | Error
        try { out = encode() } catch (err) { out = err as Error }
        if (deep) {
          expect(out).toBeInstanceOf(TooDeepError)
          expect((out as TooDeepError).message).toBe(`cannot encode the value at /x: it nests deeper than ${max} levels of arrays and objects`)
        } else {
          expect(out).toBe(text)
        }
      }
    }), { numRuns: 300 })
  })
})

describe('entries at the bound', () => {
  const device = 'a'.repeat(64)
  const conversation = 'b'.repeat(64)
  it('are made (on both write paths) exactly when their block is within MAX_JSON_DEPTH, and such a block is read back; past it, both refuse alike', () => {
    fc.assert(fc.property(fc.integer({ min: MAX_JSON_DEPTH - 4, max: MAX_JSON_DEPTH + 2 }), fc.constantFrom('note', 'meta', 'tool.intent'), fc.boolean(), (n, kind, objects) => {
      let deep: unknown = 0
      for (let i = 0; i < n; i++) deep = objects ? { a: deep } : [deep]
      const body = kind === 'note' ? { text: 'x', deep } : kind === 'meta' ? { key: 'k', value: deep, hlc: { wall: 1, counter: 0, device } } : { callId: 'c', tool: 't', args: deep, effect: 'read', idemKey: 'i' }
      const draft = { kind, body, parents: ['c'.repeat(64)] } as EntryDraft
      // the entry nests: itself, its body, then `n` levels
      const within = n + 2 <= MAX_JSON_DEPTH
      const outcome = (make: () => { block: Buffer }): string => {
        try {
          const { block } = make()
          const read = decodeBlock(block, { device, conversation })
          return read.ok ? `read back, ${jsonDepth(block.toString())} deep` : `not read back: ${read.error}`
        } catch (err) {
          return `refused: ${(err as Error).message}`
        }
      }
      const whole = outcome(() => makeEntryBlock(draft, { conversation, device, ts: 1 }))
      expect(whole).toBe(within ? `read back, ${n + 2} deep` : `refused: ${kind} entry: ${TOO_DEEP} (its body nests deeper than ${MAX_JSON_DEPTH - 1})`)
      expect(outcome(() => makeOwnEntryBlock(draft, { conversation, device, ts: 1 }, draft.parents))).toBe(whole)
    }), { numRuns: 100 })
  })
})
