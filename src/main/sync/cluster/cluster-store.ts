import { EventEmitter } from 'node:events'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import crypto from 'hypercore-crypto'
import { z } from 'zod'
import { consoleLogger, type Logger } from '../../../shared/logger'
import { writeStateFile } from '../../disk/state-file'
import { isHex32 } from '../../../shared/entry/hex32'
import { Hex32 } from '../../../shared/entry/hex32-schema'
import { SECRET_BYTES, clusterTopic, proof, verifyProof } from './cluster-keys'
import {
  NAME_MAX, STATEMENT_MAX_SKEW_MS, acceptStatements, cleanName, compact, displayNames, evaluate, parseStatement, plainName,
  signAdd, signName, signRemove, signerOf, statementId, verifyStatement,
  type Anchor, type Evaluation, type JoinSignature, type KeyPair, type LocalForget, type MembershipState, type Refusal, type Statement
} from './membership'

export { NAME_MAX }

/**
 * This device's view of its cluster (DESIGN.md, "Sync and trust"): the cluster secret,
 * who is a member, and the invites it has handed out. One JSON file, written atomically
 * (writeStateFile) with mode 0600 since it holds the secret.
 *
 * Who is a member is decided by the rule of membership.ts: this device's own acts (pairing,
 * forgetting) plus statements signed by the devices with the authority to make them. What
 * peers send unsigned (older versions) changes nothing here.
 *
 * A node works alone until it is paired: the secret is created the first time this
 * device invites another (ensureSecret) or received when it joins (setSecret).
 *
 * Mutations are in memory and saved in the background (soon; `seen` lazily); save()
 * writes now, flush() waits for pending writes. Keys are hex strings throughout.
 */

export interface DeviceRecord {
  key: string
  /** the name to show: its self-signed name, made distinguishable when another member has the same */
  name: string
  /** when its current membership began */
  addedAt: number
  lastSeen?: number
  /** the member whose signed add brought it in (undefined: paired here, vouched for, or from before signed pairing) */
  addedBy?: string
}
export interface ForgottenRecord { key: string; at: number }
/** An invite this device handed out (secret material: the file is 0600). */
export interface InviteRecord {
  /** blind-pairing invite id (hex) */
  id: string
  /** the invite's seed (hex): its key pair opens candidates' requests */
  seed: string
  /** the invite's own key (hex), whose discovery key candidates look for */
  key: string
  /** what the key was derived from with this device's key (membership.inviteKey): absent for invites of older versions */
  nonce?: string
  createdAt: number
  expiresAt: number
  /** set once used: invites are one-time */
  usedBy?: string
  usedAt?: number
}
/** The devices message of the `arbor/1` channel (structurally `DevicesMessage`). */
export interface DevicesList {
  /** every member (unsigned: for older peers, which act on it; ignored by this version) */
  devices: Array<{ key: string; name: string; addedAt: number }>
  /** devices no longer members (unsigned, likewise) */
  forgotten: ForgottenRecord[]
  /** the signed membership statements this device holds (membership.ts); absent from older peers */
  statements?: unknown[]
}
/** What the inviting device tells the device that joins. */
export interface WelcomeContent {
  inviter: { key: string; name: string }
  devices: Array<{ key: string; name: string; addedAt: number }>
  forgotten: ForgottenRecord[]
  statements: Statement[]
}
/** Who can remove a device from every device (see forgetScope). */
export interface ForgetScope {
  /** this device's forget is honoured everywhere (it paired the device) */
  everywhere: boolean
  /** the other devices whose forget would be (they paired it) */
  others: Array<{ key: string; name: string }>
  /** the members it paired (they stay when it goes; then the device that removed it may remove them everywhere) */
  paired: string[]
}

const Time = z.number().finite().nonnegative()
// Version 1 throughout: the membership section is optional, so today's and older Arbors both load the file
// (an older one ignores the section and keeps `devices`, the members, as its trusted list).
const ClusterFileSchema = z.object({
  v: z.literal(1),
  secret: Hex32.nullable(),
  name: z.string(),
  devices: z.array(z.object({ key: Hex32, name: z.string(), addedAt: Time, lastSeen: Time.optional() })),
  forgotten: z.array(z.object({ key: Hex32, at: Time })),
  invites: z.array(z.object({
    id: Hex32, seed: Hex32, key: Hex32, nonce: Hex32.optional(), createdAt: Time, expiresAt: Time, usedBy: Hex32.optional(), usedAt: Time.optional()
  })).default([]),
  membership: z.object({
    self: Hex32.nullable().default(null),
    anchors: z.array(z.object({ key: Hex32, at: Time, name: z.string(), by: Hex32.optional() })),
    forgets: z.array(z.object({ key: Hex32, at: Time, pending: z.boolean().optional() })),
    statements: z.array(z.unknown())
  }).optional()
})

