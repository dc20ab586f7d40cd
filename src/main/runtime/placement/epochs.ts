// Which agent epochs count (docs/ARCHITECTURE.md 6.4, "Epochs are gapless"). Every honest
// start takes an epoch its device saw, one more than one it saw, or (a resume over an agent
// only announced so far) two more, naming the announced one as `previous`. So over the
// whole history the honest epochs form 0..k without a gap, and an epoch beyond a gap is one
// no device could have reached by resuming: it counts for nothing until the starts that
// fill the gap arrive. A peer that wants the conversation for ever must write ~2^30 entries.
import type { Entry } from '../../../shared/entry/entry'

/** An agent incarnation: the device it runs on and its epoch. */
export interface AgentRef { device: string; epoch: number }

/** Orders agents: higher epoch wins, then the higher device id (the tie-break every device computes alike). */
export function compareRefs (a: AgentRef, b: AgentRef): number {
  if (a.epoch !== b.epoch) return a.epoch - b.epoch
  return a.device < b.device ? -1 : a.device > b.device ? 1 : 0
}

/**
 * An upper bound on any epoch, so arithmetic on epochs stays exact. Gaplessness keeps honest
 * (and forged) epochs far below it; one above it (or not a safe integer) is never honoured.
 */
export const MAX_EPOCH = 2 ** 31

export function honouredEpoch (epoch: number): boolean {
  return Number.isSafeInteger(epoch) && epoch >= 0 && epoch <= MAX_EPOCH
}

/**
 * The epochs a conversation's history honours, kept up to date as entries arrive (the result
 * depends only on the set of entries, never on their order). An `agent.started` claims its
 * epoch; one whose `previous` is exactly one epoch lower claims that epoch too (a resume over
 * an agent whose start has not arrived yet). Claimed epochs count in ascending order while
 * each is at most one above the highest counted so far.
 */
export class EpochLedger {
  /** the highest epoch that counts, −1 for none */
  private ceiling = -1
  /** the highest (epoch, device) that started at an epoch that counts */
  private top: AgentRef | null = null
  /** epochs claimed beyond the gap: the highest device that started at each (null: only claimed as a `previous`) */
  private readonly beyond = new Map<number, string | null>()

  constructor (entries: Iterable<Entry> = []) { this.add(entries) }

  add (entries: Iterable<Entry>): void {
    for (const e of entries) {
      if (e.kind !== 'agent.started' || !honouredEpoch(e.body.epoch)) continue
      const prev = e.body.previous
      if (prev !== undefined && prev.epoch === e.body.epoch - 1) this.claim(prev.epoch, null)
      this.claim(e.body.epoch, e.author.device)
    }
    // the gap below the claims beyond closes: they count, up to the next gap
    for (let next = this.beyond.get(this.ceiling + 1); next !== undefined; next = this.beyond.get(this.ceiling + 1)) {
      this.beyond.delete(++this.ceiling)
      if (next !== null) this.raise({ device: next, epoch: this.ceiling })
    }
  }

  /** The agent the conversation belongs to: the highest (epoch, device) started at an epoch that counts. */
  get owner (): AgentRef | null { return this.top }

  /** The highest epoch that counts, −1 for none. */
  get highest (): number { return this.ceiling }

  /** The start an entry records, if it is an agent.started whose epoch counts. */
  startOf (e: Entry): AgentRef | null {
    return e.kind === 'agent.started' && honouredEpoch(e.body.epoch) && e.body.epoch <= this.ceiling ? { device: e.author.device, epoch: e.body.epoch } : null
  }

  /**
   * Whether an agent a peer announces counts: at most one above the highest epoch that counts
   * here (its start may not have arrived yet; a resume over it is then two above, naming it).
   */
  admits (announced: AgentRef): boolean {
    return honouredEpoch(announced.epoch) && announced.epoch <= this.ceiling + 1
  }

  private claim (epoch: number, device: string | null): void {
    if (epoch <= this.ceiling) {
      if (device !== null) this.raise({ device, epoch })
      return
    }
    const had = this.beyond.get(epoch)
    if (had === undefined || (device !== null && (had === null || device > had))) this.beyond.set(epoch, device)
  }

  private raise (ref: AgentRef): void {
    if (this.top === null || compareRefs(ref, this.top) > 0) this.top = ref
  }
}
