// Properties of entries: any valid entry survives storage, any single change to one is caught,
// and the fast paths (canonical encoding, the envelope check, makeEntry) give what the full ones do.
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { canonicalCopy, canonicalJson } from '../../../src/shared/entry/canonical-json'
import {
  BODY_SCHEMAS, EFFECT_CLASSES, ENTRY_KINDS, EnvelopeSchema, InvalidEntryError, asWritten, encodeEntry, encodeFields, fitsBody, fitsEnvelope, hashInput, inputOf, reunderstand, storedOf,
  type Entry, type EntryDraft, type EntryKind, type WrittenEntry
} from '../../../src/shared/entry/entry'
import { entryId, makeEntry, makeEntryBlock, makeOwnEntryBlock, validateEntry } from '../../../src/main/history/store/entry-codec'

const DEVICES = ['a'.repeat(64), 'b'.repeat(64), 'c'.repeat(64)] as const
const HEX64 = /^[0-9a-f]{64}$/

const hexArb = fc.uint8Array({ minLength: 32, maxLength: 32 }).map(b => Buffer.from(b).toString('hex'))
const deviceArb = fc.oneof(fc.constantFrom(...DEVICES), hexArb)
/** Text including astral characters and lone surrogates, which JSON escapes, and long text (copied flat, encoded once). */
const textArb = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map(c => String.fromCharCode(c)), maxLength: 3 }),
  { arbitrary: fc.string({ unit: 'binary', minLength: 13, maxLength: 3000 }), weight: 1 }
)
const nonEmpty = fc.string({ minLength: 1, maxLength: 12 })
const json = fc.jsonValue({ maxDepth: 3 })
const nat = fc.nat({ max: 1_000_000 })
const opt = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(a, { nil: undefined })
/** Fields a newer version may add to a body: kept, and covered by the id. */
const extrasArb = fc.dictionary(fc.string({ maxLength: 6 }).map(k => 'x-' + k), json, { maxKeys: 2 })
const agentRef = fc.record({ device: deviceArb, epoch: nat })
const hlcArb = fc.record({ wall: nat, counter: nat, device: deviceArb })

/** Drops undefined (optional fields left out), as a writer would. */
function body (fields: Record<string, unknown>, extras: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...extras }
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) out[k] = v
  return out
}

const childBodies: { [K in Exclude<EntryKind, 'conversation'>]: fc.Arbitrary<Record<string, unknown>> } = {
  user: fc.record({ text: textArb }),
  note: fc.record({ text: textArb }),
  assistant: fc.record({
    text: textArb,
    toolCalls: opt(fc.array(fc.record({ id: nonEmpty, name: nonEmpty, args: json }), { maxLength: 3 })),
    reasoning: opt(textArb),
    usage: opt(fc.record({ input: nat, output: nat, reasoning: opt(nat) })),
    model: opt(nonEmpty),
    finish: opt(nonEmpty)
  }),
  'tool.intent': fc.record({ callId: nonEmpty, tool: nonEmpty, args: json, effect: fc.constantFrom(...EFFECT_CLASSES), idemKey: nonEmpty }),
  'tool.result': fc.record({ callId: nonEmpty, status: fc.constantFrom('ok', 'error', 'unknown', 'cancelled'), output: textArb, truncated: opt(fc.boolean()) }),
  'agent.started': fc.record({ epoch: nat, reason: fc.constantFrom('user', 'resume', 'revival', 'restart'), previous: opt(agentRef) }),
  'agent.stopped': fc.record({ epoch: nat, reason: fc.constantFrom('done', 'cancelled', 'superseded', 'crash-loop', 'error'), by: opt(agentRef), message: opt(textArb) }),
  compaction: fc.record({ summary: textArb, folded: fc.record({ from: deviceArb, to: deviceArb }), focus: opt(textArb), model: nonEmpty, tokens: nat }),
  meta: fc.record({ key: nonEmpty, value: json, hlc: hlcArb })
}
const rootBody = fc.record({
  title: fc.string({ maxLength: 40 }),
  nonce: nonEmpty,
  cwd: opt(fc.string()),
  model: opt(nonEmpty),
  autoRevival: opt(fc.boolean())
})

