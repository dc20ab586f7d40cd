import crypto from 'hypercore-crypto'
import { z } from 'zod'
import { canonicalJson } from '../../../shared/entry/canonical-json'
import { Hex32 } from '../../../shared/entry/hex32-schema'

/**
 * Who is in the cluster, as this device decides it (DESIGN.md, "Trust": membership changes
 * need the affected device's or the user's own act). Pure: no I/O, no clock of its own.
 *
 * Membership is what this device did itself plus **signed statements** gossiped between
 * devices (signed with a device's key pair, over canonical JSON):
 *
 * - `add`: device X joined through introducer I (the member whose invite X used). Signed by
 *   I, and co-signed by X over its key, its name and the invite's discovery key (made
 *   during pairing). The discovery key is derived from I's key and a nonce the statement
 *   reveals, so X's co-signature names I: nobody can re-sign it as another introducer, and
 *   nobody but X chooses X's name.
 * - `remove`: X is no longer a member. Honoured when signed by X itself (leaving) or by an
 *   introducer of X's current membership; a remove signed by this device is the user's act
 *   here and is always honoured here. An introducer's ancestors have no say while it is a
 *   member; once it is removed, whoever could remove it takes over its introductions (what
 *   a compromised device planted can then be removed everywhere by the device that removed it).
 *   X comes back only by an add with its own fresh co-signature from whoever removed it (any
 *   member, if it left), or by being paired again on this device.
 * - `name`: X renames itself (signed by X).
 *
 * What this device did itself (local acts, never gossiped): the devices it paired with
 * (either side), the devices its cluster file listed before statements existed, the members
 * the inviting device listed when this device joined ("vouched": members, but no authority
 * to remove them), and the devices the user forgot here.
 *
 * A statement from a peer is stored only if its signer is a member here when it arrives
 * (evaluate) and it could have an effect (a remove needs authority). Dates: a statement
 * dated more than STATEMENT_MAX_SKEW_MS ahead of this device's clock is not honoured while
 * it is ahead; after that check, the adds and removes of a device are ordered by date.
 */

/** How far ahead of this device's clock a statement may be dated and still be honoured now. */
export const STATEMENT_MAX_SKEW_MS = 5 * 60_000
/** Statements kept (and gossiped) at most; more from peers are refused, with a warning. */
export const MAX_STATEMENTS = 1000
/** ... and at most this many signed by one device (a member inviting without end cannot fill the store). */
export const MAX_PER_SIGNER = 200
export const NAME_MAX = 200

const SIG = /^[0-9a-f]{128}$/
const Sig = z.string().regex(SIG)
const Time = z.number().finite().nonnegative()
export function cleanName (name: string): string {
  return String(name).trim().slice(0, NAME_MAX)
}
const Name = z.string().min(1).max(NAME_MAX).refine(n => n === cleanName(n), 'has surrounding blanks')

// Loose objects: a field a newer version adds is covered by its signature and kept.
const JoinSig = z.looseObject({ at: Time, sig: Sig })
const AddSchema = z.looseObject({ t: z.literal('add'), v: z.literal(1), device: Hex32, name: Name, join: JoinSig, by: Hex32, nonce: Hex32, at: Time, sig: Sig })
const RemoveSchema = z.looseObject({ t: z.literal('remove'), v: z.literal(1), device: Hex32, by: Hex32, at: Time, sig: Sig })
const NameSchema = z.looseObject({ t: z.literal('name'), v: z.literal(1), device: Hex32, name: Name, at: Time, sig: Sig })
const StatementSchema = z.discriminatedUnion('t', [AddSchema, RemoveSchema, NameSchema])

export type AddStatement = z.infer<typeof AddSchema>
export type RemoveStatement = z.infer<typeof RemoveSchema>
export type NameStatement = z.infer<typeof NameSchema>
export type Statement = AddStatement | RemoveStatement | NameStatement
/** The joining device's part of an add (sent in its pairing request). */
export interface JoinSignature { at: number; sig: string }
export interface KeyPair { publicKey: Buffer; secretKey: Buffer }

// Domain separation: these signatures can never be mistaken for feed headers or anything else.
const NS = 'arbor/membership/v1\n'
const [NS_INVITE] = crypto.namespace('arbor/invite-key/v1', 1) as [Buffer]

