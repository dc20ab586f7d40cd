import { backoffDelay } from '../../../shared/backoff'
import type { Backoff, ExitReason, Restart } from './types'
import { isAbnormal } from './types'

/** Whether a child with this restart type is restarted after this exit (OTP). */
export function shouldRestart (restart: Restart, reason: ExitReason): boolean {
  if (restart === 'permanent') return true
  if (restart === 'transient') return isAbnormal(reason)
  return false
}

/**
 * OTP's restart intensity: more than `intensity` restarts within `periodMs` (a sliding
 * window) and the supervisor gives up. Pure, so it can be property-tested.
 */
export class RestartWindow {
  private stamps: number[] = []

  constructor (readonly intensity: number, readonly periodMs: number) {}

  /** Records a restart at `now`; false if it exceeds the intensity. */
  add (now: number): boolean {
    // OTP keeps a restart exactly one period old (R >= Now - Period).
    this.stamps = this.stamps.filter(t => now - t <= this.periodMs)
    this.stamps.push(now)
    return this.stamps.length <= this.intensity
  }

  get recent (): number { return this.stamps.length }
}

/** The delay before restart `attempt`: min(max, min·2^n)·(1 + random·randomFactor), as Pekko's BackoffSupervisor (jitter only upwards). */
export function restartDelay (b: Backoff, attempt: number, random: number): number {
  return backoffDelay({ minMs: b.minMs, maxMs: b.maxMs, jitter: Math.max(0, b.randomFactor) }, attempt, random)
}
