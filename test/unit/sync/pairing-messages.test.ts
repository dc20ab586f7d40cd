// The pairing codecs (src/main/sync/cluster/pairing-messages.ts): the welcome's bytes are exactly those
// every version since 1.0 writes (golden digests taken from the hand-written encoder it replaced),
// and what is not a welcome or a request is refused, never half-read.
import { describe, expect, it } from 'vitest'
import crypto from 'node:crypto'
import c from 'compact-encoding'
import fc from 'fast-check'
import { decodeWelcome, encodeWelcome, joinRequest, welcome, type WelcomeMessage } from '../../../src/main/sync/cluster/pairing-messages'
import type { WelcomeContent } from '../../../src/main/sync/cluster/cluster-store'

const k = (ch: string): string => ch.repeat(64)
const sig = (ch: string): string => ch.repeat(128)

function welcomeFixture (): WelcomeContent {
  return {
    inviter: { key: k('1'), name: 'desktop' },
    devices: [{ key: k('2'), name: 'laptop', addedAt: 1_700_000_000_123 }, { key: k('3'), name: 'phone ☎', addedAt: 5.5 }],
    forgotten: [{ key: k('4'), at: 10 }, { key: k('5'), at: 30 }, { key: k('6'), at: 20 }],
    statements: [
      { t: 'add', v: 1, device: k('2'), name: 'laptop', join: { at: 1_700_000_000_000, sig: sig('a') }, by: k('1'), nonce: k('7'), at: 1_700_000_000_100, sig: sig('b') },
      { t: 'name', v: 1, device: k('3'), name: 'phone ☎', at: 99, sig: sig('c') },
      // a field a newer version added: not of the binary form, so it comes by gossip
      { t: 'name', v: 1, device: k('2'), name: 'lap', at: 98, sig: sig('d'), colour: 'red' } as WelcomeContent['statements'][number],
      { t: 'remove', v: 1, device: k('4'), by: k('1'), at: 40, sig: sig('e') }
    ]
  }
}

const sha = (b: Buffer): string => crypto.createHash('sha256').update(b).digest('hex')