function signed (body: object): Buffer {
  return Buffer.from(NS + canonicalJson(body))
}

function withoutSig<T extends { sig: string }> (s: T): Omit<T, 'sig'> {
  const { sig: _sig, ...rest } = s
  return rest
}

function sign (body: object, kp: KeyPair): string {
  return crypto.sign(signed(body), kp.secretKey).toString('hex')
}

function verifySig (body: object, sig: string, key: string): boolean {
  try {
    return crypto.verify(signed(body), Buffer.from(sig, 'hex'), Buffer.from(key, 'hex'))
  } catch {
    return false
  }
}

/** The key of an invite made by `introducer` (hex): its discovery key binds the invite to that device. */
export function inviteKey (introducer: string, nonce: string): Buffer {
  return crypto.hash([NS_INVITE, Buffer.from(introducer, 'hex'), Buffer.from(nonce, 'hex')])
}

/** The discovery key (hex) candidates of such an invite look for, which the joining device signs. */
export function inviteDiscoveryKey (introducer: string, nonce: string): string {
  return crypto.discoveryKey(inviteKey(introducer, nonce)).toString('hex')
}

function joinBody (device: string, name: string, invite: string, at: number): object {
  return { t: 'join', v: 1, device, name, invite, at }
}

/** The joining device's co-signature over its key, its name and the invite it uses. */
export function signJoin (kp: KeyPair, name: string, inviteDiscovery: string, at: number): JoinSignature {
  const device = kp.publicKey.toString('hex')
  return { at, sig: sign(joinBody(device, cleanName(name), inviteDiscovery, at), kp) }
}

export function verifyJoin (device: string, name: string, inviteDiscovery: string, join: JoinSignature): boolean {
  return SIG.test(join.sig) && verifySig(joinBody(device, name, inviteDiscovery, join.at), join.sig, device)
}

export function signAdd (kp: KeyPair, x: { device: string; name: string; join: JoinSignature; nonce: string; at: number }): AddStatement {
  const body = { t: 'add' as const, v: 1 as const, device: x.device, name: x.name, join: { at: x.join.at, sig: x.join.sig }, by: kp.publicKey.toString('hex'), nonce: x.nonce, at: x.at }
  return { ...body, sig: sign(body, kp) }
}

export function signRemove (kp: KeyPair, device: string, at: number): RemoveStatement {
  const body = { t: 'remove' as const, v: 1 as const, device, by: kp.publicKey.toString('hex'), at }
  return { ...body, sig: sign(body, kp) }
}

export function signName (kp: KeyPair, name: string, at: number): NameStatement {
  const body = { t: 'name' as const, v: 1 as const, device: kp.publicKey.toString('hex'), name: cleanName(name), at }
  return { ...body, sig: sign(body, kp) }
}

/** Parses a statement; null if it is not one this version knows (malformed, or a newer kind). */
export function parseStatement (raw: unknown): Statement | null {
  const p = StatementSchema.safeParse(raw)
  return p.success ? p.data : null
}

/** Whether every signature of a statement verifies (and, for an add, the co-signature names its introducer). */
export function verifyStatement (s: Statement): boolean {
  switch (s.t) {
    case 'add':
      return s.device !== s.by &&
        verifySig(withoutSig(s), s.sig, s.by) &&
        verifyJoin(s.device, s.name, inviteDiscoveryKey(s.by, s.nonce), s.join)
    case 'remove':
      return verifySig(withoutSig(s), s.sig, s.by)
    case 'name':
      return verifySig(withoutSig(s), s.sig, s.device)
  }
}

const ids = new WeakMap<Statement, string>()

/** A statement's id: the hash of all of it, signature included. */
export function statementId (s: Statement): string {
  let id = ids.get(s)
  if (id === undefined) {
    id = crypto.hash(Buffer.from(canonicalJson(s))).toString('hex')
    ids.set(s, id)
  }
  return id
}

export function signerOf (s: Statement): string {
  return s.t === 'name' ? s.device : s.by
}

// --- the state and its evaluation ---

/** A device trusted by an act on this device; `by`: vouched for by the inviting device when this one joined. */
export interface Anchor { key: string; at: number; name: string; by?: string }
/** A device the user forgot here; `pending`: its signed remove is still to be made (no key pair yet). */
export interface LocalForget { key: string; at: number; pending?: boolean }