interface Made { draft: EntryDraft; ctx: { conversation: string | null; device: string; ts: number } }

const ctxArb = fc.record({ device: deviceArb, ts: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), agent: opt(fc.string({ minLength: 1, maxLength: 20 })) })

const rootArb: fc.Arbitrary<Made> = fc.tuple(rootBody, extrasArb, ctxArb).map(([b, x, c]) => ({
  draft: { kind: 'conversation', parents: [], body: body(b, x), agent: c.agent } as unknown as EntryDraft,
  ctx: { conversation: null, device: c.device, ts: c.ts }
}))

const childArb: fc.Arbitrary<Made> = fc.tuple(
  fc.constantFrom(...(Object.keys(childBodies) as Array<keyof typeof childBodies>)).chain(kind => childBodies[kind].map(b => ({ kind, b }))),
  extrasArb,
  ctxArb,
  hexArb,
  fc.uniqueArray(hexArb, { minLength: 1, maxLength: 4 })
).map(([{ kind, b }, x, c, conversation, parents]) => ({
  draft: { kind, parents, body: body(b, x), agent: c.agent } as EntryDraft,
  ctx: { conversation, device: c.device, ts: c.ts }
}))

const madeArb = fc.oneof({ arbitrary: rootArb, weight: 1 }, { arbitrary: childArb, weight: 4 })

describe('entry round trip', () => {
  it('makeEntry → encode → parse → validate gives back the same entry, for any valid draft', () => {
    fc.assert(fc.property(madeArb, ({ draft, ctx }) => {
      const e = makeEntry(draft, ctx)
      expect(e.id).toMatch(HEX64)
      expect(e.id).toBe(createHash('sha256').update(hashInput(e), 'utf8').digest('hex'))
      expect(e.conversation).toBe(draft.parents.length === 0 ? e.id : ctx.conversation)
      expect(canonicalJson(e.body)).toBe(canonicalJson(draft.body))
      const stored = encodeEntry(e)
      const v = validateEntry(JSON.parse(stored), ctx.device)
      if (!v.ok) throw new Error(v.error)
      expect(v.entry).toEqual(e)
      expect(encodeEntry(v.entry)).toBe(stored)
    }), { numRuns: 300 })
  })
})

// ------------------------------------------------------------------ tampering

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }
type Raw = Record<string, Json>

/** Every place in a JSON value, as a path of keys/indices (the value itself included). */
function paths (v: Json, here: Array<string | number> = []): Array<Array<string | number>> {
  const out = [here]
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...paths(x, [...here, i])))
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(...paths(x, [...here, k]))
  return out
}

/** A copy of `root` with the value at `path` replaced by `f(old)` (undefined: removed). */
function update (root: Json, path: Array<string | number>, f: (old: Json) => Json | undefined): Json | undefined {
  if (path.length === 0) return f(root)
  const [head, ...rest] = path as [string | number, ...Array<string | number>]
  if (Array.isArray(root)) {
    const copy = [...root]
    const next = update(copy[head as number] as Json, rest, f)
    if (next === undefined) copy.splice(head as number, 1)
    else copy[head as number] = next
    return copy
  }
  const copy = { ...(root as Record<string, Json>) }
  const next = update(copy[head as string] as Json, rest, f)
  if (next === undefined) delete copy[head as string]
  else copy[head as string] = next
  return copy
}

const FIELDS = ['body', 'ts', 'author.device', 'author.agent', 'parents', 'kind', 'v', 'id', 'conversation'] as const
type Field = typeof FIELDS[number]

interface Mutation { field: Field; op: number; pick: number; value: Json; hex: string; int: number; str: string }

