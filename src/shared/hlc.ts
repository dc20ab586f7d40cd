/**
 * Hybrid logical clock (Kulkarni et al.): a timestamp that follows wall time but never
 * goes backwards and orders causally related events, so last-writer-wins on mutable
 * state (titles) agrees on every device.
 */
export interface Hlc {
  wall: number
  counter: number
  device: string
}

export function compareHlc (a: Hlc, b: Hlc): number {
  if (a.wall !== b.wall) return a.wall < b.wall ? -1 : 1
  if (a.counter !== b.counter) return a.counter < b.counter ? -1 : 1
  return a.device < b.device ? -1 : a.device > b.device ? 1 : 0
}

/** The next timestamp for a local event, after everything this device has seen. */
export function tickHlc (last: Hlc | null, now: number, device: string): Hlc {
  if (last === null || now > last.wall) return { wall: now, counter: 0, device }
  return { wall: last.wall, counter: last.counter + 1, device }
}

/** The later of two clocks, for folding in a remote event before the next tick. */
export function maxHlc (a: Hlc | null, b: Hlc | null): Hlc | null {
  if (a === null) return b
  if (b === null) return a
  return compareHlc(a, b) >= 0 ? a : b
}