export interface MembershipState {
  /** this device (hex), or null while unknown */
  self: string | null
  anchors: Anchor[]
  forgets: LocalForget[]
  statements: Statement[]
}

export interface MemberView {
  key: string
  /** when its current membership began (the date of the add or local act) */
  since: number
  /** the introducer whose add began the current membership; undefined: an act on this device, or vouched */
  addedBy?: string
  /**
   * whose signed remove is honoured (besides its own, and this device's here): the introducers
   * of its current membership by signed add, and, for an introducer no longer a member, those
   * who had authority over that one
   */
  authority: string[]
  /** its latest self-signed name, if any */
  signedName?: { name: string; at: number }
  /** the name an act here recorded (before statements, or from an older peer) */
  localName?: string
}

/** `authority`: who could remove it when it was removed (they take over what it introduced) */
export interface RemovedView { key: string; at: number; by: string; authority: string[] }

export interface Evaluation {
  members: Map<string, MemberView>
  removed: Map<string, RemovedView>
  /** when the next statement that is ahead now becomes due (ms), if any */
  nextDue?: number
}

type Ev =
  | { kind: 'add'; by: string; at: number; joinAt: number; authority: boolean; order: string }
  | { kind: 'remove'; by: string; at: number; order: string }

const SELF_ORDER = '' // local acts sort before statements of the same date and kind
/** stands for this device while its key is unknown (a CLI command run without a node) */
const UNKNOWN_SELF = '(this device)'

/** Whether an add can bring back a device after a removal. */
function mayReadd (add: Extract<Ev, { kind: 'add' }>, rem: Extract<Ev, { kind: 'remove' }>, self: string, device: string): boolean {
  if (add.by === self) return true // the user's act here
  if (rem.by === self) return false // forgotten here: only this device brings it back
  if (add.joinAt <= rem.at) return false // no fresh consent of the device itself
  if (rem.by === device) return true // it left; it came back through any member
  return add.by === rem.by // removed by one with authority over it: only that one re-adds it
}

/**
 * Who is a member here now. Deterministic: the same state and clock give the same answer.
 * This device itself is never listed (it is always a member of its own view).
 */
export function evaluate (state: MembershipState, now: number): Evaluation {
  const horizon = now + STATEMENT_MAX_SKEW_MS
  const events = new Map<string, Ev[]>()
  const names = new Map<string, { name: string; at: number; order: string }>()
  const localNames = new Map<string, { name: string; at: number }>()
  let nextDue: number | undefined
  const due = (at: number): boolean => {
    if (at <= horizon) return true
    const when = at - STATEMENT_MAX_SKEW_MS
    if (nextDue === undefined || when < nextDue) nextDue = when
    return false
  }
  const push = (key: string, e: Ev): void => {
    if (key === state.self) return
    const list = events.get(key)
    if (list === undefined) events.set(key, [e])
    else list.push(e)
  }
  const nameOf = (key: string, name: string, at: number, order: string): void => {
    const cur = names.get(key)
    if (cur === undefined || at > cur.at || (at === cur.at && order > cur.order)) names.set(key, { name, at, order })
  }
  const self = state.self ?? UNKNOWN_SELF
  for (const a of state.anchors) {
    // an act here (or a vouch) makes it a member, but gives nobody authority over it elsewhere
    push(a.key, { kind: 'add', by: a.by ?? self, at: a.at, joinAt: -Infinity, authority: false, order: SELF_ORDER })
    const cur = localNames.get(a.key)
    if (cur === undefined || a.at >= cur.at) localNames.set(a.key, { name: a.name, at: a.at })
  }
  for (const f of state.forgets) push(f.key, { kind: 'remove', by: self, at: f.at, order: SELF_ORDER })
  for (const s of state.statements) {
    const order = statementId(s)
    if (s.t === 'add') {
      if (!due(s.at) || !due(s.join.at) || s.join.at > s.at + STATEMENT_MAX_SKEW_MS) continue
      push(s.device, { kind: 'add', by: s.by, at: s.at, joinAt: s.join.at, authority: true, order })
      nameOf(s.device, s.name, s.join.at, order)
    } else if (s.t === 'remove') {
      if (!due(s.at)) continue
      push(s.device, { kind: 'remove', by: s.by, at: s.at, order })
    } else {
      if (!due(s.at)) continue
      nameOf(s.device, s.name, s.at, order)
    }
  }

  for (const list of events.values()) {
    // by date; on the same date adds before removes (the remove wins), local acts first
    list.sort((a, b) => a.at - b.at || (a.kind === b.kind ? (a.order < b.order ? -1 : a.order > b.order ? 1 : 0) : a.kind === 'add' ? -1 : 1))
  }
  // Authority passes up once an introducer is gone: replay with what that gives, until nothing
  // more is given (bounded: each round is deterministic, the last one is the answer).
  let inherited = new Map<string, Set<string>>()
  let result = replay(events, self, inherited, names, localNames)
  for (let round = 0; round < events.size; round++) {
    const next = passedUp(result)
    if (sameSets(next, inherited)) break
    inherited = next
    result = replay(events, self, inherited, names, localNames)
  }
  const out: Evaluation = { members: result.members, removed: result.removed }
  if (nextDue !== undefined) out.nextDue = nextDue
  return out
}

