// The arbor/1 codecs (src/main/sync/wire/arbor-messages.ts): the bytes every version sends (c.json),
// and a decode that yields a checked message or a rejection, never a throw (Protomux destroys
// the whole stream when a decode throws).
import { describe, expect, it } from 'vitest'
import c from 'compact-encoding'
import fc from 'fast-check'
import { MAX_JSON_DEPTH } from '../../../src/shared/entry/json-depth'
import { ARBOR_MESSAGES, arborMessages, type ArborMessage, type ArborMessageName, type Decoded } from '../../../src/main/sync/wire/arbor-messages'

const k = (ch: string): string => ch.repeat(64)

/** One well-formed message of each type, with every optional field. */
const samples: { [K in ArborMessageName]: ArborMessage<K> } = {
  hello: { v: 1, device: k('a'), name: 'laptop', manifest: k('b'), protocol: { major: 1, minor: 4, oldest: 1 }, schema: 1, app: '0.9.0' },
  feeds: { full: true, feeds: [{ conversation: k('c'), key: k('d'), length: 7 }] },
  devices: { devices: [{ key: k('a'), name: 'laptop', addedAt: 0 }], forgotten: [{ key: k('e'), at: 5 }], statements: [{ t: 'add', later: true }] },
  presence: { agents: [{ conversation: k('c'), epoch: 2, device: k('a') }] },
  heartbeat: { t: 1000, hears: [k('a')], echo: 999 },
  live: { conversation: k('c'), event: { type: 'token', delta: 'hi' } },
  feedsDigest: { digest: k('f'), count: 3 },
  wantFeeds: {},
  feedsSince: { full: false, digest: k('f'), count: 3, feeds: [{ conversation: k('c'), key: k('d'), length: 1 }] },
  held: { want: [{ key: k('d'), length: 4 }], held: [{ key: k('d'), length: 2 }] },
  alive: { ask: { n: k('1'), about: [k('a')] }, relay: [{ asker: k('b'), n: k('2') }], proofs: [{ device: k('a'), asker: k('b'), n: k('2'), sig: 'e'.repeat(128) }] }
}

/** What each type refuses: a field of the wrong type or a key that is not 32 bytes of hex. */
const misshapen: Record<ArborMessageName, unknown> = {
  hello: { v: 1, device: 'not a key', name: 'x' },
  feeds: { full: 'yes', feeds: [] },
  devices: { devices: [{ key: k('A'), name: 'x', addedAt: 0 }], forgotten: [] },
  presence: { agents: [{ conversation: k('c'), epoch: -1, device: k('a') }] },
  heartbeat: { t: 'now' },
  live: { conversation: k('c'), event: 'token' },
  feedsDigest: { digest: 'f'.repeat(63), count: 3 },
  wantFeeds: 'want',
  feedsSince: { full: false, digest: k('f'), count: 3 },
  held: { want: [{ key: k('d'), length: 1.5 }] },
  alive: { proofs: [{ device: k('a'), asker: k('b'), n: k('2'), sig: 'e'.repeat(127) }] }
}

function decode (name: ArborMessageName, bytes: Buffer): Decoded<unknown> {
  return c.decode(arborMessages[name] as c.Encoding<never, Decoded<unknown>>, bytes)
}
const jsonBytes = (v: unknown): Buffer => c.encode(c.json, v)

describe.each(ARBOR_MESSAGES.map(name => [name]))('the %s codec', (name: ArborMessageName) => {
  const codec = arborMessages[name] as c.Encoding<unknown, Decoded<unknown>>

  it('writes exactly the bytes c.json writes (what older versions send and read), and reads them back', () => {
    const bytes = c.encode(codec, samples[name])
    expect(bytes.equals(jsonBytes(samples[name]))).toBe(true)
    expect(decode(name, bytes)).toEqual({ ok: true, value: samples[name] })
  })

  it('drops the fields it does not know, as the zod shapes always have', () => {
    const got = decode(name, jsonBytes({ ...samples[name], fromANewerVersion: [1, 2] }))
    expect(got).toEqual({ ok: true, value: samples[name] })
  })

  it('rejects, without throwing, text that is not JSON, a length past the frame, an empty frame and a misshapen message', () => {
    const cases: Array<[Buffer, RegExp]> = [
      [Buffer.from('\x05{"t":'), /^not JSON/],
      [Buffer.from([0xfd, 0xff, 0xff, 0x7b]), /^not JSON/],
      [Buffer.alloc(0), /^not JSON/],
      [jsonBytes(misshapen[name]), /:/]
    ]
    for (const [bytes, why] of cases) {
      const got = decode(name, bytes)
      expect(got.ok).toBe(false)
      if (!got.ok) expect(got.error).toMatch(why)
    }
  })
})

describe('the arbor/1 codecs', () => {
  it('are in the wire order every version numbers them by (append only)', () => {
    expect(ARBOR_MESSAGES).toEqual(['hello', 'feeds', 'devices', 'presence', 'heartbeat', 'live', 'feedsDigest', 'wantFeeds', 'feedsSince', 'held', 'alive'])
  })

  it('reject a message nesting deeper than any entry may, before anything walks it', () => {
    // a devices message's statements are checked as z.unknown(): only canonical JSON walks them, recursively
    const deep = '['.repeat(100_000) + ']'.repeat(100_000)
    for (const name of ARBOR_MESSAGES) {
      const text = name === 'devices' ? `{"devices":[],"forgotten":[],"statements":[${deep}]}` : `{"deep":${deep}}`
      const got = decode(name, c.encode(c.string, text))
      expect(got).toEqual({ ok: false, error: `nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects` })
    }
  })

  it('never throw, whatever the bytes', () => {
    fc.assert(fc.property(fc.constantFrom(...ARBOR_MESSAGES), fc.uint8Array({ maxLength: 64 }), (name, raw) => {
      const bytes = Buffer.from(raw)
      const state = c.state(0, bytes.byteLength, bytes)
      const got = (arborMessages[name] as c.Encoding<never, Decoded<unknown>>).decode(state)
      expect(typeof got.ok).toBe('boolean')
    }), { numRuns: 2000 })
  })
})
