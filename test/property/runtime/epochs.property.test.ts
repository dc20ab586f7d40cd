// Gapless epochs (docs/ARCHITECTURE.md 6.4): honest devices that start, resume and revive from
// partial views of each other's feeds (replication cut anywhere, presence ahead of entries,
// agents announced that never wrote their start), and a paired device that writes starts
// with any epoch it likes and announces agents that do not exist. Whatever the attacker
// wrote, a resume outranks every start that counts where it is taken, and counts itself at
// once; an honest start counts wherever what its writer held has arrived; starts beyond the
// reach of honest epochs never own anything; and epochs cost entries.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { Entry } from '../../../src/shared/entry/entry'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import { compareRefs, EpochLedger, MAX_EPOCH, nextEpoch, ownerOf, topRef, type AgentRef } from '../../../src/main/runtime/placement/placement'

const HONEST = ['1'.repeat(64), '2'.repeat(64), '3'.repeat(64)]
/** the attacker: the highest device id, so every tie of epochs goes its way */
const MALLORY = 'f'.repeat(64)
const WRITERS = [...HONEST, MALLORY]
const root = makeEntry({ kind: 'conversation', parents: [], body: { title: 't', nonce: 'n' } }, { conversation: null, device: HONEST[0] as string, ts: 0 })

let serial = 1
function start (device: string, epoch: number, reason: 'user' | 'resume' | 'revival' | 'restart', previous?: AgentRef): Entry {
  const body = previous === undefined ? { epoch, reason } : { epoch, reason, previous }
  return makeEntry({ kind: 'agent.started', parents: [root.id], body }, { conversation: root.id, device, ts: serial++ })
}

type Op =
  /** `to` replicates part of what `from` holds of `writer`'s feed (a prefix: feeds replicate in order) */
  | { op: 'sync'; to: number; from: number; writer: number; cut: number }
  /** `to` hears in presence the agent `from` runs (Mallory: any epoch she likes) */
  | { op: 'announce'; to: number; from: number; epoch: number }
  /** `from` starts an agent to take over, is outranked before it writes its start, and announces it meanwhile */
  | { op: 'phantom'; to: number; from: number }
  | { op: 'start'; at: number }
  | { op: 'resume'; at: number }
  | { op: 'revive'; at: number }

const honestIx = fc.nat({ max: HONEST.length - 1 })
const anyIx = fc.nat({ max: WRITERS.length - 1 })
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('sync' as const), to: honestIx, from: anyIx, writer: anyIx, cut: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('announce' as const), to: honestIx, from: anyIx, epoch: fc.oneof(fc.nat({ max: 12 }), fc.constant(MAX_EPOCH), fc.nat({ max: MAX_EPOCH })) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('phantom' as const), to: honestIx, from: honestIx }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('start' as const), at: honestIx }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('resume' as const), at: honestIx }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('revive' as const), at: honestIx }) }
)

/** Forged starts: an epoch, a run of consecutive ones after it, each maybe naming the one below as `previous`. */
function forgedArb (epochs: fc.Arbitrary<number>): fc.Arbitrary<Entry[]> {
  return fc.array(fc.record({ epoch: epochs, run: fc.nat({ max: 3 }), vouch: fc.boolean() }), { maxLength: 6 }).map(specs => specs.flatMap(s => {
    const out: Entry[] = []
    for (let e = s.epoch; e <= Math.min(MAX_EPOCH, s.epoch + s.run); e++) out.push(start(MALLORY, e, 'resume', s.vouch && e > 0 ? { device: HONEST[0] as string, epoch: e - 1 } : undefined))
    return out
  }))
}

/** Feeds, the part of each feed every honest device holds, and what it hears in presence. */
class World {
  readonly feeds = new Map<string, Entry[]>(WRITERS.map(w => [w, []]))
  readonly held = HONEST.map(() => new Map<string, number>(WRITERS.map(w => [w, 0])))
  readonly heard = HONEST.map(() => new Map<string, AgentRef>())
  /** per honest start: what its writer held when it wrote it */
  readonly wroteWith = new Map<string, { writer: string; index: number; held: Map<string, number> }>()

  constructor (forged: Entry[]) { this.feeds.set(MALLORY, forged) }

  view (d: number): Entry[] {
    const held = this.held[d] as Map<string, number>
    return WRITERS.flatMap(w => (this.feeds.get(w) as Entry[]).slice(0, held.get(w)))
  }