/**
 * Who holds authority over each member because a device that had it is no longer a member:
 * the authority over that device (whoever could remove it) takes over its introductions, so
 * what a removed device paired (a compromised one's look-alikes included) can still be
 * removed everywhere, by the device that removed it.
 */
function passedUp (r: Replayed): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>()
  // for every device, member or removed (a removal made with inherited authority must keep it)
  for (const [key, own] of r.own) {
    const got = new Set<string>()
    const queue = [...own]
    for (let a = queue.shift(); a !== undefined; a = queue.shift()) {
      const gone = r.removed.get(a)
      if (gone === undefined) continue
      for (const h of gone.authority) if (h !== key && !own.includes(h) && !got.has(h)) { got.add(h); queue.push(h) }
    }
    if (got.size > 0) out.set(key, got)
  }
  return out
}

interface Replayed {
  members: Map<string, MemberView>
  removed: Map<string, RemovedView>
  /** by device: the introducers (by signed add) of its current or last membership */
  own: Map<string, string[]>
}

function sameSets (a: Map<string, Set<string>>, b: Map<string, Set<string>>): boolean {
  if (a.size !== b.size) return false
  for (const [k, x] of a) {
    const y = b.get(k)
    if (y === undefined || y.size !== x.size || [...x].some(e => !y.has(e))) return false
  }
  return true
}

function replay (
  events: Map<string, Ev[]>, self: string, inherited: Map<string, Set<string>>,
  names: Map<string, { name: string; at: number }>, localNames: Map<string, { name: string; at: number }>
): Replayed {
  const members = new Map<string, MemberView>()
  const removed = new Map<string, RemovedView>()
  const own = new Map<string, string[]>()
  for (const [key, list] of events) {
    const extra = inherited.get(key) ?? new Set<string>()
    let member = false
    let since = 0
    let addedBy: string | undefined
    let authority = new Set<string>()
    let last: Extract<Ev, { kind: 'remove' }> | null = null
    let lastAuthority: string[] = []
    for (const e of list) {
      if (e.kind === 'add') {
        if (member) { if (e.authority) authority.add(e.by); continue }
        if (last !== null && !mayReadd(e, last, self, key)) continue
        member = true
        since = e.at
        addedBy = e.authority && e.by !== self ? e.by : undefined
        authority = new Set(e.authority ? [e.by] : [])
      } else if (member) {
        if (e.by === key || e.by === self || authority.has(e.by) || extra.has(e.by)) { member = false; last = e; lastAuthority = [...authority, ...extra] }
      } else if (e.by === self) {
        last = e // forgotten here as well: from now on only this device brings it back
      }
    }
    if (authority.size > 0) own.set(key, [...authority])
    if (member) {
      const v: MemberView = { key, since, authority: [...authority, ...[...extra].filter(x => !authority.has(x))] }
      if (addedBy !== undefined) v.addedBy = addedBy
      const n = names.get(key)
      if (n !== undefined) v.signedName = { name: n.name, at: n.at }
      const ln = localNames.get(key)
      if (ln !== undefined) v.localName = ln.name
      members.set(key, v)
    } else if (last !== null) {
      removed.set(key, { key, at: last.at, by: last.by, authority: lastAuthority })
    }
  }
  return { members, removed, own }
}