/** The cluster file exists but cannot be used; it is never reset silently (it holds the secret). */
export class ClusterFileError extends Error {
  constructor (readonly file: string, problem: string) {
    super(`the cluster file ${file} ${problem}; fix it or move it away (Arbor does not reset it: it holds the cluster secret)`)
    this.name = 'ClusterFileError'
  }
}

export interface ClusterStoreOptions {
  file: string
  /** this device's public key (hex), so that merges never list it as a peer; settable later */
  device?: string
  /** this device's key pair, to sign its membership statements; settable later (useKeyPair) */
  keyPair?: KeyPair
  /** this device's name when the file does not exist yet (default: os.hostname()) */
  name?: string
  log?: Logger
  /** how long a `seen` may wait before it is written (default 30 s) */
  seenSaveDelayMs?: number
  /** the clock (tests) */
  now?: () => number
}

export function toHexKey (key: string | Buffer): string {
  const hex = typeof key === 'string' ? key.toLowerCase() : key.toString('hex')
  if (!isHex32(hex)) throw new TypeError(`not a device key (32 bytes, hex): ${String(hex).slice(0, 80)}`)
  return hex
}

const REFUSED: Record<Refusal['why'], string> = {
  malformed: 'it is not a statement this version knows (a newer Arbor?)',
  signature: 'its signature does not verify',
  signer: 'the device that signed it is not a member here',
  authority: 'only the device itself or the device that paired it can remove it',
  full: 'this device holds as many statements as it keeps'
}

/**
 * Sentence `arbor forget` prints: what was forgotten, and where.
 * `pending`: the signed forget is made when this device's node next runs.
 */
export function describeForget (name: string, scope: ForgetScope, pending: boolean): string {
  if (scope.everywhere) {
    const paired = scope.paired.length === 0 ? '' : `. It paired ${scope.paired.join(', ')}: they stay; if you do not know them, forget them here too, which now removes them everywhere`
    return (pending
      ? `forgot ${name}: it is no longer accepted here; this device paired it, so your other devices drop it too once this device's node runs (\`arbor serve\`) and reaches them`
      : `forgot ${name}: it is no longer accepted here, and your other devices drop it as they hear of it (this device paired it)`) + paired
  }
  if (scope.others.length > 0) {
    const who = scope.others.map(o => o.name).join(' or ')
    return `forgot ${name} here: this device no longer accepts it. ${who} paired it — forget it there to remove it from every device`
  }
  return `forgot ${name} here: this device no longer accepts it. It was paired before devices signed their pairings (or by an older Arbor), so each device decides for itself: forget it on each of your devices to remove it everywhere`
}

interface FileData {
  secret: string | null
  name: string
  invites: InviteRecord[]
}

/**
 * What a ClusterStore tells: `devices` when who is a member, their names or the statements
 * held changed (however it came: an act here, a peer, a statement becoming due), `invites`
 * when invites were added or pruned, `secret` when this device got its cluster secret.
 */
export interface ClusterStoreEvents {
  devices: []
  invites: []
  secret: []
}

export class ClusterStore extends EventEmitter<ClusterStoreEvents> {
  readonly file: string
  private readonly log: Logger
  private readonly seenDelay: number
  private readonly now: () => number
  private data: FileData
  private m: MembershipState
  private readonly lastSeen = new Map<string, number>()
  private keyPair: KeyPair | null = null
  private view: Evaluation | null = null
  /** what the 'devices' event last reported: members and their names */
  private reported = ''
  private dueTimer: NodeJS.Timeout | null = null
  /** refusals and unsigned lists already logged (every connection sends the whole set again) */
  private readonly logged = new Set<string>()
  private secretBuf: Buffer | null = null
  private topicBuf: Buffer | null = null
  private writing: Promise<void> = Promise.resolve()
  private timer: NodeJS.Timeout | null = null
  private timerDue = Infinity

