// Properties of the pure placement decisions (DESIGN.md, "Placement", "One agent per side"):
// whatever the views, devices that see the same things agree on one reviver and one winner,
// an outranked agent always stops, nothing starts for nobody or revives a live owner, and
// devices ahead in a revival order that never revive delay the revival, never cancel it.
// A failure prints fast-check's seed and path; replay with { seed, path }.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { ConversationDag } from '../../../src/shared/conversation/conversation-dag'
import type { Entry, EntryDraft } from '../../../src/shared/entry/entry'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import { compareRefs, decide, EpochLedger, openWork, ownerOf, REVIVAL_TURN_MS, revivalOrder, reviverOf, runModelAt, topRef, workAt, type AgentRef, type PlacementView } from '../../../src/main/runtime/placement/placement'

const DEVICES = ['1'.repeat(64), '2'.repeat(64), '3'.repeat(64), '4'.repeat(64)]
const CONV = 'c'.repeat(64)
const deviceArb = fc.constantFrom(...DEVICES)
const refArb: fc.Arbitrary<AgentRef> = fc.record({ device: deviceArb, epoch: fc.nat({ max: 5 }) })

const params = { numRuns: 300 }

describe('ordering agents', () => {
  it('topRef is the maximum under compareRefs whatever the order, and compareRefs is a total order', () => {
    fc.assert(fc.property(fc.array(refArb, { minLength: 1, maxLength: 8 }), fc.nat(), (refs, rot) => {
      const rotated = [...refs.slice(rot % refs.length), ...refs.slice(0, rot % refs.length)]
      const top = topRef(refs) as AgentRef
      expect(compareRefs(topRef(rotated) as AgentRef, top)).toBe(0)
      for (const r of refs) {
        expect(compareRefs(top, r)).toBeGreaterThanOrEqual(0)
        expect(Math.sign(compareRefs(r, top)) + Math.sign(compareRefs(top, r))).toBe(0)
      }
    }), params)
  })

  it('ownerOf is the highest agent.started among epochs that count (gapless from 0), whatever the arrival order', () => {
    fc.assert(fc.property(fc.array(refArb, { minLength: 0, maxLength: 8 }), fc.nat(), (refs, seed) => {
      const root = makeEntry({ kind: 'conversation', parents: [], body: { title: 't', nonce: 'n' } }, { conversation: null, device: DEVICES[0] as string, ts: 0 })
      const started = refs.map((r, i) => makeEntry({ kind: 'agent.started', parents: [root.id], body: { epoch: r.epoch, reason: 'user' } }, { conversation: root.id, device: r.device, ts: i + 1 }))
      const shuffled = [...started].sort((a, b) => ((a.id.charCodeAt(seed % 64) ^ seed) - (b.id.charCodeAt(seed % 64) ^ seed)))
      // the epochs that count: 0, 1, ... for as long as each is claimed
      const claimed = new Set(refs.map(r => r.epoch))
      let k = -1
      while (claimed.has(k + 1)) k++
      const want = topRef(refs.filter(r => r.epoch <= k))
      expect(ownerOf([root, ...shuffled])).toEqual(want === null ? null : { device: want.device, epoch: want.epoch })
    }), params)
  })

  it('reviverOf picks one of the candidates, the same one whatever their order', () => {
    fc.assert(fc.property(fc.uniqueArray(deviceArb, { minLength: 1, maxLength: 4 }), fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 }), (cands, conv) => {
      const pick = reviverOf(conv, cands)
      expect(cands).toContain(pick)
      expect(reviverOf(conv, [...cands].reverse())).toBe(pick)
    }), params)
  })

  it('revivalOrder ranks every candidate once, the same order whatever their order, first the reviver', () => {
    fc.assert(fc.property(fc.array(deviceArb, { minLength: 1, maxLength: 8 }), fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 }), (cands, conv) => {
      const order = revivalOrder(conv, cands)
      expect([...order].sort()).toEqual([...new Set(cands)].sort())
      expect(revivalOrder(conv, [...cands].reverse())).toEqual(order)
      expect(order[0]).toBe(reviverOf(conv, cands))
    }), params)
  })
})

// ------------------------------------------------------------------ decide

interface World {
  live: string[]        // devices in one connected component, all seeing the same
  owner: AgentRef | null
  running: Map<string, number> // device → epoch of an agent running there
  autoRevival: boolean
  dead: Set<string>     // devices considered down by everyone in the component
  hasWork: boolean
  /** the message arrived while this component watched (not an old unanswered one) */
  fresh: boolean
}

