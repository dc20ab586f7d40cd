// Properties of ConversationDag: the union of feeds delivered in any interleaving converges,
// and every intermediate state is exactly what the delivered entries determine.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { ConversationDag, compareEntries } from '../../../src/shared/conversation/conversation-dag'
import { asWritten, type Entry, type WrittenEntry } from '../../../src/shared/entry/entry'
import { entryId, makeEntry, validateEntry } from '../../../src/main/history/store/entry-codec'
import { compareHlc, tickHlc, type Hlc } from '../../../src/shared/entry/hlc'

const DEVICES = ['a'.repeat(64), 'b'.repeat(64), 'c'.repeat(64)] as const

// ------------------------------------------------------------------ scenarios

interface Step {
  p1: number // first parent: index among earlier entries (mod)
  p2: number | undefined // optional second parent
  device: number
  ts: number // small range: siblings often share a wall time
  kind: 'user' | 'assistant' | 'note' | 'title'
  wall: number // wall clock fed to the device's HLC for a title
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  p1: fc.nat(),
  p2: fc.option(fc.nat(), { nil: undefined }),
  device: fc.nat({ max: 2 }),
  ts: fc.nat({ max: 20 }),
  kind: fc.constantFrom('user', 'assistant', 'note', 'title'),
  wall: fc.nat({ max: 5 })
})

interface Scenario { devices: number; rootDevice: number; steps: Step[]; order: number[]; dups: Array<number | undefined> }

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  devices: fc.integer({ min: 2, max: 3 }),
  rootDevice: fc.nat({ max: 2 }),
  steps: fc.array(stepArb, { maxLength: 24 }),
  order: fc.array(fc.nat(), { maxLength: 30 }),
  dups: fc.array(fc.option(fc.nat(), { nil: undefined, freq: 3 }), { maxLength: 30 })
})

interface World {
  root: Entry
  entries: Entry[] // creation order, root first
  byId: Map<string, Entry>
  ancestors: Map<string, Set<string>> // strict ancestors
  feeds: Entry[][] // per device, in creation order
  titles: Array<{ id: string; value: string; hlc: Hlc }>
}

/** Builds the entries in creation order, with each device's HLC ticking on its titles. */
function build (s: Scenario, hlcFor?: (step: Step, device: string, k: number) => Hlc): World {
  const dev = (i: number): string => DEVICES[i % s.devices] as string
  const rootDevice = s.rootDevice % s.devices
  const root = makeEntry({ kind: 'conversation', parents: [], body: { title: 'root title', nonce: 'n' } }, { conversation: null, device: dev(rootDevice), ts: 0 })
  const entries = [root]
  const feeds: Entry[][] = Array.from({ length: s.devices }, () => [])
  feeds[rootDevice]?.push(root)
  const clocks = new Map<string, Hlc | null>()
  const titles: World['titles'] = []
  s.steps.forEach((st, i) => {
    const k = i + 1
    const first = entries[st.p1 % k] as Entry
    const second = st.p2 === undefined ? undefined : entries[st.p2 % k] as Entry
    const parents = second === undefined || second.id === first.id ? [first.id] : [first.id, second.id]
    const device = dev(st.device)
    const ctx = { conversation: root.id, device, ts: st.ts }
    let e: Entry
    if (st.kind === 'title') {
      const hlc = hlcFor?.(st, device, k) ?? tickHlc(clocks.get(device) ?? null, st.wall, device)
      clocks.set(device, hlc)
      const value = `title #${k}`
      e = makeEntry({ kind: 'meta', parents, body: { key: 'title', value, hlc } }, ctx)
      titles.push({ id: e.id, value, hlc })
    } else {
      // The index in the text keeps ids distinct.
      e = makeEntry(st.kind === 'assistant' ? { kind: 'assistant', parents, body: { text: `#${k}` } } : { kind: st.kind, parents, body: { text: `#${k}` } }, ctx)
    }
    entries.push(e)
    feeds[st.device % s.devices]?.push(e)
  })
  const byId = new Map(entries.map(e => [e.id, e]))
  const ancestors = new Map<string, Set<string>>()
  for (const e of entries) { // creation order: parents are done first
    const set = new Set<string>()
    for (const p of e.parents) { set.add(p); for (const a of ancestors.get(p) ?? []) set.add(a) }
    ancestors.set(e.id, set)
  }
  return { root, entries, byId, ancestors, feeds, titles }
}