  constructor (opts: ClusterStoreOptions) {
    super()
    this.file = path.resolve(opts.file)
    this.log = opts.log ?? consoleLogger('cluster')
    this.seenDelay = opts.seenSaveDelayMs ?? 30_000
    this.now = opts.now ?? Date.now
    this.data = { secret: null, name: cleanName(opts.name ?? os.hostname()), invites: [] }
    this.m = { self: opts.device !== undefined ? toHexKey(opts.device) : null, anchors: [], forgets: [], statements: [] }
    if (opts.keyPair !== undefined) this.useKeyPair(opts.keyPair)
    this.reported = this.membersDigest()
  }

  /** Opens a store: loads the file if it exists. */
  static async open (opts: ClusterStoreOptions): Promise<ClusterStore> {
    const s = new ClusterStore(opts)
    await s.load()
    return s
  }

  /** This device's public key (hex), or null while unknown. */
  get device (): string | null { return this.m.self }
  set device (key: string | null) {
    this.m = { ...this.m, self: key === null ? null : toHexKey(key) }
    this.view = null
  }

  /**
   * Gives the store this device's key pair, so it signs what the user does here (its name,
   * its forgets, the devices it pairs). Forgets made while it had none are signed now.
   */
  useKeyPair (kp: KeyPair): void {
    const self = kp.publicKey.toString('hex')
    if (this.m.self !== null && this.m.self !== self) throw new Error(`the key pair given is not this device's (${this.m.self.slice(0, 12)})`)
    this.keyPair = { publicKey: Buffer.from(kp.publicKey), secretKey: Buffer.from(kp.secretKey) }
    this.m = { ...this.m, self }
    this.view = null
    const pending = this.m.forgets.filter(f => f.pending === true)
    if (pending.length > 0) {
      this.m = {
        ...this.m,
        forgets: this.m.forgets.map(f => (f.pending === true ? { key: f.key, at: f.at } : f)),
        statements: [...this.m.statements, ...pending.map(f => signRemove(this.keyPair as KeyPair, f.key, f.at))]
      }
    }
    const named = this.signSelfName()
    if (pending.length > 0 || named) this.changed()
  }

  /** Whether the store can sign (it was given this device's key pair). */
  get canSign (): boolean { return this.keyPair !== null }