const worldArb: fc.Arbitrary<World> = fc.record({
  live: fc.uniqueArray(deviceArb, { minLength: 1, maxLength: 4 }),
  owner: fc.option(refArb, { nil: null }),
  running: fc.array(fc.tuple(deviceArb, fc.nat({ max: 5 })), { maxLength: 4 }).map(a => new Map(a)),
  autoRevival: fc.boolean(),
  dead: fc.uniqueArray(deviceArb, { maxLength: 4 }).map(a => new Set(a)),
  hasWork: fc.boolean(),
  fresh: fc.boolean()
})

const root = makeEntry({ kind: 'conversation', parents: [], body: { title: 't', nonce: 'n' } }, { conversation: null, device: DEVICES[0] as string, ts: 0 })
// written by a device outside the component (a peer's message, replicated)
const message = makeEntry({ kind: 'user', parents: [root.id], body: { text: 'hi' } }, { conversation: root.id, device: '5'.repeat(64), ts: 1 })

/**
 * The view of device `self` in world w, `elapsed` ms after it first took the dead devices for
 * dead (at 0): live devices are never dead to each other.
 */
function viewOf (w: World, self: string, elapsed = 0): PlacementView {
  const live = new Set(w.live)
  return {
    self,
    conversation: CONV,
    owner: w.owner,
    announced: [...w.running].filter(([d]) => d !== self && live.has(d)).map(([device, epoch]) => ({ device, epoch })),
    running: w.running.has(self) ? { device: self, epoch: w.running.get(self) as number } : null,
    autoRevival: w.autoRevival,
    live: w.live.filter(d => d !== self),
    downSince: d => !live.has(d) && w.dead.has(d) ? 0 : null,
    now: elapsed,
    work: w.hasWork ? [{ kind: 'message', leaf: message, message }] : [],
    fresh: new Set(w.fresh ? [message.id] : [])
  }
}