/** Interleaves the feeds, each in its own order, as `order` picks among the feeds not yet drained. */
function interleave (feeds: Entry[][], order: number[]): Entry[] {
  const pos = feeds.map(() => 0)
  const out: Entry[] = []
  for (let t = 0; ; t++) {
    const open = feeds.map((f, i) => i).filter(i => (pos[i] as number) < (feeds[i] as Entry[]).length)
    if (open.length === 0) return out
    const f = open[(order[t] ?? 0) % open.length] as number
    out.push((feeds[f] as Entry[])[pos[f] as number] as Entry)
    pos[f] = (pos[f] as number) + 1
  }
}

const ids = (es: Iterable<Entry>): string[] => [...es].map(e => e.id)
const sorted = (xs: Iterable<string>): string[] => [...xs].sort()
const sortedByEntry = (w: World, xs: Iterable<string>): string[] => [...xs].map(id => w.byId.get(id) as Entry).sort(compareEntries).map(e => e.id)

/** The newest title by HLC among those in `joined` whose clock names their author (the others never count). */
function expectedTitle (w: World, joined: Set<string>): { value: string; hlc: Hlc } | undefined {
  let best: { value: string; hlc: Hlc } | undefined
  for (const t of w.titles) {
    if (!joined.has(t.id) || w.byId.get(t.id)?.author.device !== t.hlc.device) continue
    if (best === undefined || compareHlc(t.hlc, best.hlc) > 0) best = { value: t.value, hlc: t.hlc }
  }
  return best
}

/** Everything observable about `dag`, checked against what the delivered set determines. */
function checkState (w: World, dag: ConversationDag, delivered: Set<string>): Set<string> {
  const joined = new Set([...delivered].filter(id => [...(w.ancestors.get(id) as Set<string>)].every(a => delivered.has(a))))
  for (const e of w.entries) expect(dag.isJoined(e.id), `joined iff all ancestors delivered: ${e.id.slice(0, 8)}`).toBe(joined.has(e.id))
  expect(dag.size).toBe(delivered.size)
  expect(dag.joinedSize).toBe(joined.size)
  expect(dag.root?.id).toBe(joined.has(w.root.id) ? w.root.id : undefined)

  const snap = dag.snapshot()
  expect(snap.entries).toEqual(sorted(delivered))
  expect(snap.joined).toEqual(sorted(joined))

  // waiting = delivered but not joined, oldest first; missing = the undelivered parents they name.
  const waiting = [...delivered].filter(id => !joined.has(id))
  expect(ids(dag.waiting())).toEqual(sortedByEntry(w, waiting))
  const missing = new Set(waiting.flatMap(id => (w.byId.get(id) as Entry).parents).filter(p => !delivered.has(p)))
  expect(dag.missing()).toEqual(sorted(missing))

  // children and heads follow the joined part of the DAG.
  const kids = new Map<string, string[]>()
  for (const id of joined) for (const p of (w.byId.get(id) as Entry).parents) kids.set(p, [...(kids.get(p) ?? []), id])
  for (const id of joined) expect(ids(dag.children(id))).toEqual(sortedByEntry(w, kids.get(id) ?? []))
  const heads = [...joined].filter(id => !kids.has(id))
  expect(ids(dag.heads())).toEqual(sortedByEntry(w, heads))
  expect(snap.heads).toEqual(sorted(heads))

  // pathTo: root → id along first parents; branch: that, then newest children down to a head.
  const headSet = new Set(heads)
  for (const id of joined) {
    const path = dag.pathTo(id)
    expect(path[0]?.id).toBe(w.root.id)
    expect(path[path.length - 1]?.id).toBe(id)
    for (let i = 1; i < path.length; i++) expect((path[i] as Entry).parents[0]).toBe((path[i - 1] as Entry).id)
    const branch = dag.branch(id)
    expect(ids(branch.slice(0, path.length))).toEqual(ids(path))
    expect(headSet.has((branch[branch.length - 1] as Entry).id)).toBe(true)
    for (let i = path.length; i < branch.length; i++) {
      const siblings = dag.children((branch[i - 1] as Entry).id)
      expect((branch[i] as Entry).id).toBe(siblings[siblings.length - 1]?.id)
    }
  }
  for (const id of waiting) expect(dag.pathTo(id)).toEqual([])
  const newestHead = dag.heads().at(-1)
  expect(dag.branch().at(-1)?.id).toBe(newestHead?.id)
  expect(dag.branch(waiting[0])).toEqual(dag.branch())

  // Last writer wins on the title, by HLC, among joined entries only.
  const title = expectedTitle(w, joined)
  expect(dag.meta('title')).toEqual(title)
  expect(dag.title()).toBe(title?.value ?? (joined.has(w.root.id) || delivered.has(w.root.id) ? 'root title' : ''))
  return joined
}