const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  field: fc.constantFrom(...FIELDS),
  op: fc.nat({ max: 3 }),
  pick: fc.nat(),
  value: json as fc.Arbitrary<Json>,
  hex: hexArb,
  int: fc.oneof(fc.nat(), fc.integer({ min: -3, max: Number.MAX_SAFE_INTEGER }), fc.double({ noNaN: true, noDefaultInfinity: true })),
  str: fc.oneof(fc.constantFrom(...ENTRY_KINDS), fc.string({ maxLength: 12 }))
})

/** Applies one change to one field of a stored entry. */
function mutate (raw: Raw, m: Mutation): Raw {
  const out: Raw = { ...raw }
  switch (m.field) {
    case 'body': {
      const ps = paths(raw.body as Json)
      const path = ps[m.pick % ps.length] as Array<string | number>
      if (m.op === 0 && path.length > 0) out.body = update(raw.body as Json, path, () => undefined) ?? null // remove
      else if (m.op === 1) { // add a key next to / inside the chosen place
        out.body = update(raw.body as Json, path, old => old !== null && typeof old === 'object' && !Array.isArray(old)
          ? { ...old, ['k' + m.int]: m.value }
          : Array.isArray(old) ? [...old, m.value] : m.value) ?? null
      } else out.body = update(raw.body as Json, path, () => m.value) ?? null // replace
      break
    }
    case 'ts': out.ts = m.op === 0 ? (raw.ts as number) + 1 + (m.pick % 1000) : m.int; break
    case 'author.device': out.author = { ...(raw.author as Raw), device: m.op === 0 ? m.hex : m.str }; break
    case 'author.agent': {
      const author = { ...(raw.author as Raw) }
      if (m.op === 0) delete author.agent
      else author.agent = m.op === 1 ? m.str : (author.agent ?? '') + m.str
      out.author = author
      break
    }
    case 'parents': {
      const ps = [...(raw.parents as string[])]
      const i = ps.length === 0 ? 0 : m.pick % ps.length
      if (m.op === 0) ps.splice(i, 1) // remove one
      else if (m.op === 1) ps.splice(i, 0, m.hex) // add one
      else if (m.op === 2 && ps.length > 0) ps[i] = m.hex // replace one
      else ps.reverse() // reorder
      out.parents = ps
      break
    }
    case 'kind': out.kind = m.str; break
    case 'v': out.v = m.op === 0 ? m.int : m.value; break
    case 'id': out.id = m.hex; break
    case 'conversation': out.conversation = m.hex; break
  }
  return out
}

describe('entry tampering', () => {
  it('refuses any single change to a field of a valid entry', () => {
    const seen = new Set<string>()
    fc.assert(fc.property(madeArb, mutationArb, ({ draft, ctx }, m) => {
      const e = makeEntry(draft, ctx)
      const raw = JSON.parse(encodeEntry(e)) as Raw
      const changed = mutate(raw, m)
      // Only real changes count: the same JSON is the same entry.
      fc.pre(canonicalJson(changed) !== canonicalJson(raw))
      seen.add(m.field)
      const withoutDevice = validateEntry(JSON.parse(JSON.stringify(changed)))
      expect(withoutDevice.ok, `${m.field} change accepted: ${JSON.stringify(changed)}`).toBe(false)
      expect(validateEntry(changed, ctx.device).ok).toBe(false)
    }), { numRuns: 1000 })
    expect([...seen].sort()).toEqual([...FIELDS].sort())
  })
})

// ------------------------------------------------------------------ entries from a newer version

/** A kind as a newer version may name one: a short lower-case dotted name, known here or not. */
const kindArb = fc.oneof(
  fc.constantFrom(...ENTRY_KINDS.filter(k => k !== 'conversation'), 'checkpoint', 'approval.request', 'unknown', 'constructor'),
  fc.stringMatching(/^[a-z][a-z0-9]{0,8}(?:\.[a-z0-9]{1,8})?$/)
)