  /** What device `from` holds of `writer`'s feed (Mallory holds everything). */
  length (from: number, writer: string): number {
    return from < HONEST.length ? (this.held[from] as Map<string, number>).get(writer) as number : (this.feeds.get(writer) as Entry[]).length
  }

  write (d: number, e: Entry): void {
    const device = HONEST[d] as string
    const feed = this.feeds.get(device) as Entry[]
    this.wroteWith.set(e.id, { writer: device, index: feed.length, held: new Map(this.held[d]) })
    feed.push(e)
    ;(this.held[d] as Map<string, number>).set(device, feed.length)
  }

  /** The agents device d hears of that count there. */
  admitted (d: number, epochs: EpochLedger): AgentRef[] {
    return [...(this.heard[d] as Map<string, AgentRef>).values()].filter(r => epochs.admits(r))
  }

  /** Whether device d holds everything the writer of an honest start held, and the start. */
  covers (d: number, id: string): boolean {
    const w = this.wroteWith.get(id)
    if (w === undefined) return false
    const held = this.held[d] as Map<string, number>
    return (held.get(w.writer) as number) > w.index && [...w.held].every(([writer, n]) => (held.get(writer) as number) >= n)
  }

  /** The agent device d runs: its own latest start. */
  latest (d: number): AgentRef | undefined {
    const feed = this.feeds.get(HONEST[d] as string) as Entry[]
    const e = feed.at(-1)
    return e === undefined || e.kind !== 'agent.started' ? undefined : { device: e.author.device, epoch: e.body.epoch }
  }
}

interface Checks {
  /** after each resume, in the resumer's view */
  resumed?: (before: EpochLedger, after: EpochLedger, mine: AgentRef, over: AgentRef | null) => void
  /** after each step, on every honest device */
  viewed?: (w: World, d: number, view: Entry[]) => void
}

/** Runs the honest devices' ops; the attacker's entries replicate like any feed. */
function simulate (ops: Op[], forged: Entry[], checks: Checks): World {
  const w = new World(forged)
  for (const o of ops) {
    switch (o.op) {
      case 'sync': {
        const writer = WRITERS[o.writer] as string
        if (o.from === o.to) break
        const have = w.length(o.to, writer)
        const there = w.length(o.from, writer)
        if (there > have) (w.held[o.to] as Map<string, number>).set(writer, have + 1 + (o.cut % (there - have)))
        break
      }
      case 'announce': {
        const from = WRITERS[o.from] as string
        const ref = from === MALLORY ? { device: MALLORY, epoch: o.epoch } : w.latest(o.from)
        if (ref !== undefined && o.from !== o.to) (w.heard[o.to] as Map<string, AgentRef>).set(from, ref)
        break
      }
      case 'phantom': {
        if (o.from === o.to) break
        const epochs = new EpochLedger(w.view(o.from))
        const epoch = nextEpoch(topRef([epochs.owner, ...w.admitted(o.from, epochs)]))
        ;(w.heard[o.to] as Map<string, AgentRef>).set(HONEST[o.from] as string, { device: HONEST[o.from] as string, epoch })
        break
      }
      case 'start': {
        // a message posted here, or a cut-short turn continued: the owner's epoch, or 0 for none
        const owner = ownerOf(w.view(o.at))
        if (owner === null) w.write(o.at, start(HONEST[o.at] as string, 0, 'user'))
        else if (owner.device === HONEST[o.at]) w.write(o.at, start(owner.device, owner.epoch, 'restart'))
        break
      }
      case 'resume': {
        const before = new EpochLedger(w.view(o.at))
        const over = topRef([before.owner, ...w.admitted(o.at, before)])
        const mine = { device: HONEST[o.at] as string, epoch: nextEpoch(over) }
        w.write(o.at, start(mine.device, mine.epoch, 'resume', over ?? undefined))
        checks.resumed?.(before, new EpochLedger(w.view(o.at)), mine, over)
        break
      }
      case 'revive': {
        const owner = ownerOf(w.view(o.at))
        if (owner === null || owner.device === HONEST[o.at]) break
        w.write(o.at, start(HONEST[o.at] as string, owner.epoch + 1, 'revival', owner))
        break
      }
    }
    if (checks.viewed !== undefined) for (let d = 0; d < HONEST.length; d++) checks.viewed(w, d, w.view(d))
  }
  return w
}