function reference (w: World): ConversationDag {
  return new ConversationDag(w.root.id, w.entries)
}

// ------------------------------------------------------------------ properties

describe('ConversationDag under any delivery of the feeds', () => {
  it('joins exactly what is complete at every step and converges to the creation-order DAG', () => {
    const exercised = { waited: 0, cascaded: 0, twoParents: 0 }
    fc.assert(fc.property(scenarioArb, s => {
      const w = build(s)
      const dag = new ConversationDag(w.root.id)
      const delivered = new Set<string>()
      let joined = new Set<string>()
      const returned: string[] = []
      const sequence = interleave(w.feeds, s.order)
      expect(sequence.length).toBe(w.entries.length)
      sequence.forEach((e, t) => {
        const out = dag.add(e)
        delivered.add(e.id)
        // add returns the newly joined entries, parents before children.
        const before = joined
        const seen = new Set(before)
        for (const j of out) {
          for (const p of j.parents) expect(seen.has(p), 'parent returned before child').toBe(true)
          seen.add(j.id)
        }
        returned.push(...ids(out))
        if (out.length === 0) exercised.waited++
        if (out.length > 1) exercised.cascaded++
        joined = checkState(w, dag, delivered)
        expect(sorted(ids(out))).toEqual(sorted([...joined].filter(id => !before.has(id))))
        // Delivering again changes nothing.
        const dup = s.dups[t]
        if (dup !== undefined) {
          const again = sequence[dup % (t + 1)] as Entry
          const snap = dag.snapshot()
          expect(dag.add(again)).toEqual([])
          expect(dag.snapshot()).toEqual(snap)
        }
      })
      expect(sorted(returned)).toEqual(sorted(ids(w.entries))) // each exactly once
      expect(dag.snapshot()).toEqual(reference(w).snapshot())
      expect(dag.waiting()).toEqual([])
      expect(dag.missing()).toEqual([])
      expect(dag.title()).toBe(reference(w).title())
      if (w.entries.some(e => e.parents.length > 1)) exercised.twoParents++
    }), { numRuns: 150 })
    // The generator does produce out-of-order arrivals, cascades and merges.
    expect(exercised.waited).toBeGreaterThan(0)
    expect(exercised.cascaded).toBeGreaterThan(0)
    expect(exercised.twoParents).toBeGreaterThan(0)
  })

  it('union is commutative, associative and idempotent, and equals the DAG of all the entries', () => {
    // Three overlapping subsets, each added in its own order, so some hold waiting entries.
    const partArb = fc.array(fc.nat(), { maxLength: 30 })
    fc.assert(fc.property(scenarioArb, partArb, partArb, partArb, (s, pa, pb, pc) => {
      const w = build(s)
      const pick = (p: number[]): ConversationDag => new ConversationDag(w.root.id, p.map(i => w.entries[i % w.entries.length] as Entry))
      const [a, b, c] = [pick(pa), pick(pb), pick(pc)]
      const U = ConversationDag.union
      const state = (d: ConversationDag): unknown => ({ snap: d.snapshot(), waiting: ids(d.waiting()), missing: d.missing(), title: d.meta('title') })
      expect(state(U(a, b))).toEqual(state(U(b, a)))
      expect(state(U(U(a, b), c))).toEqual(state(U(a, U(b, c))))
      expect(state(U(a, a))).toEqual(state(a))
      expect(state(U(U(a, b), b))).toEqual(state(U(a, b)))
      const all = new ConversationDag(w.root.id, [...a.entries(), ...b.entries(), ...c.entries()])
      expect(state(U(U(a, b), c))).toEqual(state(all))
      // Together with the rest, any union becomes the whole DAG.
      expect(U(U(a, b), reference(w)).snapshot()).toEqual(reference(w).snapshot())
    }), { numRuns: 150 })
  })

  it('breaks a tie between equal HLCs the same way in either order (regression)', () => {
    const A = DEVICES[0]
    const root = makeEntry({ kind: 'conversation', parents: [], body: { title: 't', nonce: 'n' } }, { conversation: null, device: A, ts: 0 })
    const hlc = { wall: 5, counter: 0, device: A }
    const [x, y] = ['one', 'two'].map(value => makeEntry({ kind: 'meta', parents: [root.id], body: { key: 'title', value, hlc } }, { conversation: root.id, device: A, ts: 1 })) as [Entry, Entry]
    const xy = new ConversationDag(root.id, [root, x, y])
    const yx = new ConversationDag(root.id, [root, y, x])
    expect(xy.title()).toBe(yx.title())
    expect(xy.meta('title')).toEqual(yx.meta('title'))
  })

  it('picks the same title whatever the delivery order, even when HLCs tie', () => {
    // HLCs from a tiny domain, not tied to the author: equal clocks with different values happen.
    const tinyHlc = fc.record({ wall: fc.nat({ max: 1 }), counter: fc.nat({ max: 1 }), device: fc.nat({ max: 1 }) })
    fc.assert(fc.property(scenarioArb, fc.array(tinyHlc, { maxLength: 24 }), fc.array(fc.nat(), { maxLength: 30 }), (s, hlcs, order2) => {
      const w = build(s, (_st, _device, k) => {
        const h = hlcs[k - 1] ?? { wall: 0, counter: 0, device: 0 }
        return { wall: h.wall, counter: h.counter, device: DEVICES[h.device] as string }
      })
      const one = new ConversationDag(w.root.id, interleave(w.feeds, s.order))
      const two = new ConversationDag(w.root.id, interleave(w.feeds, order2))
      const three = new ConversationDag(w.root.id, [...w.entries].reverse())
      const title = reference(w).meta('title')
      expect(title?.hlc).toEqual(expectedTitle(w, new Set(ids(w.entries)))?.hlc)
      for (const d of [one, two, three]) {
        expect(d.meta('title')).toEqual(title)
        expect(d.title()).toBe(reference(w).title())
      }
    }), { numRuns: 200 })
  })
})

