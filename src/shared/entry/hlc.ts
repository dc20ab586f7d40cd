/**
 * Hybrid logical clock (Kulkarni et al.): a timestamp that follows wall time but never
 * goes backwards and orders causally related events, so last-writer-wins on mutable
 * state (titles) agrees on every device.
 *
 * Peer clocks are bounded (DESIGN.md, "Trust"): a timestamp counts only if it names the
 * device that wrote its entry, its counter is in range, and it is at most MAX_CLOCK_SKEW_MS
 * ahead of the reader's clock — while it is further ahead it is not honoured (it counts once
 * real time reaches it). So one device cannot pin a setting, or the clock every later write
 * ticks from, at the end of time.
 */
export interface Hlc {
  wall: number
  counter: number
  device: string
}

/**
 * How far ahead of the reader's clock a timestamp may be and still count (ms). Synced clocks
 * agree within a second; a minute covers a device that woke up before its clock was set,
 * and is short enough that a timestamp set ahead on purpose wins for a minute at most.
 */
export const MAX_CLOCK_SKEW_MS = 60_000

/**
 * The largest counter honoured. An honest counter grows only while wall time stands still
 * (or stays behind a clock a little ahead): a handful. A tick past it moves the wall on
 * by 1 ms instead, so a counter at the limit cannot stop anyone from writing after it.
 */
export const MAX_HLC_COUNTER = 2 ** 31 - 1

export function compareHlc (a: Hlc, b: Hlc): number {
  if (a.wall !== b.wall) return a.wall < b.wall ? -1 : 1
  if (a.counter !== b.counter) return a.counter < b.counter ? -1 : 1
  return a.device < b.device ? -1 : a.device > b.device ? 1 : 0
}

/** Whether a timestamp can count at all: it names the device that wrote it (`author`) and its counter is in range. */
export function honestHlc (hlc: Hlc, author: string): boolean {
  return hlc.device === author && Number.isSafeInteger(hlc.wall) && hlc.counter <= MAX_HLC_COUNTER
}

/** Whether a timestamp counts now: not more than MAX_CLOCK_SKEW_MS ahead of `now`. */
export function hlcDue (hlc: Hlc, now: number): boolean {
  return hlc.wall <= now + MAX_CLOCK_SKEW_MS
}

/** The next timestamp for a local event, after everything this device has seen. */
export function tickHlc (last: Hlc | null, now: number, device: string): Hlc {
  if (last === null || now > last.wall) return { wall: now, counter: 0, device }
  if (last.counter >= MAX_HLC_COUNTER) return { wall: last.wall + 1, counter: 0, device }
  return { wall: last.wall, counter: last.counter + 1, device }
}

/** The later of two clocks, for folding in a remote event before the next tick. */
export function maxHlc (a: Hlc | null, b: Hlc | null): Hlc | null {
  if (a === null) return b
  if (b === null) return a
  return compareHlc(a, b) >= 0 ? a : b
}