describe('decide', () => {
  it('an agent outranked by any agent it can see stops, naming the highest; the highest never stops', () => {
    fc.assert(fc.property(worldArb, w => {
      const running = [...w.running].filter(([d]) => w.live.includes(d)).map(([device, epoch]) => ({ device, epoch }))
      const top = topRef([w.owner, ...running])
      for (const self of w.live) {
        const a = decide(viewOf(w, self))
        const mine = w.running.get(self)
        if (mine === undefined) { expect(a.do).not.toBe('stop'); continue }
        const me = { device: self, epoch: mine }
        if (top !== null && compareRefs(top, me) > 0) expect(a).toEqual({ do: 'stop', by: top })
        else expect(a).toEqual({ do: 'nothing' })
      }
      // healing ends with exactly the top agent still running in the component
      const stay = running.filter(r => decide(viewOf(w, r.device)).do !== 'stop')
      if (running.length > 0) {
        expect(stay.length).toBeLessThanOrEqual(1)
        if (w.owner === null || compareRefs(topRef(running) as AgentRef, w.owner) >= 0) expect(stay).toHaveLength(1)
      }
    }), params)
  })

  it('at most one device of a component starts or revives an agent, and only when there is work', () => {
    fc.assert(fc.property(worldArb, w => {
      const acting = w.live.filter(self => { const d = decide(viewOf(w, self)).do; return d === 'start' || d === 'revive' })
      expect(acting.length).toBeLessThanOrEqual(1)
      // an old unanswered message (not fresh) calls for nobody
      if (!w.hasWork || !w.fresh) expect(acting).toEqual([])
    }), params)
  })

  it('nothing starts for a conversation no agent has run in (its sender starts it)', () => {
    fc.assert(fc.property(worldArb, w => {
      const world = { ...w, owner: null, running: new Map<string, number>() }
      for (const self of world.live) expect(decide(viewOf(world, self))).toEqual({ do: 'nothing' })
    }), params)
  })

  it('no agent yet: its sender starts it (after a crash too); a dead sender\'s opt-in message is revived at epoch 0, in turns', () => {
    fc.assert(fc.property(worldArb, fc.constantFrom<'self' | 'live' | 'dead'>('self', 'live', 'dead'), fc.nat({ max: 4 * REVIVAL_TURN_MS }), (w, who, elapsed) => {
      const world = { ...w, owner: null, running: new Map<string, number>() }
      const [first] = world.live
      const sender = who === 'self' ? first as string : who === 'live' ? world.live[1] : DEVICES.find(d => !world.live.includes(d))
      if (sender === undefined) return
      const dead = who === 'dead' ? new Set([...world.dead, sender]) : new Set([...world.dead].filter(d => d !== sender))
      const msg = makeEntry({ kind: 'user', parents: [root.id], body: { text: 'hi' } }, { conversation: root.id, device: sender, ts: 1 })
      const view = (self: string): PlacementView => ({ ...viewOf({ ...world, dead }, self, elapsed), work: world.hasWork ? [{ kind: 'message', leaf: msg, message: msg }] : [], fresh: new Set(world.fresh ? [msg.id] : []) })
      const order = revivalOrder(CONV, world.live)
      for (const self of world.live) {
        const a = decide(view(self))
        if (!world.hasWork || !world.fresh) { expect(a).toEqual({ do: 'nothing' }); continue }
        if (self === sender) { expect(a).toEqual({ do: 'start', leaf: msg.id, epoch: 0, reason: 'user' }); continue }
        if (who !== 'dead' || !world.autoRevival) { expect(a).toEqual({ do: 'nothing' }); continue }
        const turn = order.indexOf(self)
        expect(a).toEqual(elapsed >= turn * REVIVAL_TURN_MS ? { do: 'revive', leaf: msg.id, epoch: 0, previous: null, poster: sender } : { do: 'nothing' })
      }
    }), params)
  })

  it('revival happens only for an opt-in conversation whose owner is down, with a higher epoch, by the rendezvous pick', () => {
    fc.assert(fc.property(worldArb, w => {
      const world = { ...w, running: new Map<string, number>() }
      for (const self of world.live) {
        const a = decide(viewOf(world, self))
        if (a.do !== 'revive') continue
        const owner = world.owner as AgentRef
        expect(world.autoRevival).toBe(true)
        expect(owner.device).not.toBe(self)
        expect(world.dead.has(owner.device) && !world.live.includes(owner.device)).toBe(true)
        expect(a.epoch).toBe(owner.epoch + 1)
        expect(a.previous).toEqual(owner)
        expect(reviverOf(CONV, world.live)).toBe(self)
      }
      // and when it should happen, it does (no live device waits on a dead one)
      if (world.autoRevival && world.hasWork && world.fresh && world.owner !== null && !world.live.includes(world.owner.device) && world.dead.has(world.owner.device)) {
        expect(world.live.filter(self => decide(viewOf(world, self)).do === 'revive')).toHaveLength(1)
      }
    }), params)
  })

  it('the owner answers a peer\'s message; a live owner is never revived', () => {
    fc.assert(fc.property(worldArb, w => {
      const owner = w.owner
      if (owner === null || !w.live.includes(owner.device)) return
      const world = { ...w, owner, running: new Map<string, number>(), hasWork: true, fresh: true }
      for (const self of world.live) {
        const a = decide(viewOf(world, self))
        if (self === owner.device) expect(a).toEqual({ do: 'start', leaf: message.id, epoch: owner.epoch, reason: 'user' })
        else expect(a).toEqual({ do: 'nothing' })
        // its own message was started by whoever sent it (not fresh): never a second time
        const mineToo = { ...message, id: 'f'.repeat(64), author: { device: self } }
        const own = { ...viewOf(world, self), work: [{ kind: 'message' as const, leaf: mineToo, message: mineToo }] }
        if (self === owner.device) expect(decide(own)).toEqual({ do: 'nothing' })
      }
    }), params)
  })
})

// ------------------------------------------------------------------ the revival order