// ------------------------------------------------------------------ entries from a newer version

/** What a newer Arbor may write at a step; 'tampered' is an envelope failure, which every version refuses. */
const FUTURES = ['plain', 'new fields', 'new kind', 'new value', 'tampered'] as const

interface FutureStep { p1: number; p2: number | undefined; device: number; ts: number; future: typeof FUTURES[number]; kind: number; extra: unknown }

const futureStepArb: fc.Arbitrary<FutureStep> = fc.record({
  p1: fc.nat(),
  p2: fc.option(fc.nat(), { nil: undefined }),
  device: fc.nat({ max: 2 }),
  ts: fc.nat({ max: 20 }),
  future: fc.constantFrom(...FUTURES),
  kind: fc.nat(),
  // as a newer version writes it: JSON, where -0 cannot be (fc.jsonValue may give -0, which the wire carries as 0)
  extra: fc.jsonValue({ maxDepth: 2 }).map(v => JSON.parse(JSON.stringify(v)) as unknown)
})

const NEW_KINDS = ['checkpoint', 'approval.request', 'tool.progress', 'user.image', 'unknown'] as const

/**
 * Writes the steps as a newer Arbor would: entries as written (WrittenEntry), each in its
 * device's feed, ids made right except for tampered ones.
 */
function buildFuture (steps: FutureStep[]): { root: Entry; written: WrittenEntry[]; tampered: Set<string>; feeds: WrittenEntry[][] } {
  const root = makeEntry({ kind: 'conversation', parents: [], body: { title: 'root title', nonce: 'n' } }, { conversation: null, device: DEVICES[0], ts: 0 })
  const written: WrittenEntry[] = [root]
  const feeds: WrittenEntry[][] = [[root], [], []]
  const tampered = new Set<string>()
  steps.forEach((st, i) => {
    const k = i + 1
    const first = written[st.p1 % k] as WrittenEntry
    const second = st.p2 === undefined ? undefined : written[st.p2 % k] as WrittenEntry
    const parents = second === undefined || second.id === first.id ? [first.id] : [first.id, second.id]
    const device = DEVICES[st.device] as string
    let kind: string = ['user', 'assistant', 'note', 'meta'][st.kind % 4] as string
    let body: Record<string, unknown> = kind === 'meta' ? { key: 'title', value: `title #${k}`, hlc: { wall: k, counter: 0, device } } : { text: `#${k}` }
    if (st.future === 'new fields') body = { ...body, [`x-${k}`]: st.extra }
    if (st.future === 'new kind') { kind = NEW_KINDS[st.kind % NEW_KINDS.length] as string; body = { step: k, extra: st.extra } }
    if (st.future === 'new value') { kind = st.kind % 2 === 0 ? 'agent.stopped' : 'tool.result'; body = { epoch: k, reason: 'compacted', callId: `c${k}`, status: 'paused', output: '' } }
    const e = { v: 1 as const, conversation: root.id, parents, author: { device }, ts: st.ts, kind, body }
    const entry: WrittenEntry = { ...e, id: entryId(e) }
    if (st.future === 'tampered') { entry.body = { text: `changed #${k}` }; tampered.add(entry.id) }
    written.push(entry)
    feeds[st.device]?.push(entry)
  })
  return { root, written, tampered, feeds }
}

