import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import crypto from 'hypercore-crypto'
import {
  MAX_STATEMENTS, STATEMENT_MAX_SKEW_MS, acceptStatements, displayNames, evaluate, signAdd, signName, signRemove, statementId, verifyStatement,
  type AddStatement, type MembershipState, type Statement
} from '../../../src/main/sync/cluster/membership'
import { addOf, testKey, type TestKey } from '../../helpers/membership-fixtures'

// The membership rule (src/main/sync/cluster/membership.ts), pure: who is a member here, from this
// device's own acts and the signed statements it took in.

const T = 1_000_000_000_000
const YEAR = 365 * 24 * 3600_000

function state (self: TestKey, anchors: Array<{ key: string; at?: number; name?: string; by?: string }> = []): MembershipState {
  return { self: self.key, anchors: anchors.map(a => ({ key: a.key, at: a.at ?? T, name: a.name ?? a.key.slice(0, 6), ...(a.by !== undefined ? { by: a.by } : {}) })), forgets: [], statements: [] }
}

function take (s: MembershipState, statements: unknown[], now = T + 10_000): { s: MembershipState; refused: string[] } {
  const r = acceptStatements(s, statements, now)
  return { s: r.state, refused: r.refused.map(x => x.why) }
}

const members = (s: MembershipState, now = T + 10_000): string[] => [...evaluate(s, now).members.keys()].sort()

