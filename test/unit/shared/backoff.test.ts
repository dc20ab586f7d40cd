import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { backoffDelay } from '../../../src/shared/backoff'

describe('backoffDelay (src/shared/backoff.ts)', () => {
  it('doubles from minMs to the cap, jitter scaling the capped delay by 1 + jitter·random', () => {
    expect([0, 1, 2, 3, 4, 5].map(n => backoffDelay({ minMs: 100, maxMs: 1000, jitter: 0 }, n, 0.7))).toEqual([100, 200, 400, 800, 1000, 1000])
    expect(backoffDelay({ minMs: 100, maxMs: 1000, jitter: 0.5 }, 4, 0.5)).toBe(1250)
    expect(backoffDelay({ minMs: 100, maxMs: 1000, jitter: -0.25 }, 4, 1)).toBe(750)
    expect(backoffDelay({ minMs: 100, maxMs: 1000, jitter: 3 }, 0, 1)).toBe(200) // jitter is kept within [-1, 1]
    expect(backoffDelay({ minMs: 100, maxMs: 1000, jitter: 0 }, 2000, 0)).toBe(1000) // no overflow past the cap
  })

  it('stays between the capped delay and its jittered bound; downward jitter never waits past the cap, upward never less than minMs', () => {
    fc.assert(fc.property(
      fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 0, max: 100_000 }), fc.double({ min: -1, max: 1, noNaN: true }),
      fc.nat(60), fc.double({ min: 0, max: 0.9999, noNaN: true }),
      (minMs, extra, jitter, retry, random) => {
        const maxMs = minMs + extra
        const d = backoffDelay({ minMs, maxMs, jitter }, retry, random)
        const base = Math.min(maxMs, minMs * 2 ** retry)
        expect(d).toBeGreaterThanOrEqual(Math.floor(base * (1 + Math.min(0, jitter))))
        expect(d).toBeLessThanOrEqual(Math.ceil(base * (1 + Math.max(0, jitter))))
        if (jitter <= 0) expect(d).toBeLessThanOrEqual(maxMs)
        if (jitter >= 0) expect(d).toBeGreaterThanOrEqual(minMs)
        // one more failure never shortens the wait (same random draw)
        expect(backoffDelay({ minMs, maxMs, jitter }, retry + 1, random)).toBeGreaterThanOrEqual(d)
      }))
  })
})