describe('entries from a newer version in any DAG', () => {
  it('never change which entries join: this version joins what one that understands everything joins, and keeps every field', () => {
    const seen = new Set<string>()
    fc.assert(fc.property(fc.array(futureStepArb, { maxLength: 24 }), fc.array(fc.nat(), { maxLength: 30 }), (steps, order) => {
      const w = buildFuture(steps)
      // as this version reads them off the wire, and as a version that understands every kind would hold them
      const here = new ConversationDag(w.root.id)
      const there = new ConversationDag(w.root.id)
      for (const raw of interleave(w.feeds as Entry[][], order) as WrittenEntry[]) {
        const v = validateEntry(JSON.parse(JSON.stringify(raw)), raw.author.device)
        expect(v.ok, `kept iff its envelope is valid: ${raw.kind}`).toBe(!w.tampered.has(raw.id))
        if (v.ok) {
          here.add(v.entry)
          seen.add(v.entry.kind === 'unknown' ? (v.entry.body.problem === undefined ? 'new kind' : 'new value') : 'known')
        }
        if (!w.tampered.has(raw.id)) there.add(raw as Entry)
        const [a, b] = [here.snapshot(), there.snapshot()]
        expect(a).toEqual(b)
        expect(ids(here.waiting())).toEqual(ids(there.waiting()))
        expect(here.missing()).toEqual(there.missing())
        expect(here.title()).toBe(there.title())
      }
      for (const e of here.entries()) {
        const raw = there.get(e.id) as unknown as WrittenEntry
        // a kind it knows is kept as written, new fields and all; any other is kept whole inside
        expect(asWritten(e)).toEqual(raw)
        if (e.kind !== 'unknown') expect(e).toEqual(raw)
      }
    }), { numRuns: 200 })
    expect([...seen].sort()).toEqual(['known', 'new kind', 'new value'])
  })
})