describe('membership statements', () => {
  it('verify: signatures, and an add\'s co-signature names its introducer (it cannot be re-signed by another)', () => {
    const [i, x, m] = [testKey(), testKey(), testKey()]
    const add = addOf(i, x, 'x', T)
    expect(verifyStatement(add)).toBe(true)
    expect(verifyStatement({ ...add, name: 'y' })).toBe(false)
    expect(verifyStatement({ ...add, at: T + 1 })).toBe(false)
    expect(verifyStatement({ ...add, by: m.key })).toBe(false)
    // the same co-signature under another introducer's signature: its invite was not theirs
    expect(verifyStatement(signAdd(m.kp, { device: x.key, name: 'x', join: add.join, nonce: add.nonce, at: T }))).toBe(false)
    // a device cannot introduce itself
    expect(verifyStatement(addOf(x, x, 'x', T))).toBe(false)
    expect(verifyStatement({ ...signName(m.kp, 'x', T), device: x.key })).toBe(false)
    expect(verifyStatement(signRemove(m.kp, x.key, T))).toBe(true)
    expect(statementId(add)).toBe(statementId({ ...add }))
    expect(statementId(add)).not.toBe(statementId(addOf(i, x, 'x', T)))
  })

  it('an add counts when its introducer is a member here; others are refused and not kept', () => {
    const [me, i, x, y, stranger] = [testKey(), testKey(), testKey(), testKey(), testKey()]
    // a batch counts its own adds for its later statements (in date order)
    let { s, refused } = take(state(me, [{ key: i.key }]), [addOf(x, y, 'y', T + 2), addOf(i, x, 'x', T + 1), addOf(stranger, testKey(), 'z', T + 3)])
    expect(members(s)).toEqual([i.key, x.key, y.key].sort())
    expect(refused).toEqual(['signer'])
    expect(s.statements.length).toBe(2)
    ;({ s, refused } = take(s, ['not a statement', { t: 'add', v: 1 }, { ...addOf(i, testKey(), 'w', T), sig: '00'.repeat(64) }]))
    expect(refused).toEqual(['malformed', 'malformed', 'signature'])
    expect(s.statements.length).toBe(2)
    // a statement dated before its signer's add in the same batch (clocks differ a little) is taken on a second pass
    const z = testKey()
    ;({ s, refused } = take(s, [signName(z.kp, 'z', T + 5), addOf(y, z, 'zed', T + 6)]))
    expect(refused).toEqual([])
    expect(members(s)).toContain(z.key)
  })

  it('stops taking statements at MAX_STATEMENTS (a member inviting without end), saying so', () => {
    const [me, i] = [testKey(), testKey()]
    const full: MembershipState = { ...state(me, [{ key: i.key }]), statements: Array.from({ length: MAX_STATEMENTS }, (_, n) => signName(i.kp, `i${n}`, T + n)) }
    const r = acceptStatements(full, [addOf(i, testKey(), 'one too many', T)], T)
    expect(r.refused.map(x => x.why)).toEqual(['full'])
  })

  it('a remove is honoured from the device itself, its introducer or this device; anyone else\'s is refused', () => {
    const [me, i, j, x] = [testKey(), testKey(), testKey(), testKey()]
    let { s } = take(state(me, [{ key: i.key }, { key: j.key }]), [addOf(i, x, 'x', T)])
    let refused: string[]
    ;({ s, refused } = take(s, [signRemove(j.kp, x.key, T + 1)]))
    expect(refused).toEqual(['authority'])
    expect(members(s)).toContain(x.key)
    for (const by of [x, i, me]) {
      const r = take(s, [signRemove(by.kp, x.key, T + 1)])
      expect(r.refused, by === me ? 'me' : by === x ? 'x' : 'i').toEqual([])
      expect(members(r.s)).not.toContain(x.key)
      expect(evaluate(r.s, T + 10_000).removed.get(x.key)).toMatchObject({ key: x.key, at: T + 1, by: by.key })
    }
    // a device paired here or vouched for: only itself (or this device) removes it
    ;({ s, refused } = take(s, [signRemove(i.kp, j.key, T + 1)]))
    expect(refused).toEqual(['authority'])
    expect(members(s)).toContain(j.key)
  })

  it('coming back: only with its own fresh co-signature, through the introducer that removed it (or any, if it left); a forget here only by this device', () => {
    const [me, i, j, x] = [testKey(), testKey(), testKey(), testKey()]
    const base = take(state(me, [{ key: i.key }, { key: j.key }]), [addOf(i, x, 'x', T)]).s
    const removedBy = (by: TestKey): MembershipState => take(base, [signRemove(by.kp, x.key, T + 10)]).s
    const old = base.statements[0] as AddStatement
    const cases: Array<[string, MembershipState, Statement, boolean]> = [
      ['its introducer, a fresh co-signature', removedBy(i), addOf(i, x, 'x', T + 20, T + 15), true],
      ['its introducer, the co-signature from before the removal', removedBy(i), addOf(i, x, 'x', T + 20, T + 5), false],
      ['its introducer, the old add again', removedBy(i), old, false],
      ['another member, a fresh co-signature', removedBy(i), addOf(j, x, 'x', T + 20, T + 15), false],
      ['dated before the removal', removedBy(i), addOf(i, x, 'x', T + 9, T + 9), false],
      ['it left; another member', removedBy(x), addOf(j, x, 'x', T + 20, T + 15), true],
      ['it left; with a stale co-signature', removedBy(x), addOf(j, x, 'x', T + 20, T + 5), false],
      ['forgotten here; its introducer', removedBy(me), addOf(i, x, 'x', T + 20, T + 15), false],
      ['forgotten here; paired here again', removedBy(me), addOf(me, x, 'x', T + 20, T + 15), true]
    ]
    for (const [what, s0, add, back] of cases) expect(members(take(s0, [add]).s).includes(x.key), what).toBe(back)
    // an add and a remove of the same date: the remove wins
    expect(members(take(base, [signRemove(i.kp, x.key, T)]).s)).not.toContain(x.key)
    // a local forget is the same as this device's signed remove; pairing here (an anchor) undoes it
    const forgot: MembershipState = { ...base, forgets: [{ key: x.key, at: T + 10 }] }
    expect(members(forgot)).not.toContain(x.key)
    expect(members(take(forgot, [addOf(i, x, 'x', T + 20, T + 15)]).s)).not.toContain(x.key)
    expect(members({ ...forgot, anchors: [...forgot.anchors, { key: x.key, at: T + 20, name: 'x' }] })).toContain(x.key)
  })

  it('once an introducer is removed, the device that removed it may remove what it introduced (nobody else)', () => {
    const [me, laptop, cloud, other] = [testKey(), testKey(), testKey(), testKey()]
    const planted = [testKey(), testKey()]
    let s = take(state(me, [{ key: laptop.key }, { key: other.key }]), [addOf(laptop, cloud, 'cloud', T), ...planted.map((p, n) => addOf(cloud, p, `laptop ${n}`, T + 1))]).s
    // while the cloud is a member, the laptop has no say over what the cloud paired
    expect(take(s, [signRemove(laptop.kp, (planted[0] as TestKey).key, T + 3)]).refused).toEqual(['authority'])
    s = take(s, [signRemove(laptop.kp, cloud.key, T + 2)]).s
    expect(members(s)).toEqual([laptop.key, other.key, ...planted.map(p => p.key)].sort())
    expect(evaluate(s, T + 10_000).members.get((planted[0] as TestKey).key)?.authority.sort()).toEqual([cloud.key, laptop.key].sort())
    const r = take(s, [signRemove(laptop.kp, (planted[0] as TestKey).key, T + 3), signRemove(other.kp, (planted[1] as TestKey).key, T + 3)])
    expect(r.refused).toEqual(['authority'])
    expect(members(r.s)).toEqual([laptop.key, other.key, (planted[1] as TestKey).key].sort())
    // and only the laptop brings it back
    expect(members(take(r.s, [addOf(other, planted[0] as TestKey, 'x', T + 5)]).s)).not.toContain((planted[0] as TestKey).key)
    expect(members(take(r.s, [addOf(laptop, planted[0] as TestKey, 'x', T + 5)]).s)).toContain((planted[0] as TestKey).key)
  })

  it('vouched for (listed by the inviting device on joining): a member, with no authority over it, and no way back after a removal', () => {
    const [me, inviter, i, x] = [testKey(), testKey(), testKey(), testKey()]
    const s0 = state(me, [{ key: inviter.key }, { key: i.key, by: inviter.key }, { key: x.key, by: inviter.key, at: T + 50 }])
    expect(members(s0)).toEqual([inviter.key, i.key, x.key].sort())
    expect(evaluate(s0, T).members.get(i.key)?.authority).toEqual([])
    expect(take(s0, [signRemove(inviter.kp, i.key, T + 1)]).refused).toEqual(['authority'])
    // the inviter's list was stale: x had been removed by its introducer before; the vouch does not bring it back
    const s1 = take(s0, [addOf(i, x, 'x', T + 1), signRemove(i.kp, x.key, T + 2)]).s
    expect(members(s1)).not.toContain(x.key)
  })

  it('dates: a statement more than the skew ahead is not honoured while it is ahead (nextDue says when), and a co-signature far ahead of its add never', () => {
    const [me, i, x] = [testKey(), testKey(), testKey()]
    const s0 = take(state(me, [{ key: i.key }]), [addOf(i, x, 'x', T)], T).s
    const later = T + STATEMENT_MAX_SKEW_MS + 1000
    const s1 = take(s0, [signRemove(i.kp, x.key, later), signName(x.kp, 'x2', later)], T).s
    const e = evaluate(s1, T)
    expect(e.members.has(x.key)).toBe(true)
    expect(e.members.get(x.key)?.signedName?.name).toBe('x')
    expect(e.nextDue).toBe(T + 1000)
    expect(evaluate(s1, T + 999).members.has(x.key)).toBe(true)
    expect(evaluate(s1, T + 1000).members.has(x.key)).toBe(false)
    const y = testKey()
    expect(members(take(s0, [addOf(i, y, 'y', T, T + 2 * STATEMENT_MAX_SKEW_MS)], T + 10 * STATEMENT_MAX_SKEW_MS).s, T + 10 * STATEMENT_MAX_SKEW_MS)).not.toContain(y.key)
  })

  it('names: the latest self-signed one; a name like another member\'s is shown with who added it', () => {
    const [me, i, x, y] = [testKey(), testKey(), testKey(), testKey()]
    let s = take(state(me, [{ key: i.key, name: 'server' }]), [addOf(i, x, 'phone', T + 1)]).s
    s = take(s, [signName(x.kp, 'old', T), signName(x.kp, 'new phone', T + 5)]).s
    expect(evaluate(s, T + 10_000).members.get(x.key)?.signedName?.name).toBe('new phone')
    // older names are dropped once a newer one is kept
    expect(s.statements.filter(st => st.t === 'name').length).toBe(1)
    s = take(s, [addOf(i, y, 'Server', T + 6)]).s
    const shown = displayNames(evaluate(s, T + 10_000).members, { key: me.key, name: 'desk' })
    expect(shown.get(x.key)).toBe('new phone')
    expect(shown.get(i.key)).toBe(`server (${i.key.slice(0, 8)})`)
    // its introducer as this device shows it: qualified too
    expect(shown.get(y.key)).toBe(`Server (added by server (${i.key.slice(0, 8)}), ${y.key.slice(0, 8)})`)
  })
})