describe('entries from a newer version', () => {
  it('are kept whatever their kind or body when their envelope is valid: as themselves if understood, else whole inside an unknown entry', () => {
    const seen = new Set<string>()
    fc.assert(fc.property(madeArb, kindArb, json, fc.boolean(), ({ draft, ctx }, kind, body, sameBody) => {
      const made = makeEntry(draft, ctx)
      if (made.parents.length === 0) return // a root's kind is fixed by the envelope
      // the same envelope, another kind and (or) body, its id made right, as a newer writer would
      const e = { v: 1 as const, conversation: made.conversation, parents: made.parents, author: made.author, ts: made.ts, kind, body: sameBody ? made.body : body }
      // as its JSON text says (a -0 in the generated body is 0 once written, and so in the id)
      const raw = JSON.parse(JSON.stringify({ ...e, id: entryId(e) })) as WrittenEntry
      const v = validateEntry(JSON.parse(JSON.stringify(raw)), ctx.device)
      if (!v.ok) throw new Error(v.error)
      expect(asWritten(v.entry)).toEqual(raw)
      const understood = (ENTRY_KINDS as string[]).includes(kind) && kind !== 'unknown'
      if (!understood) expect(v.entry.kind).toBe('unknown')
      if (v.entry.kind !== 'unknown') expect(v.entry).toEqual(raw)
      seen.add(v.entry.kind === 'unknown' ? 'unknown' : 'known')
      // the entry cache's line reads back as the same entry
      expect(reunderstand(JSON.parse(encodeEntry(v.entry)) as Entry)).toEqual(v.entry)
    }), { numRuns: 500 })
    expect([...seen].sort()).toEqual(['known', 'unknown'])
  })
})

// ------------------------------------------------------------------ the fast paths

/** canonicalJson as it was written first (a path string per value): the reference the fast encoder must match. */
function referenceCanonical (value: unknown, path = ''): string {
  if (value === null) return 'null'
  switch (typeof value) {
    case 'boolean': return value ? 'true' : 'false'
    case 'string': return JSON.stringify(value)
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`cannot encode ${value} at ${path || '/'}: numbers must be finite`)
      return JSON.stringify(value)
    case 'object': {
      if (Array.isArray(value)) {
        const parts: string[] = []
        for (let i = 0; i < value.length; i++) parts.push(referenceCanonical(value[i] === undefined ? null : value[i], `${path}/${i}`))
        return '[' + parts.join(',') + ']'
      }
      const proto = Object.getPrototypeOf(value) as unknown
      if (proto !== Object.prototype && proto !== null) throw new TypeError(`cannot encode a ${(value as object).constructor?.name ?? 'non-plain object'} at ${path || '/'}: only plain objects and arrays`)
      const obj = value as Record<string, unknown>
      const keys = Object.keys(obj).filter(k => obj[k] !== undefined).sort()
      return '{' + keys.map(k => JSON.stringify(k) + ':' + referenceCanonical(obj[k], `${path}/${k}`)).join(',') + '}'
    }
    default:
      throw new TypeError(`cannot encode a ${typeof value} at ${path || '/'}`)
  }
}

const outcome = (fn: () => string): string => { try { return 'ok ' + fn() } catch (err) { return `${(err as Error).name}: ${(err as Error).message}` } }

/** Values as writers hand them over: JSON, with what canonical JSON drops, turns into null, or refuses. */
const looseArb: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>(tie => ({
  v: fc.oneof(
    { depthSize: 'small' },
    json,
    fc.constantFrom(undefined, -0, NaN, Infinity, 1e21, 5e-324, new Date(0), () => 1, 10n, Object.create(null) as unknown),
    fc.array(tie('v'), { maxLength: 4 }),
    fc.array(tie('v'), { maxLength: 3 }).map(a => { const holey = [...a]; holey.length += 2; return holey }), // holes
    fc.dictionary(fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('10', '9', '__proto__x', 'é', '\u{1f600}')), tie('v'), { maxKeys: 4 })
  )
})).v