describe('revival in turns', () => {
  const convArb = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 })
  /** The owner is dead; live devices see each other; an unanswered fresh message waits; some live devices never act. */
  const scenarioArb = fc.record({
    conv: convArb,
    live: fc.uniqueArray(fc.constantFrom(...DEVICES.slice(1)), { minLength: 1, maxLength: 3 }),
    liars: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
    // when each live device first took the owner for dead, within a few seconds of the others
    seenAt: fc.array(fc.nat({ max: 3000 }), { minLength: 3, maxLength: 3 }),
    epoch: fc.nat({ max: 5 })
  })

  it('some honest device revives within (liars ahead of it + 1) turns, and it is the first honest one in the order', () => {
    fc.assert(fc.property(scenarioArb, s => {
      const liar = new Set(s.live.filter((_, i) => s.liars[i] === true))
      fc.pre(liar.size < s.live.length)
      const owner = { device: DEVICES[0] as string, epoch: s.epoch }
      const seen = new Map(s.live.map((d, i) => [d, s.seenAt[i] as number]))
      const w: World = { live: s.live, owner, running: new Map(), autoRevival: true, dead: new Set([owner.device]), hasWork: true, fresh: true }
      const order = revivalOrder(s.conv, s.live)
      const first = order.find(d => !liar.has(d)) as string
      const ahead = order.indexOf(first)
      const viewAt = (self: string, t: number): PlacementView => ({ ...viewOf(w, self), conversation: s.conv, downSince: d => d === owner.device ? seen.get(self) as number : null, now: t })
      // until somebody revives, nobody runs an agent: time goes on in steps of 250 ms
      let revived: { device: string; at: number } | null = null
      const earliest = Math.min(...seen.values())
      for (let t = earliest; revived === null && t <= earliest + (s.live.length + 1) * REVIVAL_TURN_MS; t += 250) {
        const acting = s.live.filter(self => !liar.has(self) && decide(viewAt(self, t)).do === 'revive')
        expect(acting.length, `two devices revive at ${t} ms`).toBeLessThanOrEqual(1)
        if (acting.length === 1) revived = { device: acting[0] as string, at: t }
      }
      expect(revived?.device).toBe(first)
      expect((revived?.at ?? Infinity) - earliest).toBeLessThan((ahead + 1) * REVIVAL_TURN_MS)
      expect(decide(viewAt(first, revived?.at ?? 0))).toEqual({ do: 'revive', leaf: message.id, epoch: s.epoch + 1, previous: owner })
    }), params)
  })

  it('the first in the order revives at once; a later one never before its turn', () => {
    fc.assert(fc.property(scenarioArb, fc.nat({ max: 4 * REVIVAL_TURN_MS }), (s, elapsed) => {
      const owner = { device: DEVICES[0] as string, epoch: s.epoch }
      const w: World = { live: s.live, owner, running: new Map(), autoRevival: true, dead: new Set([owner.device]), hasWork: true, fresh: true }
      const order = revivalOrder(s.conv, s.live)
      for (const [rank, self] of order.entries()) {
        const a = decide({ ...viewOf(w, self, elapsed), conversation: s.conv })
        expect(a.do).toBe(elapsed >= rank * REVIVAL_TURN_MS ? 'revive' : 'nothing')
      }
    }), params)
  })

  it('the same view gives the same decision, whatever the order of the live devices', () => {
    fc.assert(fc.property(worldArb, fc.nat({ max: 4 * REVIVAL_TURN_MS }), (w, elapsed) => {
      for (const self of w.live) {
        const v = viewOf(w, self, elapsed)
        expect(decide(v)).toEqual(decide(v))
        expect(decide({ ...v, live: [...v.live].reverse() })).toEqual(decide(v))
      }
    }), params)
  })
})

// ------------------------------------------------------------------ open work

