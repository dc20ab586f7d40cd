import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { PrioritySlots, type Release } from '../../src/shared/priority-slots'

const turn = (): Promise<void> => new Promise(resolve => setImmediate(resolve))

describe('PrioritySlots', () => {
  it('holds at most its limit, serves the highest priority first (arrival order among equals), and serves every waiter', async () => {
    await fc.assert(fc.asyncProperty(
      fc.integer({ min: 1, max: 8 }),
      fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 60 }),
      fc.array(fc.nat(), { maxLength: 200 }),
      async (limit, priorities, picks) => {
        const slots = new PrioritySlots(limit)
        const granted: number[] = []
        const holding: Array<{ i: number; release: Release }> = []
        priorities.forEach((p, i) => { void slots.take(p).then(release => { granted.push(i); holding.push({ i, release }) }) })
        await turn()
        const firstWave = granted.length
        expect(firstWave).toBe(Math.min(limit, priorities.length))
        // releases in a random order, some twice (a second call gives nothing back)
        let k = 0
        while (holding.length > 0) {
          expect(slots.active).toBeLessThanOrEqual(limit)
          const at = (picks[k++] ?? 0) % holding.length
          const h = holding.splice(at, 1)[0] as { i: number; release: Release }
          h.release()
          h.release()
          await turn()
        }
        expect(slots.active).toBe(0)
        expect(slots.waiting).toBe(0)
        expect([...granted].sort((a, b) => a - b)).toEqual(priorities.map((_, i) => i))
        // after the first wave (granted in arrival order), by priority, then arrival
        const rest = granted.slice(firstWave)
        const ranked = [...rest].sort((a, b) => (priorities[b] as number) - (priorities[a] as number) || a - b)
        expect(rest).toEqual(ranked)
      }
    ), { verbose: 1 })
  })

  it('refuses a limit that is not a positive integer', () => {
    expect(() => new PrioritySlots(0)).toThrow(/positive integer/)
    expect(() => new PrioritySlots(1.5)).toThrow(/positive integer/)
  })
})
