// sync-peers.bin (peer-feeds-file.ts) reads back what was written, and a file that is torn,
// cut short or changed in any byte is refused whole (the node then falls back to the full
// exchange), never read as some other list. PeerFeeds restored from a save against this
// device's list changed since holds what it held. fast-check prints the seed and path of a
// failure: replay with fc.assert(..., { seed, path }).
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { crc32 } from 'node:zlib'
import { decodeList, decodePeer, decodePeerFeedsFile, encodePeerFeedsFile, type SavedPeer } from '../../../src/main/sync/peers/peer-feeds-file'
import { FeedList } from '../../../src/main/sync/peers/feed-list'
import { PeerFeeds, type SavedMine } from '../../../src/main/sync/peers/peer-feeds'

const hex32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map(b => Buffer.from(b).toString('hex'))
const length = fc.oneof(fc.nat({ max: 300 }), fc.constant(Number.MAX_SAFE_INTEGER), fc.nat())
const pairs = fc.array(fc.tuple(hex32, length), { maxLength: 20 })
const savedPeer: fc.Arbitrary<SavedPeer> = fc.record({
  digest: hex32,
  unsent: fc.oneof(fc.constant('all' as const), fc.array(hex32, { maxLength: 5 })),
  form: fc.oneof(fc.record({ heard: pairs }), fc.record({ like: fc.record({ differ: pairs, absent: fc.array(hex32, { maxLength: 5 }) }) }))
}).map(({ form, ...p }) => ({ ...p, ...form }))
const file = fc.record({
  mine: fc.record({ digest: hex32, feeds: pairs }),
  peers: fc.uniqueArray(fc.tuple(hex32, savedPeer), { maxLength: 4, selector: ([d]) => d })
})

describe('sync-peers.bin', () => {
  it('reads back what was written', () => {
    fc.assert(fc.property(file, f => {
      const back = decodePeerFeedsFile(encodePeerFeedsFile(f.mine, f.peers))
      const list = decodeList(back.mine)
      expect({ digest: list.digest, feeds: Array.from({ length: list.size }, (_, i) => [list.key(i), list.lengths[i]]) }).toEqual(f.mine)
      for (let i = 0; i < list.size; i++) expect(list.keyIs(i, f.mine.feeds[i]?.[0] as string)).toBe(true)
      expect([...back.peers].map(([d, b]) => [d, decodePeer(b)])).toEqual(f.peers)
    }))
  })

  it('refuses a file cut short, grown or changed in any byte', () => {
    fc.assert(fc.property(file, fc.nat(), fc.integer({ min: 1, max: 255 }), fc.constantFrom('flip', 'cut', 'grow'), (f, at, x, how) => {
      const buf = encodePeerFeedsFile(f.mine, f.peers)
      const i = at % buf.length
      const bad = how === 'flip' ? Buffer.from(buf.map((b, j) => (j === i ? b ^ x : b))) : how === 'cut' ? buf.subarray(0, i) : Buffer.concat([buf, Buffer.from([x])])
      expect(() => decodePeerFeedsFile(bad)).toThrow()
    }))
  })

  it('refuses the JSON the first build of protocol 1.2 wrote, and a file of another format', () => {
    expect(() => decodePeerFeedsFile(Buffer.from('{"v":1,"mine":{"digest":"00","feeds":[]},"peers":{}}'))).toThrow(/checksum/)
    const newer = encodePeerFeedsFile({ digest: '0'.repeat(64), feeds: [] }, [])
    newer[0] = 3
    newer.writeUInt32LE(crc32(newer.subarray(0, newer.length - 4)), newer.length - 4)
    expect(() => decodePeerFeedsFile(newer)).toThrow(/format 3/)
  })
})

const key = fc.constantFrom(...Array.from({ length: 8 }, (_, i) => String(i).repeat(64)))
const conversationOf = (k: string): string => k.slice(0, 1).repeat(64)
const lengths = fc.dictionary(key, fc.nat({ max: 4 }), { maxKeys: 8 })
const list = (m: Record<string, number>): FeedList => {
  const l = new FeedList()
  for (const [k, n] of Object.entries(m)) l.set(k, { conversation: conversationOf(k), length: n })
  return l
}

describe('PeerFeeds saved and restored', () => {
  it('holds what it held, with its digest, when this device\'s list grew between the save and the read', () => {
    // saved: this device's list `was` and a peer's; then this device's feeds grow or are added (lengths only grow)
    fc.assert(fc.property(lengths, lengths, fc.dictionary(key, fc.nat({ max: 3 }), { maxKeys: 8 }), (mineThen, peer, growth) => {
      const was = list(mineThen)
      const p = new PeerFeeds('d'.repeat(64))
      p.toldAll()
      for (const [k, f] of list(peer).feeds) p.heardFeed(k, f, was)
      const saved = decodePeer(encodeOne(p.saved(was)))
      const now = FeedList.restore(new Map(was.feeds), was.digest)
      const diff = new Map<string, number | null>()
      for (const [k, n] of Object.entries(growth)) {
        const old = now.get(k)
        if (now.set(k, { conversation: conversationOf(k), length: (old?.length ?? 0) + n }) && !diff.has(k)) diff.set(k, old?.length ?? null)
      }
      const savedMine: SavedMine = { size: was.size, diff }
      const back = PeerFeeds.restore(p.device, saved, conversationOf, savedMine, now)
      expect([...back.heard.feeds].sort()).toEqual([...p.heard.feeds].sort())
      expect(back.heard.digest).toBe(list(peer).digest)
      // where the two differ now, and every feed of this device that changed since is owed to the peer
      expect([...back.lag].sort()).toEqual([...back.heard.feeds].filter(([k, f]) => (now.get(k)?.length ?? 0) !== f.length).map(([k]) => k).sort())
      expect(back.pending(now).feeds.map(f => f.key).sort()).toEqual([...diff.keys()].sort())
    }))
  })
})

function encodeOne (p: SavedPeer): Buffer {
  const f = decodePeerFeedsFile(encodePeerFeedsFile({ digest: '0'.repeat(64), feeds: [] }, [['d'.repeat(64), p]]))
  return f.peers.get('d'.repeat(64)) as Buffer
}