describe('the welcome', () => {
  it('is written byte for byte as before: version 1, version 2, and version 2 cut to a budget', () => {
    // (length, sha256) of encodeWelcome's output before it was a codec (commit 9fbf02b)
    expect([265, sha(encodeWelcome(welcomeFixture(), 1))]).toEqual([265, 'c90620cf40ef93ab4bb677108090c6c0dd91ae36fccb1e1ca81d0f87654b9118'])
    const v2 = encodeWelcome(welcomeFixture(), 2)
    expect([v2.byteLength, sha(v2)]).toEqual([769, '0251d4f8c21db6f9d8afca96141c610e0db2fb93cce5eecbdeb81d340ccd428f'])
    const cut = encodeWelcome(welcomeFixture(), 2, 600)
    expect([cut.byteLength, sha(cut)]).toEqual([516, '24716fb7482893a9866f726c05478d615ee8a2edef782d0020a0cbd9917736f3'])
  })

  it('reads back what it wrote: the forgotten latest first, the statements of the binary form (version 2 only)', () => {
    const w = welcomeFixture()
    const byTime = [...w.forgotten].sort((a, b) => b.at - a.at)
    expect(decodeWelcome(encodeWelcome(w, 1))).toEqual({ version: 1, inviter: w.inviter, devices: w.devices, forgotten: byTime, statements: [] })
    const known = w.statements.filter(s => !('colour' in s))
    expect(decodeWelcome(encodeWelcome(w, 2))).toEqual({ version: 2, inviter: w.inviter, devices: w.devices, forgotten: byTime, statements: known })
    expect(decodeWelcome(encodeWelcome(w, 2, 600)).statements).toEqual(known.slice(0, 1))
  })

  it('refuses what is not a welcome: another version, a cut, a time that is not finite, trailing bytes after version 1, a statement kind it does not know', () => {
    const v1 = encodeWelcome(welcomeFixture(), 1)
    const v2 = encodeWelcome(welcomeFixture(), 2)
    const at = (b: Buffer, i: number, byte: number): Buffer => { const x = Buffer.from(b); x[i] = byte; return x }
    const nanAt = Buffer.from(v1); nanAt.writeDoubleBE(NaN, 1 + 32 + 2 + 'desktop'.length + 2 + 32 + 2 + 'laptop'.length)
    const cases: Array<[Buffer, RegExp]> = [
      [at(v1, 0, 3), /unknown version/],
      [v1.subarray(0, v1.byteLength - 1), /truncated/],
      [v2.subarray(0, 300), /truncated/],
      [nanAt, /bad time/],
      [Buffer.concat([v1, Buffer.from([0])]), /trailing bytes/],
      [at(v2, v1.byteLength + 2, 9), /unknown statement/],
      [Buffer.alloc(0), /truncated/]
    ]
    for (const [bytes, why] of cases) expect(() => decodeWelcome(bytes)).toThrow(why)
  })

  it('round-trips any welcome of keys, names and finite times (version 1: the lists)', () => {
    const hex = fc.uint8Array({ minLength: 32, maxLength: 32 }).map(b => Buffer.from(b).toString('hex'))
    const name = fc.string({ maxLength: 200 })
    const t = fc.double({ noNaN: true, noDefaultInfinity: true })
    const arb = fc.record({
      inviter: fc.record({ key: hex, name }),
      devices: fc.array(fc.record({ key: hex, name, addedAt: t }), { maxLength: 5 }),
      forgotten: fc.array(fc.record({ key: hex, at: t }), { maxLength: 5 })
    })
    fc.assert(fc.property(arb, w => {
      const m: WelcomeMessage = { version: 1, ...w, statements: [] }
      expect(c.decode(welcome, c.encode(welcome, m))).toEqual(m)
    }), { numRuns: 300 })
  })
})

describe('the pairing request', () => {
  const join = { at: 1_700_000_000_000, sig: 'a'.repeat(128) }

  it('is the JSON older members read (key and name first), with the join and the welcome version when co-signed', () => {
    expect(c.encode(joinRequest, { key: k('1'), name: 'laptop', welcome: 2 }).toString()).toBe(`{"v":1,"key":"${k('1')}","name":"laptop"}`)
    expect(c.encode(joinRequest, { key: k('1'), name: 'laptop', join, welcome: 2 }).toString()).toBe(`{"v":1,"key":"${k('1')}","name":"laptop","join":${JSON.stringify(join)},"welcome":2}`)
  })

  it('reads an older device\'s request as version 1 of the welcome, a key in capitals as the key, a long name cut', () => {
    const read = (v: unknown): unknown => c.decode(joinRequest, Buffer.from(JSON.stringify(v)))
    expect(read({ v: 1, key: k('A'), name: 'x'.repeat(300) })).toEqual({ key: k('a'), name: 'x'.repeat(200), welcome: 1 })
    expect(read({ v: 1, key: k('1'), name: 'laptop', join, welcome: 2 })).toEqual({ key: k('1'), name: 'laptop', join, welcome: 2 })
    expect(read({ v: 1, key: k('1'), name: 'laptop', join: { at: 'now' }, welcome: 1.5 })).toEqual({ key: k('1'), name: 'laptop', welcome: 1 })
  })

  it('refuses what is not a request: not JSON, another version, no name, a key that is not 32 bytes', () => {
    for (const text of ['{"v":1,', JSON.stringify({ v: 2, key: k('1'), name: 'x' }), JSON.stringify({ v: 1, key: k('1') }), JSON.stringify({ v: 1, key: 'ab', name: 'x' })]) {
      expect(() => c.decode(joinRequest, Buffer.from(text))).toThrow()
    }
  })
})
