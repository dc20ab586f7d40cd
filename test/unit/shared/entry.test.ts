// Entries: canonical JSON, ids as content hashes, and what validateEntry refuses (DESIGN.md, "History").
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { canonicalJson } from '../../../src/shared/entry/canonical-json'
import { InvalidEntryError, MAX_ENTRY_BYTES, asWritten, encodeEntry, hashInput, reunderstand, type Entry, type EntryDraft, type WrittenEntry } from '../../../src/shared/entry/entry'
import { entryId, makeEntry, validateEntry } from '../../../src/main/history/store/entry-codec'
import { MAX_JSON_DEPTH } from '../../../src/shared/entry/json-depth'

const A = 'a'.repeat(64)
const B = 'b'.repeat(64)
const OTHER = 'c'.repeat(64)
const HEX64 = /^[0-9a-f]{64}$/

const sha256Hex = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex')
/** What a peer hands us: parsed JSON, detached from the object we made. */
const wire = (e: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(e)) as Record<string, unknown>

function rootEntry (device = A, ts = 1000): Entry {
  return makeEntry({ kind: 'conversation', parents: [], body: { title: 'A tree', nonce: 'n-1' } }, { conversation: null, device, ts })
}

function child (root: Entry, draft: EntryDraft, device = A, ts = 2000): Entry {
  return makeEntry(draft, { conversation: root.id, device, ts })
}

/** A raw entry with its id made right: what a device of another version could have written. */
function rehashed (raw: Record<string, unknown>): Record<string, unknown> {
  const id = entryId(raw as unknown as WrittenEntry)
  // a root names itself (its conversation is not part of its hash)
  return { ...raw, id, ...((raw.parents as unknown[]).length === 0 ? { conversation: id } : {}) }
}

/** What validateEntry keeps of a raw entry (it must keep it). */
function kept (raw: unknown, device?: string): Entry {
  const v = validateEntry(raw, device)
  if (!v.ok) throw new Error(`expected validateEntry to keep ${JSON.stringify(raw)}: ${v.error}`)
  return v.entry
}

function refusal (raw: unknown, device?: string): string {
  const v = validateEntry(raw, device)
  if (v.ok) throw new Error('expected validateEntry to refuse ' + JSON.stringify(raw))
  return v.error
}

describe('canonicalJson', () => {
  it('encodes equal objects identically whatever the key order, sorted and without whitespace', () => {
    const a = { b: 1, a: { d: [1, { z: true, y: null }], c: 'x' } }
    const b = { a: { c: 'x', d: [1, { y: null, z: true }] }, b: 1 }
    expect(canonicalJson(a)).toBe(canonicalJson(b))
    expect(canonicalJson(a)).toBe('{"a":{"c":"x","d":[1,{"y":null,"z":true}]},"b":1}')
  })

  it('is key-order independent for arbitrary JSON (property)', () => {
    const reorder = (v: unknown, seed: number): unknown => {
      if (Array.isArray(v)) return v.map(x => reorder(x, seed))
      if (v === null || typeof v !== 'object') return v
      const keys = Object.keys(v)
      const rotated = keys.map((_, i) => keys[(i + seed) % keys.length] as string).reverse()
      return Object.fromEntries(rotated.map(k => [k, reorder((v as Record<string, unknown>)[k], seed + 1)]))
    }
    fc.assert(fc.property(fc.jsonValue(), fc.nat(), (v, seed) => {
      const s = canonicalJson(v)
      expect(canonicalJson(reorder(v, seed))).toBe(s)
      // It is valid JSON denoting the same value.
      expect(canonicalJson(JSON.parse(s))).toBe(s)
    }))
  })

  it('quotes every UTF-16 code unit, alone and inside text, as JSON.stringify does (strings and keys)', () => {
    const wrong: number[] = []
    for (let c = 0; c < 0x10000; c++) {
      const ch = String.fromCharCode(c)
      for (const s of [ch, 'text ' + ch + ' more text']) {
        if (canonicalJson(s) !== JSON.stringify(s) || canonicalJson({ [s]: s }) !== `{${JSON.stringify(s)}:${JSON.stringify(s)}}`) wrong.push(c)
      }
    }
    expect(wrong).toEqual([])
    for (const s of ['\u{1f600}', 'a\ud800', '\udc00b', '\ud83d\ude00\ud83d', '\\"\n']) expect(canonicalJson(s)).toBe(JSON.stringify(s))
  })

  it('drops keys whose value is undefined', () => {
    expect(canonicalJson({ a: 1, b: undefined })).toBe('{"a":1}')
  })

  it.each([NaN, Infinity, -Infinity])('refuses %s, also nested, naming the path', (n) => {
    expect(() => canonicalJson(n)).toThrow(/finite/)
    expect(() => canonicalJson({ a: [0, { b: n }] })).toThrow(/\/a\/1\/b/)
  })

  it('refuses values that are not JSON', () => {
    expect(() => canonicalJson({ f: () => 1 })).toThrow(TypeError)
    expect(() => canonicalJson({ n: 1n })).toThrow(TypeError)
  })
})

