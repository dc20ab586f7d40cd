// Complexity checks that cannot flake: the work a function does, counted (never timed), as
// its input doubles. A linear function's count doubles with it; a quadratic one's quadruples.
import { expect } from 'vitest'

/**
 * The work done at each size in `sizes` (each double the one before); fails unless every
 * doubling multiplied it by at most `factor` (linear: 2, and a little for constant costs).
 */
export function expectLinear (what: string, work: (n: number) => number, sizes: readonly number[], factor = 2.2): number[] {
  const counts = sizes.map(work)
  for (let i = 1; i < sizes.length; i++) {
    expect(sizes[i], 'sizes double').toBe(2 * (sizes[i - 1] as number))
    const ratio = (counts[i] as number) / Math.max(1, counts[i - 1] as number)
    expect(ratio, `${what}: work ${counts.join(' → ')} at sizes ${sizes.join(' → ')}`).toBeLessThanOrEqual(factor)
  }
  return counts
}