describe('the fast paths give exactly what the full ones do', () => {
  it('canonicalJson: the same text, or the same error naming the same place, for any value', () => {
    fc.assert(fc.property(looseArb, v => {
      expect(outcome(() => canonicalJson(v))).toBe(outcome(() => referenceCanonical(v)))
    }), { numRuns: 2000 })
  })

  it('encodeFields: the hash input and the stored form are canonicalJson of the two objects', () => {
    const envelopeArb = fc.record({
      v: fc.oneof(fc.constant(1), looseArb),
      conversation: fc.oneof(hexArb, looseArb),
      parents: fc.oneof(fc.array(hexArb, { maxLength: 3 }), fc.constant([] as string[])),
      author: fc.oneof(fc.record({ device: deviceArb, agent: opt(fc.string({ maxLength: 5 })) }), looseArb),
      ts: fc.oneof(nat, looseArb),
      kind: fc.oneof(fc.constantFrom(...ENTRY_KINDS), looseArb),
      body: looseArb
    }, { requiredKeys: ['parents'] })
    fc.assert(fc.property(envelopeArb, hexArb, (raw, id) => {
      const e = raw as unknown as Omit<WrittenEntry, 'id'>
      const root = e.parents.length === 0
      const hashed = { v: e.v, conversation: root ? null : e.conversation, parents: e.parents, author: e.author, ts: e.ts, kind: e.kind, body: e.body }
      const stored = { ...e, id, conversation: root ? id : e.conversation }
      expect(outcome(() => hashInput(e))).toBe(outcome(() => referenceCanonical(hashed)))
      if (e.author === undefined) { expect(() => encodeFields(e)).toThrow(TypeError); return } // no entry lacks one
      expect(outcome(() => inputOf(encodeFields(e)))).toBe(outcome(() => referenceCanonical(hashed)))
      expect(outcome(() => storedOf(encodeFields(e), id))).toBe(outcome(() => referenceCanonical(stored)))
    }), { numRuns: 1000 })
  })

  it('fitsEnvelope never accepts what EnvelopeSchema refuses, and accepts every valid entry', () => {
    let fitted = 0
    fc.assert(fc.property(madeArb, mutationArb, fc.nat(3), looseArb, ({ draft, ctx }, m, how, junk) => {
      const e = makeEntry(draft, ctx)
      const raw = JSON.parse(encodeEntry(e)) as Raw
      expect(fitsEnvelope(raw)).toBe(true)
      // a changed field, a field given any value, a field missing or added, or no entry at all
      const key = FIELDS[m.pick % FIELDS.length] as Field
      const top = key.split('.')[0] as string
      const candidate: unknown = how === 0
        ? mutate(raw, m)
        : how === 1 ? { ...raw, [top]: junk } : how === 2 ? (m.op === 0 ? { ...raw, extra: junk } : Object.fromEntries(Object.entries(raw).filter(([k]) => k !== top))) : junk
      if (fitsEnvelope(candidate)) {
        fitted++
        expect(EnvelopeSchema.safeParse(candidate).success, fc.stringify(candidate)).toBe(true)
      }
    }), { numRuns: 2000 })
    expect(fitted).toBeGreaterThan(0)
  })

  it('fitsBody never accepts what the body schema refuses, and accepts every valid body of the kinds it checks', () => {
    const kinds = ['user', 'note', 'assistant', 'tool.intent', 'tool.result'] as const
    const fitted = new Set<string>()
    const arb = fc.tuple(fc.constantFrom(...kinds, 'meta', 'agent.started'), extrasArb, fc.nat(4), fc.nat(20), looseArb)
      // a body as an entry holds it (makeEntry's copy: plain objects), then changed
      .chain(([kind, x, how, pick, junk]) => childBodies[kind].map(b => ({ kind, valid: canonicalCopy(body(b, x)).copy as Record<string, unknown>, how, pick, junk })))
    fc.assert(fc.property(arb, ({ kind, valid, how, pick, junk }) => {
      const schema = BODY_SCHEMAS[kind]
      if ((kinds as readonly string[]).includes(kind)) expect(fitsBody(kind, valid), fc.stringify(valid)).toBe(true)
      // a field (or a tool call's field) given any value, a field left out, or no body at all
      const keys = Object.keys(valid)
      const key = keys[pick % keys.length] as string
      const calls = (valid as { toolCalls?: Array<Record<string, unknown>> }).toolCalls
      const candidate: unknown = how === 0
        ? { ...valid, [key]: junk }
        : how === 1 ? Object.fromEntries(Object.entries(valid).filter(([k]) => k !== key))
          : how === 2 && calls !== undefined && calls.length > 0 ? { ...valid, toolCalls: [...calls.slice(1), { ...calls[0], [['id', 'name', 'args'][pick % 3] as string]: junk }] }
            : how === 3 ? { ...valid, usage: junk } : junk
      if (fitsBody(kind, candidate)) {
        fitted.add(kind)
        expect(schema.safeParse(candidate).success, `${kind} ${fc.stringify(candidate)}`).toBe(true)
      }
    }), { numRuns: 3000 })
    expect([...fitted].sort()).toEqual([...kinds].sort())
  })

  it('makeEntry: the same entry, stored bytes and refusals as building, re-parsing and checking with zod alone', () => {
    // Drafts as a caller may get them wrong: any field of a valid one replaced by something else.
    const badArb = fc.tuple(madeArb, fc.nat(6), looseArb, fc.oneof(fc.constantFrom('', 'x'.repeat(201), 'Bad', 'constructor', 'f'.repeat(64)), looseArb)).map(([{ draft, ctx }, which, junk, str]): Made => {
      const d = { ...draft } as Record<string, unknown>
      const c = { ...ctx } as Record<string, unknown>
      if (which === 0) d.agent = str
      else if (which === 1) c.ts = junk
      else if (which === 2) d.parents = [...draft.parents, str]
      else if (which === 3) c.device = str
      else if (which === 4) c.conversation = str
      else if (which === 5) d.kind = str
      else d.body = { ...(draft.body as object), ['x' + fc.stringify(str).slice(0, 3)]: junk, text: junk }
      return { draft: d as unknown as EntryDraft, ctx: c as unknown as Made['ctx'] }
    })
    const seen = new Set<string>()
    fc.assert(fc.property(fc.oneof(madeArb, badArb), ({ draft, ctx }) => {
      const expected = referenceMakeEntry(draft, ctx)
      let made: { entry: Entry; block: Buffer } | undefined
      let refused: unknown
      try { made = makeEntryBlock(draft, ctx) } catch (err) { refused = err }
      if (!expected.ok) {
        seen.add('refused')
        expect(refused, 'makeEntry accepted what the full path refuses').toBeInstanceOf(InvalidEntryError)
        return
      }
      seen.add('made')
      if (refused !== undefined || made === undefined) throw refused
      expect(made.entry).toEqual(expected.entry)
      // the feed's block (and the cache's line): the reference's canonical text in UTF-8, byte for byte
      expect(made.block.equals(Buffer.from(referenceCanonical(expected.entry), 'utf8'))).toBe(true)
      expect(encodeEntry(made.entry)).toBe(referenceCanonical(expected.entry))
    }), { numRuns: 2000 })
    expect([...seen].sort()).toEqual(['made', 'refused'])
  })
})