describe('makeEntry', () => {
  it('gives an id that is the 64-hex sha256 of hashInput', () => {
    const root = rootEntry()
    const user = child(root, { kind: 'user', parents: [root.id], body: { text: 'hello' } })
    for (const e of [root, user]) {
      expect(e.id).toMatch(HEX64)
      expect(e.id).toBe(sha256Hex(hashInput(e)))
      expect(entryId(e)).toBe(e.id)
    }
  })

  it("makes a root's conversation its own id, and children carry the root id", () => {
    const root = rootEntry()
    expect(root.parents).toEqual([])
    expect(root.conversation).toBe(root.id)
    const user = child(root, { kind: 'user', parents: [root.id], body: { text: 'hi' } })
    expect(user.conversation).toBe(root.id)
    // The root's own id is not part of its hash input (it cannot be).
    expect(hashInput(root)).not.toContain(root.id)
  })

  it('fills in v, author (with the agent when given) and ts', () => {
    const root = rootEntry(B, 42)
    const a = child(root, { kind: 'assistant', parents: [root.id], body: { text: 'ok' }, agent: 'agent-1' }, B, 43)
    expect(a).toMatchObject({ v: 1, author: { device: B, agent: 'agent-1' }, ts: 43, kind: 'assistant' })
    expect(root.author).toEqual({ device: B })
  })

  it('is deterministic and covers every field: different content, different id', () => {
    const root = rootEntry()
    const base = child(root, { kind: 'user', parents: [root.id], body: { text: 'x' } })
    expect(child(root, { kind: 'user', parents: [root.id], body: { text: 'x' } }).id).toBe(base.id)
    const variants = [
      child(root, { kind: 'user', parents: [root.id], body: { text: 'y' } }),
      child(root, { kind: 'note', parents: [root.id], body: { text: 'x' } }),
      child(root, { kind: 'user', parents: [root.id], body: { text: 'x' } }, B),
      child(root, { kind: 'user', parents: [root.id], body: { text: 'x' } }, A, 2001),
      child(root, { kind: 'user', parents: [root.id], body: { text: 'x' }, agent: 'ag' }),
      child(root, { kind: 'user', parents: [root.id, base.id], body: { text: 'x' } })
    ]
    expect(new Set([base.id, ...variants.map(v => v.id)]).size).toBe(variants.length + 1)
  })

  it('keeps body fields it does not know, and the id covers them', () => {
    const root = rootEntry()
    const e = child(root, { kind: 'user', parents: [root.id], body: { text: 'x', future: { a: 1 } } as { text: string } })
    expect((e.body as Record<string, unknown>).future).toEqual({ a: 1 })
    const tampered = wire(e)
    ;(tampered.body as Record<string, unknown>).future = { a: 2 }
    expect(refusal(tampered)).toMatch(/id is not the hash/)
  })

  it('throws InvalidEntryError for an invalid draft', () => {
    const root = rootEntry()
    expect(() => makeEntry({ kind: 'user', parents: [root.id], body: {} } as unknown as EntryDraft, { conversation: root.id, device: A, ts: 1 }))
      .toThrow(InvalidEntryError)
    expect(() => makeEntry({ kind: 'user', parents: [], body: { text: 'x' } }, { conversation: null, device: A, ts: 1 }))
      .toThrow(/only a conversation root has no parents/)
    expect(() => makeEntry({ kind: 'user', parents: [root.id], body: { text: 'x' } }, { conversation: root.id, device: 'A'.repeat(64), ts: 1 }))
      .toThrow(/64 lower-case hex/)
  })

  it('encodes entries canonically: sorted keys, stable bytes', () => {
    const root = rootEntry()
    const s = encodeEntry(root)
    expect(s).toBe(canonicalJson(wire(root)))
    expect(Object.keys(JSON.parse(s) as object)).toEqual(['author', 'body', 'conversation', 'id', 'kind', 'parents', 'ts', 'v'])
  })
})

