// Acknowledged intents' bookkeeping (src/main/sync/peers/held-acks.ts): an ack of a length covers
// every block below it and stays; only the live devices asked about count; a question is
// answered at once when the feed is held that far, else when it grows that far, and a device
// cannot make this one keep more than MAX_WANTS_PER_DEVICE questions.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { HeldAcks, MAX_WANTS_PER_DEVICE } from '../../../src/main/sync/peers/held-acks'

const K = 'k'.repeat(64)

describe('HeldAcks', () => {
  it('an ack covers every length below it, never more, and only for the devices asked about', () => {
    fc.assert(fc.property(fc.array(fc.tuple(fc.constantFrom('p', 'q'), fc.nat(50))), fc.nat(60), (acks, length) => {
      const h = new HeldAcks()
      for (const [d, n] of acks) h.ack(d, K, n)
      const best = (d: string): number => Math.max(0, ...acks.filter(a => a[0] === d).map(a => a[1]))
      expect(h.heldBy(K, length, ['p', 'q'])).toEqual(['p', 'q'].filter(d => best(d) >= length))
      expect(h.heldBy(K, length, ['r'])).toEqual(length === 0 ? ['r'] : [])
      expect(h.heldBy(K, length, ['q'])).toEqual(best('q') >= length ? ['q'] : [])
    }))
  })

  it('answers a question at once when held that far, else once the feed grows that far (and only then)', () => {
    const h = new HeldAcks()
    expect(h.want('w', K, 5, 7)).toBe(7)
    expect(h.isWanted(K)).toBe(false)
    expect(h.want('w', K, 9, 7)).toBeNull()
    expect(h.isWanted(K)).toBe(true)
    expect(h.grew(K, 8)).toEqual([])
    expect(h.grew(K, 9)).toEqual(['w'])
    expect(h.grew(K, 10)).toEqual([]) // answered once
    expect(h.want('w', K, 12, 10)).toBeNull()
    h.forgetWants('w')
    expect(h.grew(K, 12)).toEqual([])
  })

  it('keeps at most MAX_WANTS_PER_DEVICE questions per device, dropping the oldest', () => {
    const h = new HeldAcks()
    const key = (i: number): string => i.toString(16).padStart(64, '0')
    for (let i = 0; i <= MAX_WANTS_PER_DEVICE; i++) h.want('w', key(i), 1, 0)
    expect(h.isWanted(key(0))).toBe(false)
    expect(h.isWanted(key(1))).toBe(true)
    expect(h.isWanted(key(MAX_WANTS_PER_DEVICE))).toBe(true)
  })
})
