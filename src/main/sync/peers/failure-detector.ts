/**
 * Suspects a device that has been silent too long (or whose connection dropped), and
 * clears the suspicion when it speaks again. Pure: time comes in as arguments.
 */
export class FailureDetector {
  private readonly last = new Map<string, number>()
  /** suspected devices → when the suspicion began */
  private readonly suspected = new Map<string, number>()
  private readonly connected = new Set<string>()

  constructor (readonly suspectAfterMs: number) {}

  /** Any message from a device counts as a heartbeat. Returns true if it was suspected. */
  heard (device: string, now: number): boolean {
    this.last.set(device, now)
    this.connected.add(device)
    return this.suspected.delete(device)
  }

  /** The connection to a device is gone: suspect it at once. Returns true if newly suspected. */
  lost (device: string, now: number): boolean {
    this.connected.delete(device)
    if (this.suspected.has(device)) return false
    this.suspected.set(device, now)
    return true
  }

  /** Devices that have just become suspected through silence. */
  check (now: number): string[] {
    const out: string[] = []
    for (const [device, at] of this.last) {
      if (this.suspected.has(device) || now - at < this.suspectAfterMs) continue
      this.suspected.set(device, now)
      out.push(device)
    }
    return out
  }

  /** When the next device not yet suspected will be, if nothing is heard from it meanwhile. */
  nextDeadline (): number | undefined {
    let next: number | undefined
    for (const [device, at] of this.last) {
      if (this.suspected.has(device)) continue
      const due = at + this.suspectAfterMs
      if (next === undefined || due < next) next = due
    }
    return next
  }

  isSuspected (device: string): boolean { return this.suspected.has(device) }
  /** When the current suspicion of a device began (how long failover took to notice it). */
  suspectedSince (device: string): number | undefined { return this.suspected.get(device) }
  lastHeard (device: string): number | undefined { return this.last.get(device) }
  forget (device: string): void {
    this.last.delete(device)
    this.suspected.delete(device)
    this.connected.delete(device)
  }
}