describe('validateEntry', () => {
  const root = rootEntry()
  const user = child(root, { kind: 'user', parents: [root.id], body: { text: 'hello' } })
  const reply = child(root, { kind: 'assistant', parents: [user.id], body: { text: 'hi', usage: { input: 3, output: 5 } } }, A, 3000)

  it('accepts valid entries after a JSON round trip, with and without the feed device', () => {
    for (const e of [root, user, reply]) {
      const raw = JSON.parse(encodeEntry(e)) as unknown
      const v = validateEntry(raw, A)
      expect(v).toEqual({ ok: true, entry: e })
      expect(validateEntry(raw).ok).toBe(true)
    }
  })

  it('prefixes errors with the (shortened) id of the entry', () => {
    expect(refusal({ ...wire(user), body: {} })).toMatch(new RegExp(`^entry ${user.id.slice(0, 12)}: `))
    expect(refusal(null)).toMatch(/^entry: /)
  })

  it('refuses what is not an entry at all', () => {
    for (const raw of [null, undefined, 'entry', 42, [], {}]) expect(refusal(raw)).toMatch(/^entry/)
  })

  it('keeps an entry whose body does not fit its kind, as one from a newer version, with the complaint', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...wire(user), body: {} }, /user body\.text/],
      [{ ...wire(user), body: { text: 7 } }, /user body\.text/],
      [{ ...wire(reply), body: { text: 'x', usage: { input: -1, output: 0 } } }, /assistant body\.usage\.input/],
      [{ ...wire(user), kind: 'tool.result', body: { callId: 'c', status: 'maybe', output: '' } }, /tool\.result body\.status/],
      [{ ...wire(user), kind: 'agent.stopped', body: { epoch: 1, reason: 'compacted' } }, /agent\.stopped body\.reason/],
      [{ ...wire(user), kind: 'meta', body: { key: 'title', value: 'x', hlc: { wall: 1, counter: 0, device: 'nope' } } }, /meta body\.hlc\.device/],
      [{ ...wire(root), body: { title: 't' } }, /conversation body\.nonce/]
    ]
    for (const [raw, problem] of cases) {
      const written = rehashed(raw)
      const e = kept(written, A)
      expect(e.kind).toBe('unknown')
      if (e.kind !== 'unknown') continue
      expect(e.body.kind).toBe(raw.kind)
      expect(e.body.problem).toMatch(problem)
      expect(asWritten(e)).toEqual(written)
    }
  })

  it('keeps an entry of a kind it does not know, as written', () => {
    const written = rehashed({ ...wire(user), kind: 'checkpoint', body: { summary: 'all of it', upTo: [user.id] } })
    const e = kept(written, A)
    expect(e).toEqual({ ...written, kind: 'unknown', body: { kind: 'checkpoint', body: { summary: 'all of it', upTo: [user.id] } } })
    expect(asWritten(e)).toEqual(written)
    // kinds are looked up as own keys: "constructor" is a kind this version does not know
    expect(kept(rehashed({ ...wire(user), kind: 'constructor' })).kind).toBe('unknown')
  })

  it('reads its own cache line of an unknown entry back as the same entry, and understands it once it knows the kind', () => {
    const e = kept(rehashed({ ...wire(user), kind: 'future.thing', body: { x: 1 } }))
    const line = encodeEntry(e)
    expect(reunderstand(JSON.parse(line) as Entry)).toEqual(e)
    // a line kept as unknown that this version does know (written by an older Arbor before it learnt the kind)
    const old = { ...wire(user), kind: 'unknown', body: { kind: 'user', body: { text: 'hello' } } } as unknown as Entry
    expect(reunderstand(old)).toEqual(user)
  })

  it('refuses an entry of unknown kind or body whose id is not its hash: the envelope is checked first', () => {
    expect(refusal({ ...wire(user), kind: 'checkpoint' })).toMatch(/not the hash/)
    expect(refusal({ ...wire(user), body: {} })).toMatch(/not the hash/)
  })

  it('refuses a kind that is not a short lower-case dotted name', () => {
    for (const kind of ['', 'Compaction', 'x'.repeat(65), 'a\u001b]0;owned\u0007', 'tool..result', '.x', 'x y']) {
      expect(refusal(rehashed({ ...wire(user), kind })), JSON.stringify(kind)).toMatch(/\bkind\b/)
    }
  })

  it('refuses a malformed envelope, naming the field', () => {
    expect(refusal({ ...wire(user), v: 2 })).toMatch(/\bv\b/)
    expect(refusal({ ...wire(user), id: user.id.toUpperCase() })).toMatch(/id must be 64 lower-case hex/)
    expect(refusal({ ...wire(user), parents: ['x'] })).toMatch(/parents\.0 must be 64 lower-case hex/)
    expect(refusal({ ...wire(user), ts: -1 })).toMatch(/\bts\b/)
    expect(refusal({ ...wire(user), ts: 1.5 })).toMatch(/\bts\b/)
    expect(refusal({ ...wire(user), author: { device: A, agent: '' } })).toMatch(/author\.agent/)
    const { kind: _kind, ...noKind } = wire(user)
    expect(refusal(noKind)).toMatch(/\bkind\b/)
  })

  it('refuses a root with parents and a non-root without parents', () => {
    expect(refusal({ ...wire(root), parents: [user.id] })).toMatch(/only a conversation root has no parents/)
    expect(refusal({ ...wire(user), parents: [] })).toMatch(/only a conversation root has no parents/)
    // a kind this version does not know is no root either: the root is part of the envelope
    expect(refusal(rehashed({ ...wire(user), kind: 'checkpoint', parents: [], conversation: user.id }))).toMatch(/only a conversation root has no parents/)
  })

  it('refuses repeated parents', () => {
    expect(refusal({ ...wire(reply), parents: [user.id, user.id] })).toMatch(/parents repeat/)
  })

  it("refuses a root whose conversation is not its own id", () => {
    expect(refusal({ ...wire(root), conversation: OTHER })).toMatch(/a root's conversation must be its own id/)
  })

  it('refuses an id that is not the hash of the content', () => {
    const tampered: Array<[string, Record<string, unknown>]> = [
      ['body', { ...wire(user), body: { text: 'hello!' } }],
      ['ts', { ...wire(user), ts: user.ts + 1 }],
      ['parents (replaced)', { ...wire(reply), parents: [root.id] }],
      ['parents (added)', { ...wire(reply), parents: [user.id, root.id] }],
      ['kind', { ...wire(user), kind: 'note' }],
      ['author', { ...wire(user), author: { device: B } }],
      ['agent', { ...wire(user), author: { device: A, agent: 'someone' } }],
      ['conversation', { ...wire(user), conversation: OTHER }],
      ['id', { ...wire(user), id: reply.id }],
      ['root body', { ...wire(root), body: { title: 'Another', nonce: 'n-1' } }]
    ]
    for (const [what, raw] of tampered) {
      expect(refusal(raw), what).toMatch(/id is not the hash of its content \(expected [0-9a-f]{12}\): tampered or corrupt/)
    }
  })

  it('refuses an entry whose author is not the device that wrote the feed', () => {
    const raw = wire(user)
    expect(validateEntry(raw, A).ok).toBe(true)
    expect(refusal(raw, B)).toMatch(new RegExp(`author ${A.slice(0, 12)} is not the device ${B.slice(0, 12)} that wrote this feed`))
  })

  it('refuses entries nesting deeper than MAX_JSON_DEPTH, written or read, saying so (never a stack overflow)', () => {
    let deep: unknown = 0
    for (let i = 0; i < 100_000; i++) deep = [deep]
    // this device never writes what others refuse
    expect(() => child(root, { kind: 'meta', parents: [root.id], body: { key: 'k', value: deep, hlc: { wall: 1, counter: 0, device: A } } }))
      .toThrow(`meta entry: nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects, more than an entry may (its body nests deeper than ${MAX_JSON_DEPTH - 1})`)
    // a parsed entry (JSON.parse is no recursive walk) is refused without walking past the bound
    const raw = wire(user)
    raw.body = { text: 'x', deep }
    expect(refusal(raw)).toBe(`entry ${user.id.slice(0, 12)}: nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects, more than an entry may`)
  })

  it('refuses entries larger than MAX_ENTRY_BYTES', () => {
    const big = 'x'.repeat(MAX_ENTRY_BYTES)
    expect(() => child(root, { kind: 'user', parents: [root.id], body: { text: big } })).toThrow(/larger than/)
    const raw = wire(user)
    raw.body = { text: big }
    raw.id = entryId(raw as unknown as Entry)
    expect(refusal(raw)).toMatch(/larger than 1048576 bytes/)
  })
})