// --- taking statements from peers ---

export type RefusalReason = 'malformed' | 'signature' | 'signer' | 'authority' | 'full'
export interface Refusal { why: RefusalReason; statement?: Statement; id?: string }

export interface AcceptResult {
  state: MembershipState
  accepted: Statement[]
  refused: Refusal[]
}

const KIND_ORDER = { add: 0, name: 1, remove: 2 } as const

/** Every device that has introduced `device` in some stored add (authority for a remove). */
function introducersOf (statements: Statement[], device: string): Set<string> {
  const out = new Set<string>()
  for (const s of statements) if (s.t === 'add' && s.device === device) out.add(s.by)
  return out
}

/**
 * Takes statements from a peer (or the welcome): keeps those that verify, whose signer is a
 * member here when they are taken (in date order, so a batch's own adds count for its later
 * statements), and that could have an effect. Returns the new state (the input is not changed).
 */
export function acceptStatements (state: MembershipState, incoming: readonly unknown[], now: number): AcceptResult {
  const known = new Set(state.statements.map(statementId))
  const refused: Refusal[] = []
  const fresh: Array<{ s: Statement; id: string }> = []
  const seen = new Set<string>()
  for (const raw of incoming) {
    const s = parseStatement(raw)
    if (s === null) { refused.push({ why: 'malformed' }); continue }
    const id = statementId(s)
    if (known.has(id) || seen.has(id)) continue
    seen.add(id)
    if (!verifyStatement(s)) { refused.push({ why: 'signature', statement: s, id }); continue }
    fresh.push({ s, id })
  }
  if (fresh.length === 0) return { state, accepted: [], refused }
  fresh.sort((a, b) => a.s.at - b.s.at || KIND_ORDER[a.s.t] - KIND_ORDER[b.s.t] || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))

  const statements = [...state.statements]
  const accepted: Statement[] = []
  let view = evaluate(state, now)
  // In date order; what a later statement of the batch made possible is tried again (a name
  // signed on a clock a little behind its introducer's), until a pass takes nothing new.
  let pending = fresh
  let final: Refusal[] = []
  for (let pass = 0; pending.length > 0 && pass < 8; pass++) {
    const waiting: typeof fresh = []
    final = []
    for (const { s, id } of pending) {
      const signer = signerOf(s)
      if (signer !== state.self && !view.members.has(signer)) { waiting.push({ s, id }); final.push({ why: 'signer', statement: s, id }); continue }
      if (s.t === 'remove' && s.by !== s.device && s.by !== state.self && !introducersOf(statements, s.device).has(s.by) && view.members.get(s.device)?.authority.includes(s.by) !== true) {
        waiting.push({ s, id })
        final.push({ why: 'authority', statement: s, id })
        continue
      }
      if (statements.length >= MAX_STATEMENTS || (signer !== state.self && statements.filter(x => signerOf(x) === signer).length >= MAX_PER_SIGNER)) {
        refused.push({ why: 'full', statement: s, id })
        continue
      }
      statements.push(s)
      accepted.push(s)
      view = evaluate({ ...state, statements }, now)
    }
    if (waiting.length === pending.length) break
    pending = waiting
  }
  refused.push(...final)
  return { state: { ...state, statements: compact(statements) }, accepted, refused }
}

/** Drops what can no longer matter: a device's older names once it signed a newer one. */
export function compact (statements: Statement[]): Statement[] {
  const latest = new Map<string, NameStatement>()
  for (const s of statements) {
    if (s.t !== 'name') continue
    const cur = latest.get(s.device)
    if (cur === undefined || s.at > cur.at || (s.at === cur.at && statementId(s) > statementId(cur))) latest.set(s.device, s)
  }
  return statements.filter(s => s.t !== 'name' || latest.get(s.device) === s)
}

// --- names as shown ---

/**
 * Letters of other scripts that look like Latin ones (from Unicode's confusables, those a
 * device name is made of): a name written with them reads as the Latin one.
 */
