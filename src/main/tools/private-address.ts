// Which addresses http_get may connect to: the public internet only. An IPv6 address that
// embeds an IPv4 one (mapped, compatible, translated, NAT64, 6to4) is judged by the IPv4
// address it reaches; any other IPv6 address must be global unicast (2000::/3) outside the
// blocks reserved within it (Teredo and the other IETF assignments, documentation).
import net from 'node:net'

/** IPv4 blocks that are not the public internet (IANA special-purpose registry). */
const PRIVATE_V4 = new net.BlockList()
for (const [a, p] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4]
] as const) PRIVATE_V4.addSubnet(a, p, 'ipv4')

/** Blocks inside 2000::/3 that are not the public internet. */
const RESERVED_V6: Array<[number[], number]> = [
  [[0x2001, 0x0000], 23], // IETF protocol assignments, Teredo (2001::/32) among them
  [[0x2001, 0x0db8], 32], // documentation
  [[0x3fff, 0x0000], 20] // documentation
]

/** Prefixes whose last 32 bits are an IPv4 address. */
const EMBEDDING_LAST_32: number[][] = [
  [0, 0, 0, 0, 0, 0], // IPv4-compatible ::a.b.c.d (:: and ::1 among them)
  [0, 0, 0, 0, 0, 0xffff], // IPv4-mapped ::ffff:a.b.c.d
  [0, 0, 0, 0, 0xffff, 0], // IPv4-translated ::ffff:0:a.b.c.d
  [0x64, 0xff9b, 0, 0, 0, 0] // NAT64 well-known prefix 64:ff9b::/96
]

/** True unless `address` (an IP address, IPv6 possibly with a zone id) is on the public internet. */
export function isPrivateAddress (address: string): boolean {
  const bare = address.replace(/%.*$/, '') // a zone id names an interface, not another address
  const family = net.isIP(bare)
  if (family === 4) return PRIVATE_V4.check(bare, 'ipv4')
  if (family !== 6) return true
  const g = ipv6Groups(bare)
  const v4 = embeddedIpv4(g)
  if (v4 !== undefined) return PRIVATE_V4.check(v4, 'ipv4')
  if (((g[0] as number) & 0xe000) !== 0x2000) return true // not global unicast: loopback, ULA, link- and site-local, multicast, NAT64 local use…
  return RESERVED_V6.some(([prefix, len]) => inPrefix(g, prefix, len))
}

/** The IPv4 address an IPv6 address stands for, if it embeds one. */
function embeddedIpv4 (g: number[]): string | undefined {
  const v4 = (hi: number, lo: number): string => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`
  if (EMBEDDING_LAST_32.some(p => p.every((x, i) => g[i] === x))) return v4(g[6] as number, g[7] as number)
  if (g[0] === 0x2002) return v4(g[1] as number, g[2] as number) // 6to4 2002:AABB:CCDD::/48
  return undefined
}

function inPrefix (g: number[], prefix: number[], len: number): boolean {
  for (let i = 0; i * 16 < len; i++) {
    const bits = Math.min(16, len - i * 16)
    const mask = (0xffff << (16 - bits)) & 0xffff
    if ((((g[i] as number) ^ (prefix[i] ?? 0)) & mask) !== 0) return false
  }
  return true
}

/** The eight 16-bit groups of a valid IPv6 address (net.isIPv6), a trailing dotted IPv4 included. */
export function ipv6Groups (address: string): number[] {
  let text = address
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number]
    text = text.slice(0, dotted.index) + ((a << 8) | b).toString(16) + ':' + ((c << 8) | d).toString(16)
  }
  const [head = '', tail] = text.split('::')
  const parse = (s: string): number[] => s === '' ? [] : s.split(':').map(h => parseInt(h, 16))
  const front = parse(head)
  if (tail === undefined) return front
  const back = parse(tail)
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back]
}