describe('openWork', () => {
  const mk = (draft: EntryDraft, device: string, ts: number): Entry => makeEntry(draft, { conversation: root.id, device, ts })

  it('finds unanswered messages and turns cut short, and nothing on finished branches', () => {
    const [a, b] = DEVICES as [string, string]
    const u1 = mk({ kind: 'user', parents: [root.id], body: { text: 'one' } }, a, 1)
    const s1 = mk({ kind: 'agent.started', parents: [u1.id], body: { epoch: 1, reason: 'user' } }, b, 2)
    const r1 = mk({ kind: 'assistant', parents: [s1.id], body: { text: 'partial', toolCalls: [{ id: 'c1', name: 'bash', args: {} }] } }, b, 3)
    const i1 = mk({ kind: 'tool.intent', parents: [r1.id], body: { callId: 'c1', tool: 'bash', args: {}, effect: 'external', idemKey: 'k' } }, b, 4)
    const u2 = mk({ kind: 'user', parents: [root.id], body: { text: 'two' } }, a, 5)
    const n2 = mk({ kind: 'note', parents: [u2.id], body: { text: 'a note does not answer' } }, a, 6)
    const u3 = mk({ kind: 'user', parents: [root.id], body: { text: 'three' } }, a, 7)
    const s3 = mk({ kind: 'agent.started', parents: [u3.id], body: { epoch: 0, reason: 'user' } }, a, 8)
    const e3 = mk({ kind: 'agent.stopped', parents: [s3.id], body: { epoch: 0, reason: 'done' } }, a, 9)
    const dag = new ConversationDag(root.id, [root, u1, s1, r1, i1, u2, n2, u3, s3, e3])
    const work = openWork(dag)
    expect(work).toHaveLength(2)
    expect(work).toContainEqual({ kind: 'turn', leaf: i1, agent: { device: b, epoch: 1 } })
    expect(work).toContainEqual({ kind: 'message', leaf: n2, message: u2 })
    expect(workAt(dag, e3)).toBeNull()
  })

  it('a start beyond a gap in the epochs is read like a note until the gap fills: it neither answers a message nor ends a turn', () => {
    const [a, b] = DEVICES as [string, string]
    const u1 = mk({ kind: 'user', parents: [root.id], body: { text: 'one' } }, a, 1)
    const s0 = mk({ kind: 'agent.started', parents: [u1.id], body: { epoch: 0, reason: 'user' } }, a, 2)
    const r0 = mk({ kind: 'assistant', parents: [s0.id], body: { text: 'partial', toolCalls: [{ id: 'c1', name: 'bash', args: {} }] } }, a, 3)
    const far = mk({ kind: 'agent.started', parents: [r0.id], body: { epoch: 3, reason: 'resume', previous: { device: a, epoch: 2 } } }, b, 4)
    const u2 = mk({ kind: 'user', parents: [root.id], body: { text: 'two' } }, a, 5)
    const planted = mk({ kind: 'agent.started', parents: [u2.id], body: { epoch: 5, reason: 'user' } }, b, 6)
    const gapped = new ConversationDag(root.id, [root, u1, s0, r0, far, u2, planted])
    expect(ownerOf(gapped.entries())).toEqual({ device: a, epoch: 0 })
    expect(openWork(gapped)).toEqual(expect.arrayContaining([{ kind: 'turn', leaf: far, agent: { device: a, epoch: 0 } }, { kind: 'message', leaf: planted, message: u2 }]))
    // the start that fills the gap arrives: epoch 3 counts (its previous claims 2), 5 still does not
    const fill = mk({ kind: 'agent.started', parents: [u1.id], body: { epoch: 1, reason: 'resume', previous: { device: a, epoch: 0 } } }, DEVICES[2] as string, 7)
    const filled = new ConversationDag(root.id, [root, u1, s0, r0, far, u2, planted, fill])
    expect(ownerOf(filled.entries())).toEqual({ device: b, epoch: 3 })
    expect(workAt(filled, far)).toEqual({ kind: 'turn', leaf: far, agent: { device: b, epoch: 3 } })
    expect(workAt(filled, planted)).toEqual({ kind: 'message', leaf: planted, message: u2 })
  })
})

describe('runModelAt', () => {
  const [a, b] = DEVICES as [string, string]
  const mk = (draft: EntryDraft, device: string, ts: number): Entry => makeEntry(draft, { conversation: root.id, device, ts })

  it('gives the model of the cut-short turn\'s start when that start is this device\'s own, else nothing', () => {
    const u1 = mk({ kind: 'user', parents: [root.id], body: { text: 'one' } }, a, 1)
    const own = mk({ kind: 'agent.started', parents: [u1.id], body: { epoch: 0, reason: 'user', model: 'other-model' } }, a, 2)
    const r1 = mk({ kind: 'assistant', parents: [own.id], body: { text: 'partial' } }, a, 3)
    const note = mk({ kind: 'note', parents: [r1.id], body: { text: 'a note' } }, b, 4)
    const dag = new ConversationDag(root.id, [root, u1, own, r1, note])
    expect(runModelAt(dag, note, a)).toBe('other-model')
    expect(runModelAt(dag, own, a)).toBe('other-model')
    // the same start read by another device: it chooses nothing there
    expect(runModelAt(dag, note, b)).toBeUndefined()
    // a start without a model, and a branch whose turn ended
    const plain = mk({ kind: 'agent.started', parents: [u1.id], body: { epoch: 0, reason: 'user' } }, a, 5)
    const stop = mk({ kind: 'agent.stopped', parents: [r1.id], body: { epoch: 0, reason: 'done' } }, a, 6)
    const more = new ConversationDag(root.id, [root, u1, own, r1, note, plain, stop])
    expect(runModelAt(more, plain, a)).toBeUndefined()
    expect(runModelAt(more, stop, a)).toBeUndefined()
    expect(runModelAt(more, u1, a)).toBeUndefined()
  })
})