// --- properties: honest histories, with and without what an attacker can make ---

interface World {
  keys: TestKey[]
  /** honest statements in the order they were made, and local forgets (index into the list: made after that many statements) */
  honest: Statement[]
  forgets: Array<{ after: number; key: string; at: number }>
  /** the model: what every device's membership must be */
  model: Map<string, { member: boolean; name: string }>
  /** devices the attacker paired (it has authority over them: only its post-dated removes are forgeries) */
  attackers: Set<string>
  now: number
}

type Op =
  | { op: 'pair'; by: number; who: number; dt: number }
  | { op: 'remove'; by: number; who: number; dt: number }
  | { op: 'rename'; who: number; dt: number }
  | { op: 'forget'; who: number; dt: number }

const SELF = 0
const ROOT = 1
const ATTACKER = 7
const N = 8

const opArb: fc.Arbitrary<Op> = fc.oneof(
  // the attacker (7) takes part honestly too: the user may pair a device through it
  { weight: 4, arbitrary: fc.record({ op: fc.constant('pair' as const), by: fc.nat({ max: 7 }), who: fc.integer({ min: 2, max: 6 }), dt: fc.integer({ min: 1, max: 1000 }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('remove' as const), by: fc.nat({ max: 7 }), who: fc.integer({ min: 1, max: 6 }), dt: fc.integer({ min: 1, max: 1000 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('rename' as const), who: fc.integer({ min: 1, max: 6 }), dt: fc.integer({ min: 1, max: 1000 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('forget' as const), who: fc.integer({ min: 1, max: 6 }), dt: fc.integer({ min: 1, max: 1000 }) }) }
)

/**
 * Runs honest operations (skipping those an honest device could not make) and keeps a model
 * of the rule, op by op: who is a member, by whose add, and who removed it.
 */
function honestWorld (keys: TestKey[], ops: Op[]): World {
  const self = keys[SELF] as TestKey
  let t = T
  const honest: Statement[] = [addOf(keys[ROOT] as TestKey, keys[ATTACKER] as TestKey, 'cloud', t)]
  const forgets: World['forgets'] = []
  type Dev = { member: boolean; by: Set<number>; removedBy: number | null; name: string; authorityWhenRemoved: Set<number> }
  const st = new Map<number, Dev>()
  for (let d = 1; d < N; d++) st.set(d, { member: d === ROOT || d === ATTACKER, by: new Set(d === ATTACKER ? [ROOT] : []), removedBy: null, name: d === ATTACKER ? 'cloud' : d === ROOT ? 'root' : `d${d}`, authorityWhenRemoved: new Set() })
  const isMember = (d: number): boolean => d === SELF || st.get(d)?.member === true
  // who may remove d: its introducers, and for an introducer no longer a member, whoever could remove that one
  const authority = (d: number): Set<number> => {
    const x = st.get(d) as Dev
    const out = new Set(x.by)
    const queue = [...x.by]
    for (let a = queue.shift(); a !== undefined; a = queue.shift()) {
      const ia = st.get(a)
      if (ia === undefined || ia.member) continue
      for (const h of ia.authorityWhenRemoved) if (h !== d && !out.has(h)) { out.add(h); queue.push(h) }
    }
    return out
  }
  for (const o of ops) {
    t += o.dt
    const x = st.get(o.who) as Dev
    const who = keys[o.who] as TestKey
    if (o.op === 'pair') {
      // `by` picks one of the members (this device first), so that chains of introductions form
      const introducers = [SELF, ...[...st].filter(([d, v]) => v.member && d !== o.who).map(([d]) => d)]
      const by = introducers[o.by % introducers.length] as number
      if (x.member) continue
      const r = x.removedBy
      if (r !== null && by !== SELF && (r === SELF || (r !== o.who && r !== by))) continue
      honest.push(addOf(keys[by] as TestKey, who, x.name, t))
      x.member = true
      x.by = new Set([by])
    } else if (o.op === 'remove') {
      // `by` picks one of those who may: the device itself, this device, or one with authority over it
      const can = authority(o.who)
      const mayRemove = [o.who, SELF, ...[...can].sort((a, b) => a - b)]
      const by = mayRemove[o.by % mayRemove.length] as number
      if (!x.member || !isMember(by)) continue
      honest.push(signRemove((keys[by] as TestKey).kp, who.key, t))
      x.member = false
      x.removedBy = by
      x.authorityWhenRemoved = can
    } else if (o.op === 'rename') {
      if (!x.member) continue
      x.name = `d${o.who} at ${t}`
      honest.push(signName(who.kp, x.name, t))
    } else {
      if (!x.member) continue
      forgets.push({ after: honest.length, key: who.key, at: t })
      x.authorityWhenRemoved = authority(o.who)
      x.member = false
      x.removedBy = SELF
    }
  }
  const model = new Map<string, { member: boolean; name: string }>()
  const attackers = new Set<string>()
  for (let d = 1; d < N; d++) {
    const x = st.get(d) as Dev
    model.set((keys[d] as TestKey).key, { member: x.member, name: x.name })
    if (x.member && authority(d).has(ATTACKER)) attackers.add((keys[d] as TestKey).key)
  }
  void self
  return { keys, honest, forgets, model, attackers, now: t + 1 }
}

/** What the attacker (a member) can make, against honest device `who`. */
function forgeries (w: World, who: number, kind: number, at: number): unknown[] {
  const a = w.keys[ATTACKER] as TestKey
  const victim = w.keys[who] as TestKey
  const adds = w.honest.filter((s): s is AddStatement => s.t === 'add' && s.device === victim.key)
  const some = w.honest[kind % Math.max(1, w.honest.length)]
  const nonce = crypto.randomBytes(32).toString('hex')
  // over a device it paired, the attacker's removes are its right; dated a year ahead, or before the pairing, they are not
  if (w.attackers.has(victim.key)) return [signRemove(a.kp, victim.key, at + YEAR), signRemove(a.kp, victim.key, 0)]
  switch (kind % 7) {
    case 0: return [signRemove(a.kp, victim.key, at)]
    case 1: return adds.map(x => signAdd(a.kp, { device: victim.key, name: x.name, join: x.join, nonce: x.nonce, at }))
    case 2: return adds.map(x => signAdd(a.kp, { device: victim.key, name: 'evil', join: x.join, nonce, at }))
    case 3: return [{ ...signName(a.kp, 'evil', at), device: victim.key }, signName(a.kp, w.model.get(victim.key)?.name ?? 'x', at)]
    case 4: return some === undefined ? [] : [{ ...some, at: some.at + 1 }, { ...some, sig: some.sig.replace(/^./, c => (c === '0' ? '1' : '0')) }]
    case 5: return [{ t: 'remove', v: 1, device: victim.key, by: a.key, at }, { devices: [], forgotten: [{ key: victim.key, at }] }, 42, null]
    default: return [signRemove(a.kp, victim.key, at + YEAR), signRemove(a.kp, victim.key, 0)]
  }
}

/** Delivers the honest statements in chunks (with replays of earlier ones, and the attacker's forgeries mixed in), then the whole set again. */
function deliver (w: World, cuts: number[], extra: (chunk: number) => unknown[]): MembershipState {
  const self = w.keys[SELF] as TestKey
  let s: MembershipState = { self: self.key, anchors: [{ key: (w.keys[ROOT] as TestKey).key, at: T - 1, name: 'root' }], forgets: [], statements: [] }
  const bounds = new Set([...cuts.map(c => c % (w.honest.length + 1)), ...w.forgets.map(f => f.after), w.honest.length])
  let from = 0
  let chunk = 0
  for (const to of [...bounds].sort((a, b) => a - b)) {
    const batch: unknown[] = [...w.honest.slice(from, to), ...w.honest.slice(0, from).filter((_, i) => (i + chunk) % 3 === 0), ...extra(chunk++)]
    s = acceptStatements(s, fc.sample(fc.shuffledSubarray(batch, { minLength: batch.length }), { numRuns: 1, seed: chunk })[0] ?? batch, w.now).state
    for (const f of w.forgets) if (f.after === to) s = { ...s, forgets: [...s.forgets.filter(x => x.key !== f.key), { key: f.key, at: f.at }] }
    from = to
  }
  return acceptStatements(s, [...w.honest, ...extra(chunk)], w.now).state
}

function outcome (w: World, s: MembershipState): Map<string, { member: boolean; name: string }> {
  const e = evaluate(s, w.now)
  const out = new Map<string, { member: boolean; name: string }>()
  for (const [key, m] of w.model) {
    const v = e.members.get(key)
    out.set(key, { member: v !== undefined, name: v === undefined ? m.name : v.signedName?.name ?? v.localName ?? '' })
  }
  return out
}

describe('membership properties', () => {
  const keys = Array.from({ length: N }, testKey)
  const args = fc.tuple(fc.array(opArb, { minLength: 1, maxLength: 40 }), fc.array(fc.nat(), { maxLength: 6 }))

  it('honest statements, delivered in chunks in any order within a chunk, give what the rule says op by op', () => {
    fc.assert(fc.property(args, ([ops, cuts]) => {
      const w = honestWorld(keys, ops)
      const got = outcome(w, deliver(w, cuts, () => []))
      for (const [key, m] of w.model) {
        if (key === (keys[ATTACKER] as TestKey).key) continue
        expect(got.get(key)?.member, `member ${key.slice(0, 6)}`).toBe(m.member)
        if (m.member) expect(got.get(key)?.name).toBe(m.name)
      }
    }), { numRuns: 150 })
  })

  it('what the attacker forges (unsigned, signed by a non-introducer, re-signed, renaming another, pre- and post-dated) changes nothing for the honest devices', () => {
    const forged = fc.array(fc.record({ chunk: fc.nat({ max: 8 }), who: fc.integer({ min: 1, max: 6 }), kind: fc.nat({ max: 50 }), dt: fc.integer({ min: -5000, max: 5000 }) }), { minLength: 1, maxLength: 12 })
    fc.assert(fc.property(args, forged, ([ops, cuts], fs) => {
      const w = honestWorld(keys, ops)
      const clean = outcome(w, deliver(w, cuts, () => []))
      const attacked = outcome(w, deliver(w, cuts, chunk => fs.filter(f => f.chunk === chunk || chunk > 8).flatMap(f => forgeries(w, f.who, f.kind, Math.max(0, w.now + f.dt)))))
      for (const [key, m] of clean) if (key !== (keys[ATTACKER] as TestKey).key) expect(attacked.get(key), key.slice(0, 6)).toEqual(m)
    }), { numRuns: 60 })
  })

  it('the evaluation depends on the statements held, not on their order; taking the same statements again changes nothing', () => {
    fc.assert(fc.property(args, fc.nat(), ([ops, cuts], seed) => {
      const w = honestWorld(keys, ops)
      const s = deliver(w, cuts, () => [])
      const shuffled = { ...s, statements: fc.sample(fc.shuffledSubarray(s.statements, { minLength: s.statements.length }), { numRuns: 1, seed })[0] ?? s.statements }
      expect(outcome(w, shuffled)).toEqual(outcome(w, s))
      const again = acceptStatements(s, s.statements, w.now)
      expect(again.accepted).toEqual([])
      expect(again.state.statements.length).toBe(s.statements.length)
    }), { numRuns: 40 })
  })
})