describe('makeOwnEntryBlock (every own append): what makeEntryBlock makes or refuses', () => {
  it('the same entry, the same block and the same refusal, for drafts of a conversation the store holds (ids it made, parents it holds)', () => {
    // The precondition: the store's conversation and device are ids, and every parent is an id
    // it holds (possibly repeated: the draft's). All else a caller may get wrong.
    const ownArb = fc.tuple(childArb, hexArb, fc.nat(7), looseArb, fc.oneof(fc.constantFrom('', 'x'.repeat(201), 'Bad', 'constructor', 'conversation', 'user', 'f'.repeat(64)), looseArb), fc.integer({ min: 0, max: 3 }))
      .map(([{ draft, ctx }, conversation, which, junk, str, n]) => {
        const d = { ...draft, parents: [...draft.parents] } as Record<string, unknown>
        const c = { conversation, device: ctx.device, ts: ctx.ts } as Record<string, unknown>
        if (which === 0) d.agent = str
        else if (which === 1) c.ts = junk
        else if (which === 2) d.parents = [...draft.parents, draft.parents[n % draft.parents.length]]
        else if (which === 3) d.parents = Array.from({ length: 64 + n }, (_, i) => createHash('sha256').update(String(i)).digest('hex'))
        else if (which === 4) d.kind = str
        else if (which === 5) d.body = { ...(draft.body as object), ['x' + fc.stringify(str).slice(0, 3)]: junk, text: junk }
        else if (which === 6) d.body = junk
        return { draft: d as unknown as EntryDraft, ctx: c as unknown as { conversation: string; device: string; ts: number } }
      })
    const seen = new Set<string>()
    fc.assert(fc.property(fc.oneof(childArb.map(m => ({ draft: m.draft, ctx: m.ctx as { conversation: string; device: string; ts: number } })), ownArb), ({ draft, ctx }) => {
      const whole = outcomeOf(() => makeEntryBlock(draft, ctx, [...draft.parents]))
      const own = outcomeOf(() => makeOwnEntryBlock(draft, ctx, [...draft.parents]))
      seen.add(whole.ok ? 'made' : 'refused')
      expect(own).toStrictEqual(whole)
    }), { numRuns: 3000 })
    expect([...seen].sort()).toEqual(['made', 'refused'])
  })
})