const STEPS = 40
/** No honest epoch in a run of STEPS ops gets this far: each start claims at most two. */
const BEYOND_REACH = 2 * STEPS + 2
const params = { numRuns: 300 }

/** Every honest start counts on every device that holds what its writer held, and the start. */
function honestStartsCount (w: World, d: number, view: Entry[]): void {
  const epochs = new EpochLedger(view)
  for (const e of view) if (w.covers(d, e.id)) expect(epochs.startOf(e), `start ${JSON.stringify(e.body)} by ${e.author.device.slice(0, 1)} on device ${d}`).not.toBeNull()
}

describe('gapless epochs', () => {
  it('whatever a peer writes or announces, a resume outranks every start and agent that counts where it is taken, and counts there at once', () => {
    const forged = forgedArb(fc.oneof(fc.nat({ max: 12 }), fc.constant(MAX_EPOCH), fc.constant(MAX_EPOCH - 1), fc.nat({ max: MAX_EPOCH })))
    fc.assert(fc.property(fc.array(opArb, { maxLength: STEPS }), forged, (ops, bad) => {
      simulate(ops, bad, {
        resumed: (before, after, mine, over) => {
          if (before.owner !== null) expect(compareRefs(mine, before.owner)).toBeGreaterThan(0)
          if (over !== null) expect(compareRefs(mine, over)).toBeGreaterThan(0)
          expect(after.highest).toBeGreaterThanOrEqual(mine.epoch)
          // it owns the conversation, unless its start closed a gap below starts already there
          // (in transit, or planted by the attacker: one planted entry per resume it outranks)
          const owner = after.owner as AgentRef
          if (compareRefs(owner, mine) !== 0) expect(owner.epoch).toBeGreaterThan(before.highest + 1)
        },
        viewed: honestStartsCount
      })
    }), params)
  })

  it('starts beyond the reach of honest epochs never own the conversation, on any device, at any moment, nor once everything has arrived', () => {
    const forged = forgedArb(fc.oneof(fc.constant(MAX_EPOCH), fc.constant(MAX_EPOCH - 3), fc.integer({ min: BEYOND_REACH, max: MAX_EPOCH }), fc.integer({ min: BEYOND_REACH, max: BEYOND_REACH + 5 })))
    fc.assert(fc.property(fc.array(opArb, { maxLength: STEPS }), forged, (ops, bad) => {
      const w = simulate(ops, bad, {
        viewed: (world, d, view) => {
          const owner = ownerOf(view)
          expect(owner?.device).not.toBe(MALLORY)
          expect(owner).toEqual(ownerOf(view.filter(e => e.author.device !== MALLORY)))
          honestStartsCount(world, d, view)
        }
      })
      // once every feed has arrived everywhere: every honest start counts, and the owner is honest
      const all = [...w.feeds.values()].flat()
      const epochs = new EpochLedger(all)
      for (const e of all) if (e.author.device !== MALLORY) expect(epochs.startOf(e)).not.toBeNull()
      expect(epochs.owner?.device).not.toBe(MALLORY)
    }), params)
  })

  it('an epoch costs entries: the highest that counts is below twice the starts, in any order and any batches', () => {
    const entryArb = fc.record({ device: fc.constantFrom(...WRITERS), epoch: fc.nat({ max: 20 }), vouch: fc.boolean() })
      .map(s => start(s.device, s.epoch, 'resume', s.vouch && s.epoch > 0 ? { device: MALLORY, epoch: s.epoch - 1 } : undefined))
    fc.assert(fc.property(fc.array(entryArb, { maxLength: 30 }), fc.array(fc.nat(), { maxLength: 30 }), (entries, cuts) => {
      const whole = new EpochLedger(entries)
      expect(whole.highest).toBeLessThan(2 * entries.length)
      // the same entries in reverse, in batches
      const reversed = [...entries].reverse()
      const inBatches = new EpochLedger()
      let at = 0
      for (const c of cuts) { inBatches.add(reversed.slice(at, at + c % 5)); at += c % 5 }
      inBatches.add(reversed.slice(at))
      expect(inBatches.highest).toBe(whole.highest)
      expect(inBatches.owner).toEqual(whole.owner)
      for (const e of entries) expect(inBatches.startOf(e)).toEqual(whole.startOf(e))
    }), params)
  })
})