const LOOKALIKES: Record<string, string> = {
  а: 'a', в: 'b', е: 'e', ё: 'e', з: '3', і: 'i', ї: 'i', ј: 'j', к: 'k', м: 'm', н: 'h', о: 'o', п: 'n', р: 'p', с: 'c', т: 't', у: 'y', х: 'x', ѕ: 's', ԁ: 'd', ԛ: 'q', ԝ: 'w', һ: 'h', ӏ: 'l',
  α: 'a', β: 'b', ε: 'e', η: 'n', ι: 'i', κ: 'k', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x', ω: 'w',
  '0': 'o', '1': 'l', '|': 'l', ı: 'i'
}

/**
 * What a name reads as: case, Unicode form, accents, invisible characters, spacing and letters
 * that look alike set aside. Two names with the same key cannot be told apart by eye.
 */
function nameKey (name: string): string {
  const plain = name.normalize('NFKD').replace(/[\p{M}\p{Cf}]/gu, '').toLowerCase()
  let out = ''
  for (const ch of plain) out += LOOKALIKES[ch] ?? ch
  return out.replace(/\s+/g, ' ').trim()
}

/** The name a member is shown with: its self-signed name, else what an act here recorded, else its key's start. */
export function plainName (v: MemberView): string {
  return v.signedName?.name ?? v.localName ?? v.key.slice(0, 8)
}

/** How this device is named where another device's row names it (as its introducer). */
export const THIS_DEVICE = 'this device'
/** The shortest start of a key a qualified name shows; longer where two would still read alike. */
const KEY_SHOWN = 8

/**
 * Names to show, by device. A member whose name reads like another member's, like this
 * device's own name, or like "this device" is shown qualified: with who added it (by the
 * name this device shows that device with, "this device" for itself) and its key's start,
 * so a newcomer cannot pass for a known device nor for this one. This device's own name is
 * never qualified. If two shown names would still read alike (a name made to look like a
 * qualified one, keys alike in their first characters), the plain one is qualified and the
 * qualified ones show more of their keys, until none do.
 */
export function displayNames (members: Map<string, MemberView>, self: { key: string | null; name: string }): Map<string, string> {
  const plain = new Map<string, string>()
  for (const [k, v] of members) plain.set(k, plainName(v))
  // names no member may read as unqualified: this device's, and how it names itself
  const reserved = new Set([nameKey(self.name), nameKey(THIS_DEVICE)])
  const count = new Map<string, number>()
  for (const n of plain.values()) count.set(nameKey(n), (count.get(nameKey(n)) ?? 0) + 1)
  /** per qualified member: how much of its key it shows */
  const qualified = new Map<string, number>()
  for (const [k, n] of plain) if ((count.get(nameKey(n)) ?? 0) > 1 || reserved.has(nameKey(n))) qualified.set(k, KEY_SHOWN)
  /** a member as another member's row names it: its name, and its key's start when it is qualified */
  const label = (k: string): string => {
    if (k === self.key) return THIS_DEVICE
    const n = plain.get(k)
    if (n === undefined) return k.slice(0, KEY_SHOWN) // not a member (any more)
    const shown = qualified.get(k)
    return shown === undefined ? n : `${n} (${k.slice(0, shown)})`
  }
  const show = (k: string): string => {
    const n = plain.get(k) as string
    const shown = qualified.get(k)
    if (shown === undefined) return n
    const by = (members.get(k) as MemberView).addedBy
    return `${n} (${by !== undefined ? `added by ${label(by)}, ` : ''}${k.slice(0, shown)})`
  }
  // bounded: each round qualifies a member or shows more of a key, and a whole key tells any two apart
  for (let round = 0; round <= members.size * 64; round++) {
    const byKey = new Map<string, string[]>()
    for (const k of members.keys()) {
      const key = nameKey(show(k))
      const same = byKey.get(key)
      if (same === undefined) byKey.set(key, [k])
      else same.push(k)
    }
    let changed = false
    for (const [key, same] of byKey) {
      if (same.length < 2 && !reserved.has(key)) continue
      for (const k of same) {
        const shown = qualified.get(k)
        if (shown === undefined) { qualified.set(k, KEY_SHOWN); changed = true } else if (shown < k.length) { qualified.set(k, Math.min(k.length, shown + 4)); changed = true }
      }
    }
    if (!changed) break
  }
  const out = new Map<string, string>()
  for (const k of members.keys()) out.set(k, show(k))
  return out
}

/** Whether two names would be shown as the same. */
export function sameName (a: string, b: string): boolean {
  return nameKey(a) === nameKey(b)
}
