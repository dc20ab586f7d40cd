// The tree view's ARIA positions for its lane layout (rows are virtualised, so each says where it sits).
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { ariaPositions } from '../../../src/renderer/tree/tree-aria'

describe('ariaPositions', () => {
  it('puts each row in the set of its fork, one lane up', () => {
    // lanes of: root, t1, t2 (fork child), t3 (its continuation), t2b, t1b — as layoutTree gives
    const lanes = [0, 1, 2, 2, 2, 1]
    const { pos, size } = ariaPositions(lanes.map(lane => ({ lane })))
    expect([...pos]).toEqual([1, 1, 1, 2, 3, 2])
    expect([...size]).toEqual([1, 2, 3, 3, 3, 2])
  })

  it('numbers every set 1..size with no gaps (property)', () => {
    // lanes as a layout makes them: start at 0, step in by at most one lane at a time
    const lanesArb = fc.array(fc.integer({ min: -3, max: 1 }), { maxLength: 60 }).map(steps => {
      const out = [0]
      for (const s of steps) out.push(Math.max(0, (out[out.length - 1] as number) + s))
      return out
    })
    fc.assert(fc.property(lanesArb, lanes => {
      const { pos, size } = ariaPositions(lanes.map(lane => ({ lane })))
      // every position lies in its set, and each set has exactly one first and one last row
      for (let i = 0; i < lanes.length; i++) {
        expect(pos[i]).toBeGreaterThanOrEqual(1)
        expect(pos[i]).toBeLessThanOrEqual(size[i] as number)
      }
      const lastOfSets = [...pos].filter((p, i) => p === size[i]).length
      const firstOfSets = [...pos].filter(p => p === 1).length
      expect(lastOfSets).toBe(firstOfSets)
    }))
  })
})
