import net from 'node:net'
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { ipv6Groups, isPrivateAddress } from '../../../src/main/tools/private-address'

// The IPv4 blocks that are not the public internet, restated here as the specification.
const SPECIAL_V4: Array<[number, number]> = ([
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4]
] as const).map(([a, p]) => [toInt(a), p])

function toInt (a: string): number { return a.split('.').reduce((n, x) => n * 256 + Number(x), 0) }
const dotted = (n: number): string => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.')
const inBlock = (n: number, [base, p]: [number, number]): boolean => p === 0 || (n >>> (32 - p)) === (base >>> (32 - p))
const isSpecial = (n: number): boolean => SPECIAL_V4.some(b => inBlock(n, b))

const privateV4 = fc.tuple(fc.constantFrom(...SPECIAL_V4), fc.nat()).map(([[base, p], r]) => (base + (p === 32 ? 0 : r % 2 ** (32 - p))) >>> 0)
const publicV4 = fc.nat({ max: 2 ** 32 - 1 }).filter(n => !isSpecial(n))
const hex = (n: number): string => n.toString(16)
const upperOrNot = fc.boolean()

/** Every IPv6 spelling that reaches (or embeds) the IPv4 address n. */
function embeddings (n: number, salt: number): string[] {
  const v4 = dotted(n)
  const hi = hex(n >>> 16)
  const lo = hex(n & 0xffff)
  const full = (groups: number[]): string => groups.map(g => g.toString(16).padStart(4, '0')).join(':')
  return [
    `::ffff:${v4}`, `::ffff:${hi}:${lo}`, full([0, 0, 0, 0, 0, 0xffff, n >>> 16, n & 0xffff]), `0:0:0:0:0:ffff:${v4}`, // mapped
    `::${v4}`, `::${hi}:${lo}`, full([0, 0, 0, 0, 0, 0, n >>> 16, n & 0xffff]), // compatible
    `::ffff:0:${v4}`, `::ffff:0:${hi}:${lo}`, // translated
    `64:ff9b::${v4}`, `64:ff9b::${hi}:${lo}`, // NAT64
    `2002:${hi}:${lo}::${hex(salt & 0xffff)}`, `2002:${hi}:${lo}:${hex(salt & 0xffff)}::1` // 6to4
  ]
}

/** Spellings that embed the IPv4 address n in a block refused as a whole. */
function refusedWhole (n: number, salt: number): string[] {
  const hi = hex(n >>> 16)
  const lo = hex(n & 0xffff)
  const c = (~n) >>> 0
  return [`64:ff9b:1::${hi}:${lo}`, `64:ff9b:1:${hex(salt & 0xffff)}::${hi}:${lo}`, // NAT64 local use
    `2001:0:${hex(salt & 0xffff)}:${hex(salt >>> 16)}:8000:${hex(salt & 0xffff)}:${hex(c >>> 16)}:${hex(c & 0xffff)}`, // Teredo (client obfuscated)
    `fe80::5efe:${dotted(n)}`, `fec0::${hi}:${lo}`, `fd00::ffff:${hi}:${lo}`]
}

const withZone = fc.option(fc.constantFrom('%eth0', '%lo', '%1'), { nil: undefined })

describe('private addresses (property)', () => {
  it('every IPv6 embedding of a private IPv4 address is refused, as written and as the URL parser normalizes it', () => {
    fc.assert(fc.property(privateV4, fc.nat(), upperOrNot, withZone, (n, salt, upper, zone) => {
      expect(isPrivateAddress(dotted(n))).toBe(true)
      for (const form of [...embeddings(n, salt), ...refusedWhole(n, salt)]) {
        const a = upper ? form.toUpperCase() : form
        expect(net.isIPv6(a), a).toBe(true)
        expect(isPrivateAddress(a + (zone ?? '')), a + (zone ?? '')).toBe(true)
        expect(isPrivateAddress(new URL(`http://[${a}]/`).hostname.slice(1, -1)), a).toBe(true)
      }
    }), { numRuns: 2000 })
  })

  it('public addresses pass: IPv4, its embeddings, and global unicast IPv6 outside the reserved blocks', () => {
    fc.assert(fc.property(publicV4, fc.nat(), (n, salt) => {
      expect(isPrivateAddress(dotted(n)), dotted(n)).toBe(false)
      for (const form of embeddings(n, salt)) expect(isPrivateAddress(form), form).toBe(false)
      for (const form of refusedWhole(n, salt)) expect(isPrivateAddress(form), form).toBe(true)
    }), { numRuns: 2000 })
    const globalV6 = fc.tuple(fc.integer({ min: 0x2000, max: 0x3fff }), fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 7, maxLength: 7 }))
      .filter(([g0, rest]) => !(g0 === 0x2001 && (rest[0] as number) < 0x200) && g0 !== 0x2002 && !(g0 === 0x2001 && rest[0] === 0xdb8) && (g0 & 0xfff0) !== 0x3ff0)
    fc.assert(fc.property(globalV6, ([g0, rest]) => {
      const a = [g0, ...rest].map(hex).join(':')
      expect(isPrivateAddress(a), a).toBe(false)
      expect(isPrivateAddress(new URL(`http://[${a}]/`).hostname.slice(1, -1)), a).toBe(false)
    }), { numRuns: 2000 })
  })

  it('reads every spelling of an IPv6 address as its eight groups', () => {
    fc.assert(fc.property(fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff })), { minLength: 8, maxLength: 8 }), fc.boolean(), (groups, tailV4) => {
      const full = groups.map(hex).join(':')
      const compressed = new URL(`http://[${full}]/`).hostname.slice(1, -1)
      const mixed = tailV4 ? groups.slice(0, 6).map(hex).join(':') + ':' + dotted(((groups[6] as number) * 65536 + (groups[7] as number)) >>> 0) : full
      for (const a of [full, compressed, mixed]) expect(ipv6Groups(a), a).toEqual(groups)
    }), { numRuns: 2000 })
  })

  it('anything that is not an IP address is refused', () => {
    for (const a of ['', 'localhost', '[::1]', '1.2.3', 'example.com', '::g', ' 1.1.1.1']) expect(isPrivateAddress(a), a).toBe(true)
  })
})
