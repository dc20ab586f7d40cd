/**
 * Acknowledged intents (issue 13, ARCHITECTURE §14): before a `workspace` or `external` step
 * of an auto-revival conversation starts, a live peer must say it holds the step's intent, so
 * whoever revives the agent sees it and records the outcome as unknown instead of running it
 * again. Pure bookkeeping of the `held` message (arbor/1 #8), both sides:
 *
 * - the writer asks (`want`: its feed and a length) and keeps every answer: an ack of a length
 *   covers every block below it, and stays true (history is never removed by sync);
 * - a peer answers with `held` once its copy of that feed holds that many blocks, stored in its
 *   Hypercore and indexed (its planner and placement see them), never before; it keeps the
 *   questions it cannot answer yet, a bounded number per device.
 *
 * An ack only lets the writer's agent go on: it chooses nothing that runs.
 */

/** How many unanswered questions a device may have open here (the oldest are dropped past it: it asks again). */
export const MAX_WANTS_PER_DEVICE = 1000

export class HeldAcks {
  /** per peer: feed key → the longest length it said it holds */
  private readonly acked = new Map<string, Map<string, number>>()
  /** per peer: feed key → the length it asked about, not answered yet (insertion order = age) */
  private readonly wants = new Map<string, Map<string, number>>()

  /** `device` says it holds `key` through `length`. Returns true if that is more than it said before. */
  ack (device: string, key: string, length: number): boolean {
    let m = this.acked.get(device)
    if (m === undefined) this.acked.set(device, m = new Map())
    if ((m.get(key) ?? 0) >= length) return false
    m.set(key, length)
    return true
  }

  /** Which of `devices` (the live ones) said they hold `key` through `length` at least. */
  heldBy (key: string, length: number, devices: Iterable<string>): string[] {
    const out: string[] = []
    for (const d of devices) if ((this.acked.get(d)?.get(key) ?? 0) >= length) out.push(d)
    return out
  }

  /** `device` asks to hear when this device holds `key` through `length`; `have` is what this device holds of it now. Returns the length to answer with now, or null (kept until it holds that much). */
  want (device: string, key: string, length: number, have: number): number | null {
    if (have >= length) return have
    let m = this.wants.get(device)
    if (m === undefined) this.wants.set(device, m = new Map())
    const before = m.get(key) ?? 0
    m.delete(key) // a repeated question is the newest
    m.set(key, Math.max(before, length))
    while (m.size > MAX_WANTS_PER_DEVICE) m.delete(m.keys().next().value as string)
    return null
  }

  /** Whether some device waits to hear about `key`. */
  isWanted (key: string): boolean {
    for (const m of this.wants.values()) if (m.has(key)) return true
    return false
  }

  /** This device now holds `key` through `have`: the questions it answers, by device (and forgets them). */
  grew (key: string, have: number): string[] {
    const out: string[] = []
    for (const [device, m] of this.wants) {
      const w = m.get(key)
      if (w !== undefined && have >= w) { m.delete(key); out.push(device) }
    }
    return out
  }

  /** The device is gone (its last connection closed): its questions go; it asks again on its next connection. */
  forgetWants (device: string): void { this.wants.delete(device) }
}
