/** Exponential backoff between retries, capped, with jitter: every retry loop's delay. */
export interface BackoffSpec {
  /** the delay before the first retry */
  minMs: number
  /** no delay grows past this before jitter */
  maxMs: number
  /**
   * In [-1, 1]: the delay is multiplied by 1 + jitter·random. Negative spreads retries below the
   * delay (never later than the cap: a client reconnecting), positive above it (never sooner
   * than minMs: Pekko's randomFactor for restarts).
   */
  jitter: number
}

/** The delay before retry number `retry` (0 = the first): min(maxMs, minMs·2^retry)·(1 + jitter·random), rounded. Pure. */
export function backoffDelay (b: BackoffSpec, retry: number, random: number): number {
  const base = Math.min(b.maxMs, b.minMs * 2 ** Math.max(0, retry))
  const jitter = Math.min(1, Math.max(-1, b.jitter))
  return Math.round(base * (1 + jitter * Math.min(1, Math.max(0, random))))
}