  /** Reads the file (a missing file is a fresh, unpaired device). Throws ClusterFileError if it is unusable. */
  async load (): Promise<void> {
    let text: string
    try {
      text = await fs.readFile(this.file, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
      throw new ClusterFileError(this.file, `cannot be read (${(err as Error).message})`)
    }
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      throw new ClusterFileError(this.file, 'is corrupt (not JSON)')
    }
    if (json !== null && typeof json === 'object' && 'v' in json && json.v !== 1) {
      throw new ClusterFileError(this.file, `has version ${String(json.v)}, which this Arbor does not know (a newer Arbor wrote it?)`)
    }
    const parsed = ClusterFileSchema.safeParse(json)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      throw new ClusterFileError(this.file, `is corrupt (${issue === undefined ? 'invalid' : `${issue.path.join('.') || 'top level'}: ${issue.message}`})`)
    }
    const f = parsed.data
    this.data = { secret: f.secret, name: f.name, invites: f.invites }
    this.lastSeen.clear()
    for (const d of f.devices) if (d.lastSeen !== undefined) this.lastSeen.set(d.key, d.lastSeen)
    const self = this.m.self ?? f.membership?.self ?? null
    if (f.membership === undefined) {
      // Written before signed statements: its devices were trusted by the user's acts, and stay so.
      this.m = { self, anchors: f.devices.map(d => ({ key: d.key, at: d.addedAt, name: d.name })), forgets: f.forgotten.map(x => ({ ...x })), statements: [] }
    } else {
      const statements: Statement[] = []
      for (const raw of f.membership.statements) {
        const s = parseStatement(raw)
        if (s !== null && verifyStatement(s)) statements.push(s)
        else this.log.warn(`the cluster file ${this.file} holds a membership statement this Arbor cannot use; it is left out`)
      }
      const anchors = f.membership.anchors.map(a => { const x: Anchor = { key: a.key, at: a.at, name: a.name }; if (a.by !== undefined) x.by = a.by; return x })
      const forgets = f.membership.forgets.map(x => { const y: LocalForget = { key: x.key, at: x.at }; if (x.pending === true) y.pending = true; return y })
      this.m = { self, anchors, forgets, statements }
    }
    this.view = null
    this.secretBuf = this.data.secret === null ? null : Buffer.from(this.data.secret, 'hex')
    this.topicBuf = null
    if (this.keyPair !== null) this.useKeyPair(this.keyPair)
    this.reported = this.membersDigest()
    this.watchDue()
  }

  /** What the file holds: the membership section, and the members and forgets as older versions read them. */
  private fileJson (): object {
    const view = this.currentView()
    return {
      v: 1,
      secret: this.data.secret,
      name: this.data.name,
      devices: [...view.members.values()].map(v => {
        const d: { key: string; name: string; addedAt: number; lastSeen?: number } = { key: v.key, name: plainName(v), addedAt: v.since }
        const seen = this.lastSeen.get(v.key)
        if (seen !== undefined) d.lastSeen = seen
        return d
      }),
      forgotten: this.forgotten(),
      invites: this.data.invites,
      membership: { self: this.m.self, anchors: this.m.anchors, forgets: this.m.forgets, statements: this.m.statements }
    }
  }

  /** Writes the file now (whole, durably, mode 0600); writes in a burst are one write of the state as it then is. */
  save (): Promise<void> {
    this.clearTimer()
    this.writing = writeStateFile(this.file, () => JSON.stringify(this.fileJson(), null, 2) + '\n', { mode: 0o600 })
    return this.writing
  }

  /** Waits until every change made so far is on disk. */
  async flush (): Promise<void> {
    if (this.timer !== null) await this.save()
    else await this.writing
  }

  /** Flushes pending writes; the store stays usable (a later change schedules a new write). */
  async close (): Promise<void> {
    if (this.dueTimer !== null) clearTimeout(this.dueTimer)
    this.dueTimer = null
    await this.flush()
  }

  private schedule (delayMs = 0): void {
    const due = Date.now() + delayMs
    if (this.timer !== null && this.timerDue <= due) return
    this.clearTimer()
    this.timerDue = due
    this.timer = setTimeout(() => {
      this.timer = null
      this.timerDue = Infinity
      this.save().catch((err: Error) => this.log.warn(`could not save ${this.file}: ${err.message}`))
    }, delayMs)
    this.timer.unref()
  }

  private clearTimer (): void {
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    this.timerDue = Infinity
  }

  // --- this device and the secret ---

  get name (): string { return this.data.name }
  setName (name: string): void {
    const n = cleanName(name)
    if (n === '' || n === this.data.name) return
    this.data.name = n
    this.schedule()
    if (this.signSelfName()) this.changed()
  }

  get secret (): Buffer | null { return this.secretBuf === null ? null : Buffer.from(this.secretBuf) }

  /** The secret, created now if this device has none yet (the first time it invites). */
  ensureSecret (): Buffer {
    if (this.secretBuf === null) this.setSecret(crypto.randomBytes(SECRET_BYTES))
    return this.secret as Buffer
  }

  /** Adopts the secret of the cluster this device joins. */
  setSecret (secret: Buffer): void {
    if (!Buffer.isBuffer(secret) || secret.byteLength !== SECRET_BYTES) throw new TypeError(`a cluster secret is ${SECRET_BYTES} bytes`)
    if (this.secretBuf !== null && this.secretBuf.equals(secret)) return
    this.secretBuf = Buffer.from(secret)
    this.data.secret = secret.toString('hex')
    this.topicBuf = null
    this.schedule()
    if (this.signSelfName()) this.changed()
    this.emit('secret')
  }

  /** The cluster's Hyperswarm topic, or null while this device is in no cluster. */
  topic (): Buffer | null {
    if (this.secretBuf === null) return null
    if (this.topicBuf === null) this.topicBuf = clusterTopic(this.secretBuf)
    return this.topicBuf
  }

  /** Our capability proof for a connection (pass our stream.isInitiator); null without a secret. */
  proof (handshakeHash: Buffer, isInitiator: boolean): Buffer | null {
    return this.secretBuf === null ? null : proof(this.secretBuf, handshakeHash, isInitiator)
  }

  /** Whether `candidate` is the proof of the side whose role is `isInitiator` (for the remote: !stream.isInitiator). */
  verifyProof (handshakeHash: Buffer, isInitiator: boolean, candidate: Buffer): boolean {
    return this.secretBuf !== null && verifyProof(this.secretBuf, handshakeHash, isInitiator, candidate)
  }

  // --- membership ---

  /** The evaluation now (again once a statement that was ahead has become due). */
  private currentView (): Evaluation {
    const now = this.now()
    if (this.view === null || (this.view.nextDue !== undefined && now >= this.view.nextDue)) this.view = evaluate(this.m, now)
    return this.view
  }

  private names (): Map<string, string> {
    return displayNames(this.currentView().members, { key: this.m.self, name: this.data.name })
  }

  /** A device's name as shown here (this device's own for itself, its key's start if unknown). */
  nameOf (key: string): string {
    if (key === this.m.self) return this.data.name
    return this.names().get(key) ?? key.slice(0, 8)
  }

  /** Who is a member under which name, and which statements this device holds (new ones are news for the peers). */
  private membersDigest (): string {
    return [...[...this.names()].map(([k, n]) => `${k}=${n}`).sort(), ...this.m.statements.map(statementId).sort()].join('\n')
  }

  /** After a change of the membership state: save soon, and tell listeners if members, names or statements changed. */
  private changed (): void {
    this.view = null
    this.schedule()
    this.watchDue()
    const digest = this.membersDigest()
    if (digest !== this.reported) { this.reported = digest; this.emit('devices') }
  }

  /** A statement dated ahead becomes due later: look again then, so the change is reported. */
  private watchDue (): void {
    if (this.dueTimer !== null) clearTimeout(this.dueTimer)
    this.dueTimer = null
    const due = this.currentView().nextDue
    if (due === undefined) return
    this.dueTimer = setTimeout(() => { this.dueTimer = null; this.changed() }, Math.min(Math.max(0, due - this.now()) + 1, 24 * 3600_000))
    this.dueTimer.unref()
  }

  /** A date for an act here on `key` later than everything known of it (so the act takes effect). */
  private actDate (key: string, at: number): number {
    const horizon = this.now() + STATEMENT_MAX_SKEW_MS
    let latest = -Infinity
    for (const a of this.m.anchors) if (a.key === key) latest = Math.max(latest, a.at)
    for (const f of this.m.forgets) if (f.key === key) latest = Math.max(latest, f.at)
    for (const s of this.m.statements) if (s.t !== 'name' && s.device === key && s.at <= horizon) latest = Math.max(latest, s.at)
    return Math.max(at, latest + 1)
  }

  /** Signs this device's name when its latest signed one differs (only once it is in a cluster: peers are who read it). */
  private signSelfName (): boolean {
    const kp = this.keyPair
    const self = this.m.self
    if (kp === null || self === null || this.secretBuf === null) return false
    let cur: { name: string; at: number } | undefined
    for (const s of this.m.statements) {
      if (s.device !== self || s.t === 'remove') continue
      const c = s.t === 'name' ? { name: s.name, at: s.at } : { name: s.name, at: s.join.at }
      if (cur === undefined || c.at >= cur.at) cur = c
    }
    if (cur?.name === this.data.name) return false
    const st = signName(kp, this.data.name, Math.max(this.now(), (cur?.at ?? 0) + 1))
    this.m = { ...this.m, statements: compact([...this.m.statements, st]) }
    return true
  }

  /** Trusts a device by an act on this device (pairing). This is the way back for a device forgotten here. */
  trust (key: string | Buffer, name: string, at = this.now()): void {
    const hex = toHexKey(key)
    if (hex === this.m.self) return
    const existing = this.m.anchors.find(a => a.key === hex && a.by === undefined)
    const anchor: Anchor = { key: hex, at: this.actDate(hex, at), name: cleanName(name) || existing?.name || hex.slice(0, 8) }
    const anchors = existing !== undefined ? this.m.anchors.map(a => (a === existing ? anchor : a)) : [...this.m.anchors, anchor]
    this.m = { ...this.m, anchors, forgets: this.m.forgets.filter(f => f.key !== hex) }
    this.changed()
  }

  /**
   * Records a device paired here (this device answered its invite): trusted here and, when
   * it co-signed its request and the invite is bound to this device, a signed add the
   * others honour. Returns the add (or null) and an undo, for when the pairing cannot be completed.
   */
  admit (c: { key: string; name: string; join?: JoinSignature }, invite: InviteRecord, at = this.now()): { add: Statement | null; undo: () => void } {
    const hex = toHexKey(c.key)
    const before = this.m
    const anchorAt = this.actDate(hex, at)
    let add: Statement | null = null
    if (c.join !== undefined && invite.nonce !== undefined && this.keyPair !== null) {
      const s = signAdd(this.keyPair, { device: hex, name: c.name, join: c.join, nonce: invite.nonce, at: anchorAt })
      if (verifyStatement(s)) add = s
      else this.log.warn(`${c.name} (${hex.slice(0, 8)}) is paired with this device only: its pairing request was not co-signed for this invite, so the other devices will not take it from here`)
    } else {
      this.log.info(`${c.name} (${hex.slice(0, 8)}) is paired with this device only (${c.join === undefined ? 'it runs an older Arbor' : 'the invite was made by an older Arbor'}): the other devices learn of it from this one only when they run an older Arbor too`)
    }
    // the anchor and the add together: the peers hear of both at once
    if (add !== null) this.m = { ...this.m, statements: [...this.m.statements, add] }
    this.trust(hex, c.name, anchorAt)
    const undo = (): void => {
      this.m = {
        ...this.m,
        anchors: [...this.m.anchors.filter(a => a.key !== hex), ...before.anchors.filter(a => a.key === hex)],
        forgets: [...this.m.forgets.filter(f => f.key !== hex), ...before.forgets.filter(f => f.key === hex)],
        statements: this.m.statements.filter(s => s !== add)
      }
      this.changed()
    }
    return { add, undo }
  }

  /** Undoes a trust() that could not be completed (records no forget). */
  untrust (key: string | Buffer): void {
    const hex = toHexKey(key)
    const anchors = this.m.anchors.filter(a => !(a.key === hex && a.by === undefined))
    if (anchors.length === this.m.anchors.length) return
    this.m = { ...this.m, anchors }
    this.changed()
  }

  /**
   * Forgets a device here: no longer trusted, and brought back only by pairing it here again.
   * Signed (now, or when the key pair is given) so the others honour it where this device
   * has the authority (it paired the device): see forgetScope.
   */
  forget (key: string | Buffer, at = this.now()): boolean {
    const hex = toHexKey(key)
    if (hex === this.m.self) return false
    const had = this.currentView().members.has(hex)
    const when = this.actDate(hex, at)
    const f: LocalForget = { key: hex, at: when }
    if (this.keyPair === null) f.pending = true
    this.m = {
      ...this.m,
      forgets: [...this.m.forgets.filter(x => x.key !== hex), f],
      statements: this.keyPair === null ? this.m.statements : [...this.m.statements, signRemove(this.keyPair, hex, when)]
    }
    this.changed()
    return had
  }

  /** Whose forget of a member is honoured on every device: this device's, or the others named. */
  forgetScope (key: string | Buffer): ForgetScope {
    const hex = toHexKey(key)
    const view = this.currentView()
    const authority = view.members.get(hex)?.authority ?? []
    return {
      everywhere: this.m.self !== null && authority.includes(this.m.self),
      others: authority.filter(k => k !== this.m.self).map(k => ({ key: k, name: this.nameOf(k) })),
      paired: [...view.members.values()].filter(v => v.addedBy === hex).map(v => this.nameOf(v.key))
    }
  }

  /** This device itself counts as trusted. */
  isTrusted (key: string | Buffer): boolean {
    let hex: string
    try { hex = toHexKey(key) } catch { return false }
    return hex === this.m.self || this.currentView().members.has(hex)
  }

  /** The other members (copies), with the names to show. */
  devices (): DeviceRecord[] {
    const names = this.names()
    return [...this.currentView().members.values()].map(v => {
      const d: DeviceRecord = { key: v.key, name: names.get(v.key) ?? plainName(v), addedAt: v.since }
      const seen = this.lastSeen.get(v.key)
      if (seen !== undefined) d.lastSeen = seen
      if (v.addedBy !== undefined) d.addedBy = v.addedBy
      return d
    })
  }

  /** Devices that are not members (forgotten here, or removed by a statement honoured here), with the latest date. */
  forgotten (): ForgottenRecord[] {
    const view = this.currentView()
    const out = new Map<string, number>()
    for (const f of this.m.forgets) out.set(f.key, Math.max(out.get(f.key) ?? -Infinity, f.at))
    for (const r of view.removed.values()) out.set(r.key, Math.max(out.get(r.key) ?? -Infinity, r.at))
    return [...out].filter(([k]) => !view.members.has(k)).map(([key, at]) => ({ key, at }))
  }

  /** The signed statements this device holds (copies of the list). */
  statements (): Statement[] {
    return [...this.m.statements]
  }

  /** Records that a trusted device was heard from (written lazily). */
  seen (key: string | Buffer, at = this.now()): void {
    let hex: string
    try { hex = toHexKey(key) } catch { return }
    if (!this.currentView().members.has(hex)) return
    const last = this.lastSeen.get(hex)
    if (last !== undefined && last >= at) return
    this.lastSeen.set(hex, at)
    this.schedule(this.seenDelay)
  }

  /**
   * What this device tells its peers: the signed statements, and, for older versions, every
   * member it knows (itself first when its key is set) and who is not one any more.
   */
  devicesMessage (): DevicesList {
    const names = this.names()
    const devices = [...this.currentView().members.values()].map(v => ({ key: v.key, name: names.get(v.key) ?? plainName(v), addedAt: v.since }))
    if (this.m.self !== null) devices.unshift({ key: this.m.self, name: this.data.name, addedAt: 0 })
    return { devices, forgotten: this.forgotten(), statements: [...this.m.statements] }
  }

  /**
   * Learns from a trusted peer (`from`, hex; nothing is learnt from others): the statements
   * the rule of membership.ts accepts. The unsigned lists change nothing (an older peer's are
   * logged once, in words), except that an older device's own name for itself is kept while
   * it has signed none. Returns whether anything was learnt (the peers should hear it too).
   */
  merge (msg: DevicesList, from?: string): boolean {
    if (from !== undefined && !this.isTrusted(from)) return false
    const result = acceptStatements(this.m, msg.statements ?? [], this.now())
    this.m = result.state
    this.logRefusals(result.refused, from)
    const renamed = from !== undefined && this.legacyName(msg, from)
    this.logUnsigned(msg, from)
    if (result.accepted.length === 0 && !renamed) return false
    this.changed()
    return true
  }

  /** An older device names itself in its unsigned list (over its own authenticated connection): kept until it signs a name. */
  private legacyName (msg: DevicesList, from: string): boolean {
    const v = this.currentView().members.get(from)
    const said = msg.devices.find(d => d.key === from)
    if (v === undefined || v.signedName !== undefined || said === undefined) return false
    const name = cleanName(said.name)
    if (name === '' || !this.m.anchors.some(a => a.key === from && a.name !== name)) return false
    this.m = { ...this.m, anchors: this.m.anchors.map(a => (a.key === from ? { ...a, name } : a)) }
    return true
  }

  private logUnsigned (msg: DevicesList, from: string | undefined): void {
    const view = this.currentView()
    const adds = msg.devices.filter(d => isHex32(d.key) && d.key !== this.m.self && !view.members.has(d.key))
    const removes = msg.forgotten.filter(f => view.members.has(f.key))
    if (adds.length + removes.length === 0) return
    const tag = `unsigned ${from ?? 'welcome'}`
    if (this.logged.has(tag)) return
    this.logged.add(tag)
    const who = from === undefined ? 'the inviting device' : this.nameOf(from)
    const what = [adds.length > 0 ? `${adds.length} device${adds.length === 1 ? '' : 's'} to add` : '', removes.length > 0 ? `${removes.length} to remove` : ''].filter(w => w !== '').join(' and ')
    const older = msg.statements === undefined
    const text = `${who} listed ${what} without signed statements${older ? ' (it runs an older Arbor)' : ''}; ignored: a device joins or leaves this device's cluster only by its own pairing, a forget made here, or a statement signed by a device with the authority to make it`
    if (older) this.log.warn(text)
    else this.log.info(text)
  }

  private logRefusals (refused: Refusal[], from: string | undefined): void {
    const who = from === undefined ? 'the inviting device' : this.nameOf(from)
    for (const r of refused) {
      const tag = r.id ?? `${r.why} ${from ?? ''}`
      if (this.logged.has(tag)) continue
      this.logged.add(tag)
      const text = `ignored ${r.statement === undefined ? 'a statement' : this.describe(r.statement)} from ${who}: ${REFUSED[r.why]}`
      // a member's forget of a device it did not pair is its own business (forgotten there only): no cause for alarm
      if (r.why === 'authority' && r.statement !== undefined && this.isTrusted(signerOf(r.statement))) this.log.info(text)
      else this.log.warn(text)
    }
  }

  private describe (s: Statement): string {
    switch (s.t) {
      case 'add': return `the addition of ${s.name} (${s.device.slice(0, 8)}) signed by ${this.nameOf(s.by)}`
      case 'remove': return `the removal of ${this.nameOf(s.device)} signed by ${this.nameOf(s.by)}`
      case 'name': return `the renaming of ${this.nameOf(s.device)} to ${s.name}`
    }
  }

  // --- pairing (see pairing.ts) ---

  /**
   * What this device, answering an invite, tells the device that joins: its members (the
   * new device trusts them on this device's word, the user's act of joining here), the
   * devices forgotten here, and the statements about the members.
   * `legacy`: for an older device, which reads the lists only: every device not a member is listed as forgotten.
   */
  welcomeFor (joiner: string, legacy: boolean): WelcomeContent {
    const view = this.currentView()
    const names = this.names()
    const members = [...view.members.values()].filter(v => v.key !== joiner)
    const about = new Set([...members.map(v => v.key), joiner, this.m.self ?? ''])
    // most useful first (a welcome carries what fits): the joiner's own add, the members' adds, then names
    const rank = (s: Statement): number => (s.t === 'add' && s.device === joiner ? 0 : s.t === 'add' ? 1 : 2)
    return {
      inviter: { key: this.m.self ?? '', name: this.data.name },
      devices: members.map(v => ({ key: v.key, name: legacy ? names.get(v.key) ?? plainName(v) : plainName(v), addedAt: v.since })),
      forgotten: legacy ? this.forgotten() : this.m.forgets.filter(f => !view.members.has(f.key)).map(f => ({ key: f.key, at: f.at })),
      statements: this.m.statements.filter(s => s.t !== 'remove' && about.has(s.device)).sort((a, b) => rank(a) - rank(b) || b.at - a.at)
    }
  }

  /**
   * Takes in the welcome of the device this one joined through: trusts it (the user's act),
   * and the members it lists on its word (vouched: members here, with no authority over
   * them); what it forgot is forgotten here too; its statements are taken as from a peer.
   */
  adoptWelcome (w: WelcomeContent, at = this.now()): void {
    const inviter = toHexKey(w.inviter.key)
    const anchors = [...this.m.anchors]
    const put = (a: Anchor): void => {
      const i = anchors.findIndex(x => x.key === a.key && x.by === a.by)
      if (i >= 0) anchors[i] = a
      else anchors.push(a)
    }
    put({ key: inviter, at: this.actDate(inviter, at), name: cleanName(w.inviter.name) || inviter.slice(0, 8) })
    const forgets = this.m.forgets.filter(f => f.key !== inviter)
    for (const f of w.forgotten) {
      if (isHex32(f.key) && f.key !== this.m.self && f.key !== inviter && Number.isFinite(f.at) && !forgets.some(x => x.key === f.key)) forgets.push({ key: f.key, at: f.at })
    }
    // What this device forgot itself and the welcome lists: joining again is the user's act
    // here, so it takes them back as if paired here (the others take them on the inviter's word).
    const forgotHere = new Set([...this.m.forgets.map(f => f.key), ...this.m.statements.filter(s => s.t === 'remove' && s.by === this.m.self).map(s => s.device)])
    const listed = new Set<string>()
    for (const d of w.devices) {
      if (!isHex32(d.key) || d.key === this.m.self || d.key === inviter) continue
      listed.add(d.key)
      const name = cleanName(d.name) || d.key.slice(0, 8)
      if (forgotHere.has(d.key)) put({ key: d.key, at: this.actDate(d.key, at), name })
      else put({ key: d.key, at, name, by: inviter })
    }
    this.m = { ...this.m, anchors, forgets: forgets.filter(f => !listed.has(f.key)) }
    const result = acceptStatements(this.m, w.statements, this.now())
    this.m = result.state
    this.logRefusals(result.refused, undefined)
    this.changed()
  }

  // --- invites (see pairing.ts) ---

  invites (): InviteRecord[] {
    return this.data.invites.map(i => ({ ...i }))
  }

  invite (id: string): InviteRecord | undefined {
    const i = this.data.invites.find(x => x.id === id)
    return i === undefined ? undefined : { ...i }
  }

  addInvite (rec: InviteRecord): void {
    this.data.invites.push({ ...rec })
    this.schedule()
    this.emit('invites')
  }

  /** Marks an invite used (one-time); false if it is unknown or already used. */
  useInvite (id: string, by: string, at = Date.now()): boolean {
    const i = this.data.invites.find(x => x.id === id)
    if (i === undefined || i.usedBy !== undefined) return false
    i.usedBy = toHexKey(by)
    i.usedAt = at
    this.schedule()
    return true
  }

  /** Undoes useInvite (when the pairing could not be completed). */
  unuseInvite (id: string): void {
    const i = this.data.invites.find(x => x.id === id)
    if (i === undefined) return
    delete i.usedBy
    delete i.usedAt
    this.schedule()
  }

  /** Drops invites that expired at least `graceMs` ago. Returns how many. */
  pruneInvites (now = Date.now(), graceMs = 0): number {
    const before = this.data.invites.length
    this.data.invites = this.data.invites.filter(i => i.expiresAt + graceMs > now)
    const dropped = before - this.data.invites.length
    if (dropped > 0) { this.schedule(); this.emit('invites') }
    return dropped
  }
}