// A peer writes a setting (or a note) under the tip it sees while an agent works; the agent goes
// on from its own tip. Such an entry beside a branch that went on waits for nobody.
describe('openWork and entries beside a branch', () => {
  const [a, b] = DEVICES as [string, string]
  const mk = (draft: EntryDraft, device: string, ts: number): Entry => makeEntry(draft, { conversation: root.id, device, ts })
  const setting = (parent: Entry, ts: number): Entry => mk({ kind: 'meta', parents: [parent.id], body: { key: 'autoRevival', value: false, hlc: { wall: ts, counter: 0, device: a } } }, a, ts)

  it('a setting under a step the turn went on from is no turn of its own; the turn is cut short only where it is', () => {
    const u1 = mk({ kind: 'user', parents: [root.id], body: { text: 'one' } }, a, 1)
    const s1 = mk({ kind: 'agent.started', parents: [u1.id], body: { epoch: 0, reason: 'user' } }, b, 2)
    const r1 = mk({ kind: 'assistant', parents: [s1.id], body: { text: 'working' } }, b, 3)
    const m = setting(s1, 4)
    const stopped = mk({ kind: 'agent.stopped', parents: [r1.id], body: { epoch: 0, reason: 'done' } }, b, 5)
    expect(openWork(new ConversationDag(root.id, [root, u1, s1, r1, m, stopped]))).toEqual([])
    // the agent's own branch cut short: one turn, at its tip
    expect(openWork(new ConversationDag(root.id, [root, u1, s1, r1, m]))).toEqual([{ kind: 'turn', leaf: r1, agent: { device: b, epoch: 0 } }])
    // the agent died before going on: the turn waits at the setting
    expect(openWork(new ConversationDag(root.id, [root, u1, s1, m]))).toEqual([{ kind: 'turn', leaf: m, agent: { device: b, epoch: 0 } }])
  })

  // Random trees of messages, starts, replies, stops, settings and notes.
  const kinds = ['user', 'agent.started', 'assistant', 'agent.stopped', 'meta', 'note'] as const
  const treeArb = fc.array(fc.record({ kind: fc.constantFrom(...kinds), parent: fc.nat(), epoch: fc.nat({ max: 2 }) }), { minLength: 1, maxLength: 25 })
  const build = (steps: Array<{ kind: typeof kinds[number]; parent: number; epoch: number }>): Entry[] => {
    const out: Entry[] = [root]
    for (const [i, s] of steps.entries()) {
      const parent = out[s.parent % out.length] as Entry
      const ts = i + 1
      const bodies = {
        user: { text: `m${i}` },
        'agent.started': s.epoch === 0 ? { epoch: 0, reason: 'user' } : { epoch: s.epoch, reason: 'resume', previous: { device: b, epoch: s.epoch - 1 } },
        assistant: { text: `r${i}` },
        'agent.stopped': { epoch: s.epoch, reason: 'done' },
        meta: { key: 'autoRevival', value: i % 2 === 0, hlc: { wall: ts, counter: 0, device: a } },
        note: { text: `n${i}` }
      }
      const device = s.kind === 'user' || s.kind === 'meta' || s.kind === 'note' ? a : b
      out.push(mk({ kind: s.kind, parents: [parent.id], body: bodies[s.kind] } as EntryDraft, device, ts))
    }
    return out
  }
  // what the conversation does not go on with: settings, notes, a start beyond a gap in the epochs
  const sideIn = (dag: ConversationDag) => {
    const epochs = new EpochLedger(dag.entries())
    return (e: Entry): boolean => e.kind === 'meta' || e.kind === 'note' || (e.kind === 'agent.started' && epochs.startOf(e) === null)
  }

  it('a setting or note added under an entry the conversation already went on from adds no work and takes none away', () => {
    fc.assert(fc.property(treeArb, fc.nat(), fc.boolean(), (steps, pick, note) => {
      const entries = build(steps)
      const before = new ConversationDag(root.id, entries)
      // an entry with a child that is not a setting or a note: the conversation went on from it
      const side = sideIn(before)
      const went = entries.filter(e => before.children(e.id).some(c => !side(c)))
      fc.pre(went.length > 0)
      const at = went[pick % went.length] as Entry
      const extra = note
        ? mk({ kind: 'note', parents: [at.id], body: { text: 'beside' } }, a, 100)
        : setting(at, 100)
      const after = new ConversationDag(root.id, [...entries, extra])
      const ids = (dag: ConversationDag): string[] => openWork(dag).map(w => `${w.kind}:${w.leaf.id}`).sort()
      expect(ids(after)).toEqual(ids(before))
    }), { numRuns: 2000 })
  })
})