/** What a maker gives: the entry and its block's text, or the refusal's class and message. */
function outcomeOf (make: () => { entry: Entry; block: Buffer }): { ok: true; entry: Entry; block: string } | { ok: false; error: string } {
  try {
    const { entry, block } = make()
    return { ok: true, entry, block: block.toString('latin1') }
  } catch (err) {
    return { ok: false, error: `${(err as Error).constructor.name}: ${(err as Error).message}` }
  }
}

describe('makeEntry returns what it stores, built without parsing it back', () => {
  // Values the schemas take as they are (tool arguments, meta values) with all that canonical
  // JSON changes or drops: -0, undefined fields and items, holes, null-prototype objects, a
  // "__proto__" key (JSON.parse makes it an own field).
  const protoKey = looseArb.map(v => Object.assign(JSON.parse('{"__proto__":{"a":-0},"k":1}') as object, { v }))
  const argsArb = fc.oneof(looseArb, protoKey, fc.constant(null).map(() => Object.assign(Object.create(null) as object, { b: Object.assign([-0, undefined], { length: 4 }), a: undefined })))
  const encodable = (v: unknown): boolean => outcome(() => canonicalJson(v)).startsWith('ok ')
  const looseDraftArb: fc.Arbitrary<Made> = fc.tuple(madeArb, argsArb, fc.boolean()).filter(([, args]) => encodable(args)).map(([{ ctx }, args, meta]): Made => ({
    draft: (meta
      ? { kind: 'meta', parents: ['d'.repeat(64)], body: { key: 'k', value: args, hlc: { wall: -0, counter: 0, device: DEVICES[0] } } }
      : { kind: 'tool.intent', parents: ['d'.repeat(64)], body: { callId: 'c', tool: 't', args, effect: 'read', idemKey: 'i', extra: args } }) as EntryDraft,
    ctx: { conversation: 'e'.repeat(64), device: ctx.device, ts: ctx.ts }
  }))

  it('the same object as JSON.parse of its stored bytes (and those bytes and id as the reference builds), sharing no object with the draft', () => {
    const seen = new Set<string>()
    fc.assert(fc.property(fc.oneof(madeArb, looseDraftArb), ({ draft, ctx }) => {
      const expected = referenceMakeEntry(draft, ctx)
      if (!expected.ok) throw new Error('a valid draft was refused by the reference')
      const { entry: made, block } = makeEntryBlock(draft, ctx)
      seen.add(draft.kind)
      const stored = encodeEntry(made)
      expect(made.id).toBe(expected.entry.id)
      expect(stored).toBe(referenceCanonical(expected.entry))
      expect(block.toString('utf8')).toBe(stored)
      expect(makeEntry(draft, ctx)).toStrictEqual(made)
      expect(made).toStrictEqual(JSON.parse(stored))
      // the same keys in the same order, everywhere (JSON.stringify follows the objects' own order)
      expect(JSON.stringify(made)).toBe(JSON.stringify(JSON.parse(stored)))
      // changing the draft afterwards changes nothing of the entry (on a copy: generated values stay as they are)
      const copy = { ...draft, body: structuredClone(draft.body), parents: [...draft.parents] } as EntryDraft
      const again = makeEntry(copy, ctx)
      expect(encodeEntry(again)).toBe(stored)
      scribble(copy.body)
      scribble(copy.parents)
      expect(again).toStrictEqual(JSON.parse(stored))
    }), { numRuns: 1500 })
    expect(seen.has('meta') && seen.has('tool.intent') && seen.has('conversation')).toBe(true)
  })

  it('canonicalCopy: canonicalJson\'s text (or its error), and the value JSON.parse of it gives, for any value', () => {
    fc.assert(fc.property(fc.oneof(looseArb, protoKey), v => {
      const expected = outcome(() => canonicalJson(v))
      let got: { json: string; copy: unknown } | undefined
      const out = outcome(() => (got = canonicalCopy(v, '/x')).json)
      expect(out).toBe(outcome(() => canonicalJson(v, '/x')))
      if (!expected.startsWith('ok ') || got === undefined) return
      expect(got.copy).toStrictEqual(JSON.parse(got.json))
      expect(JSON.stringify(got.copy)).toBe(JSON.stringify(JSON.parse(got.json)))
      if (typeof v === 'object' && v !== null) expect(got.copy).not.toBe(v)
    }), { numRuns: 2000 })
  })
})