describe('what canonical encoding and validation refuse', () => {
  it('encodes array holes as null and refuses non-plain objects', () => {
    // eslint-disable-next-line no-sparse-arrays
    expect(canonicalJson([1, , 3])).toBe('[1,null,3]')
    expect(() => canonicalJson({ d: new Date(0) })).toThrow(/Date.*only plain objects/)
    expect(() => canonicalJson({ m: new Map() })).toThrow(/Map/)
    expect(canonicalJson(Object.assign(Object.create(null) as object, { b: 1, a: 2 }))).toBe('{"a":2,"b":1}')
  })

  it('refuses a top-level field the id does not cover', () => {
    const root = makeEntry({ kind: 'conversation', body: { title: 't', nonce: 'n' }, parents: [] }, { conversation: null, device: 'a'.repeat(64), ts: 1 })
    const v = validateEntry({ ...JSON.parse(JSON.stringify(root)), injected: 'x' })
    expect(v.ok).toBe(false)
    expect(v.ok ? '' : v.error).toMatch(/injected|unrecognized/i)
  })
})

describe('kinds are looked up as own keys', () => {
  it('keeps kinds named after Object.prototype members as unknown, never as what they name', () => {
    for (const kind of ['tostring', 'constructor', 'hasownproperty', 'valueof']) {
      const raw = rehashed({ ...wire(rootEntry()), kind, parents: ['b'.repeat(64)], conversation: 'c'.repeat(64) })
      expect(kept(raw).kind, kind).toBe('unknown')
    }
    for (const kind of ['toString', '__proto__']) expect(refusal({ ...wire(rootEntry()), kind, parents: ['b'.repeat(64)] })).toMatch(/\bkind\b/)
  })
})