/** Changes every object and array inside a value in place (to show an entry shares none of them). */
function scribble (v: unknown): void {
  if (Array.isArray(v)) { for (const x of v) scribble(x); v.push('scribbled') } else if (typeof v === 'object' && v !== null) {
    for (const k of Object.keys(v)) scribble((v as Record<string, unknown>)[k])
    ;(v as Record<string, unknown>).scribbled = true
  }
}

/** makeEntry as it was first written: hash the canonical hash input, parse back the canonical entry, check with zod alone. */
function referenceMakeEntry (draft: EntryDraft, ctx: Made['ctx']): { ok: true; entry: Entry } | { ok: false } {
  const author = draft.agent === undefined ? { device: ctx.device } : { device: ctx.device, agent: draft.agent }
  const partial = { v: 1 as const, conversation: ctx.conversation ?? '', parents: draft.parents, author, ts: ctx.ts, kind: draft.kind, body: draft.body }
  let input: string
  try {
    input = referenceCanonical({ ...partial, conversation: draft.parents.length === 0 ? null : partial.conversation })
  } catch {
    return { ok: false }
  }
  if (input.length > 1024 * 1024) return { ok: false }
  const id = createHash('sha256').update(input, 'utf8').digest('hex')
  const entry = JSON.parse(referenceCanonical({ ...partial, id, conversation: draft.parents.length === 0 ? id : partial.conversation })) as WrittenEntry
  if (!EnvelopeSchema.safeParse(entry).success) return { ok: false }
  const root = entry.parents.length === 0
  if ((entry.kind === 'conversation') !== root || new Set(entry.parents).size !== entry.parents.length || entry.parents.includes(entry.id)) return { ok: false }
  if (root && entry.conversation !== entry.id) return { ok: false }
  if (entry.author.device !== ctx.device) return { ok: false }
  if (!Object.hasOwn(BODY_SCHEMAS, entry.kind) || !(BODY_SCHEMAS as Record<string, { safeParse: (b: unknown) => { success: boolean } }>)[entry.kind]?.safeParse(entry.body).success) return { ok: false }
  return { ok: true, entry: entry as Entry }
}
