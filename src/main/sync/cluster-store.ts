import { EventEmitter } from 'node:events'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import crypto from 'hypercore-crypto'
import { z } from 'zod'
import { consoleLogger, type Logger } from '../../shared/logger'
import { SECRET_BYTES, clusterTopic, proof, verifyProof } from './cluster-keys'

/**
 * This device's view of its cluster (DESIGN.md, "Sync and trust"): the cluster secret,
 * the paired devices, the devices forgotten, and the invites it has handed out. One JSON
 * file, written atomically (tmp + rename) with mode 0600 since it holds the secret.
 *
 * A node works alone until it is paired: the secret is created the first time this
 * device invites another (ensureSecret) or received when it joins (setSecret).
 *
 * Mutations are in memory and saved in the background (soon; `seen` lazily); save()
 * writes now, flush() waits for pending writes. Keys are hex strings throughout.
 */

export interface DeviceRecord { key: string; name: string; addedAt: number; lastSeen?: number }
export interface ForgottenRecord { key: string; at: number }
/** An invite this device handed out (secret material: the file is 0600). */
export interface InviteRecord {
  /** blind-pairing invite id (hex) */
  id: string
  /** the invite's seed (hex): its key pair opens candidates' requests */
  seed: string
  /** the invite's own key (hex), whose discovery key candidates look for */
  key: string
  createdAt: number
  expiresAt: number
  /** set once used: invites are one-time */
  usedBy?: string
  usedAt?: number
}
/** The devices message of the `arbor/1` channel (structurally `DevicesMessage`). */
export interface DevicesList {
  devices: Array<{ key: string; name: string; addedAt: number }>
  forgotten: ForgottenRecord[]
}

export const NAME_MAX = 200
const HEX32 = /^[0-9a-f]{64}$/

const Hex32 = z.string().regex(HEX32)
const Time = z.number().finite().nonnegative()
const ClusterFileSchema = z.object({
  v: z.literal(1),
  secret: Hex32.nullable(),
  name: z.string(),
  devices: z.array(z.object({ key: Hex32, name: z.string(), addedAt: Time, lastSeen: Time.optional() })),
  forgotten: z.array(z.object({ key: Hex32, at: Time })),
  invites: z.array(z.object({
    id: Hex32, seed: Hex32, key: Hex32, createdAt: Time, expiresAt: Time, usedBy: Hex32.optional(), usedAt: Time.optional()
  })).default([])
})
type ClusterFile = z.infer<typeof ClusterFileSchema>

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
  /** this device's name when the file does not exist yet (default: os.hostname()) */
  name?: string
  log?: Logger
  /** how long a `seen` may wait before it is written (default 30 s) */
  seenSaveDelayMs?: number
}

export function toHexKey (key: string | Buffer): string {
  const hex = typeof key === 'string' ? key.toLowerCase() : key.toString('hex')
  if (!HEX32.test(hex)) throw new TypeError(`not a device key (32 bytes, hex): ${String(hex).slice(0, 80)}`)
  return hex
}

function cleanName (name: string): string {
  return String(name).trim().slice(0, NAME_MAX)
}

export class ClusterStore extends EventEmitter {
  readonly file: string
  device: string | null
  private readonly log: Logger
  private readonly seenDelay: number
  private data: ClusterFile
  private secretBuf: Buffer | null = null
  private topicBuf: Buffer | null = null
  private writing: Promise<void> = Promise.resolve()
  private timer: NodeJS.Timeout | null = null
  private timerDue = Infinity
  private tmpCounter = 0

  constructor (opts: ClusterStoreOptions) {
    super()
    this.file = path.resolve(opts.file)
    this.device = opts.device !== undefined ? toHexKey(opts.device) : null
    this.log = opts.log ?? consoleLogger('cluster')
    this.seenDelay = opts.seenSaveDelayMs ?? 30_000
    this.data = { v: 1, secret: null, name: cleanName(opts.name ?? os.hostname()), devices: [], forgotten: [], invites: [] }
  }

  /** Opens a store: loads the file if it exists. */
  static async open (opts: ClusterStoreOptions): Promise<ClusterStore> {
    const s = new ClusterStore(opts)
    await s.load()
    return s
  }

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
    this.data = parsed.data
    this.secretBuf = this.data.secret === null ? null : Buffer.from(this.data.secret, 'hex')
    this.topicBuf = null
  }

  /** Writes the file now (atomically, mode 0600). Writes are serialized. */
  save (): Promise<void> {
    this.clearTimer()
    const text = JSON.stringify(this.data, null, 2) + '\n'
    const next = this.writing.catch(() => undefined).then(() => this.write(text))
    this.writing = next
    return next
  }

  /** Waits until every change made so far is on disk. */
  async flush (): Promise<void> {
    if (this.timer !== null) await this.save()
    else await this.writing
  }

  /** Flushes pending writes; the store stays usable (a later change schedules a new write). */
  async close (): Promise<void> {
    await this.flush()
  }

  private async write (text: string): Promise<void> {
    const dir = path.dirname(this.file)
    await fs.mkdir(dir, { recursive: true, mode: 0o700 })
    const tmp = `${this.file}.${process.pid}.${++this.tmpCounter}.tmp`
    const fh = await fs.open(tmp, 'w', 0o600)
    try {
      await fh.writeFile(text, 'utf8')
      await fh.sync()
    } finally {
      await fh.close()
    }
    try {
      await fs.rename(tmp, this.file)
    } catch (err) {
      await fs.rm(tmp, { force: true })
      throw err
    }
    // the rename itself is durable once the directory is synced (best effort: not on every platform)
    try {
      const d = await fs.open(dir, 'r')
      try { await d.sync() } finally { await d.close() }
    } catch {
      // directories cannot be opened or synced on some platforms
    }
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

  // --- devices ---

  /** Trusts a device explicitly (pairing). This is the only way back for a forgotten device. */
  trust (key: string | Buffer, name: string, at = Date.now()): void {
    const hex = toHexKey(key)
    if (hex === this.device) return
    this.data.forgotten = this.data.forgotten.filter(f => f.key !== hex)
    const existing = this.data.devices.find(d => d.key === hex)
    if (existing !== undefined) {
      existing.name = cleanName(name) || existing.name
      existing.addedAt = at
    } else {
      this.data.devices.push({ key: hex, name: cleanName(name) || hex.slice(0, 8), addedAt: at })
    }
    this.schedule()
    this.emit('devices')
  }

  /** Undoes a trust() that could not be completed (records no forget). */
  untrust (key: string | Buffer): void {
    const hex = toHexKey(key)
    const before = this.data.devices.length
    this.data.devices = this.data.devices.filter(d => d.key !== hex)
    if (this.data.devices.length !== before) { this.schedule(); this.emit('devices') }
  }

  /** Forgets a device: no longer trusted, and never trusted again through a merge. */
  forget (key: string | Buffer, at = Date.now()): boolean {
    const hex = toHexKey(key)
    const had = this.data.devices.some(d => d.key === hex)
    this.data.devices = this.data.devices.filter(d => d.key !== hex)
    this.recordForgotten(hex, at)
    this.schedule()
    this.emit('devices')
    return had
  }

  private recordForgotten (hex: string, at: number): boolean {
    const f = this.data.forgotten.find(x => x.key === hex)
    if (f === undefined) { this.data.forgotten.push({ key: hex, at }); return true }
    if (at > f.at) { f.at = at; return true }
    return false
  }

  /** This device itself counts as trusted. */
  isTrusted (key: string | Buffer): boolean {
    let hex: string
    try { hex = toHexKey(key) } catch { return false }
    return hex === this.device || this.data.devices.some(d => d.key === hex)
  }

  /** The other paired devices (copies). */
  devices (): DeviceRecord[] {
    return this.data.devices.map(d => ({ ...d }))
  }

  forgotten (): ForgottenRecord[] {
    return this.data.forgotten.map(f => ({ ...f }))
  }

  /** Records that a trusted device was heard from (written lazily). */
  seen (key: string | Buffer, at = Date.now()): void {
    let hex: string
    try { hex = toHexKey(key) } catch { return }
    const d = this.data.devices.find(x => x.key === hex)
    if (d === undefined || (d.lastSeen !== undefined && d.lastSeen >= at)) return
    d.lastSeen = at
    this.schedule(this.seenDelay)
  }

  /** What this device tells its peers: every member it knows (itself included when its key is set), and who was forgotten. */
  devicesMessage (): DevicesList {
    const devices = this.data.devices.map(d => ({ key: d.key, name: d.name, addedAt: d.addedAt }))
    if (this.device !== null) devices.unshift({ key: this.device, name: this.data.name, addedAt: 0 })
    return { devices, forgotten: this.forgotten() }
  }

  /**
   * Learns the cluster's members from a trusted peer (transitively):
   * - a device it lists is added unless this device has forgotten it;
   * - a device it has forgotten is removed here too, unless it was (re)paired after that
   *   forget (its addedAt is later), and the forget is recorded so it propagates on;
   * - a device's name is updated when the device speaks for itself (from === key).
   * `from` (hex) must be trusted, or nothing is learnt. Returns whether anything changed.
   */
  merge (msg: DevicesList, from?: string): boolean {
    if (from !== undefined && !this.isTrusted(from)) return false
    let changed = false
    for (const f of msg.forgotten) {
      if (!HEX32.test(f.key) || !Number.isFinite(f.at) || f.key === this.device) continue
      const local = this.data.devices.find(d => d.key === f.key)
      if (local !== undefined && local.addedAt > f.at) continue // re-paired after that forget
      if (local !== undefined) { this.data.devices = this.data.devices.filter(d => d.key !== f.key); changed = true }
      if (this.recordForgotten(f.key, f.at)) changed = true
    }
    const forgotten = new Set(this.data.forgotten.map(f => f.key))
    for (const d of msg.devices) {
      if (!HEX32.test(d.key) || d.key === this.device || forgotten.has(d.key)) continue
      const local = this.data.devices.find(x => x.key === d.key)
      const name = cleanName(d.name)
      if (local === undefined) {
        this.data.devices.push({ key: d.key, name: name || d.key.slice(0, 8), addedAt: Number.isFinite(d.addedAt) ? d.addedAt : Date.now() })
        changed = true
      } else if (from === d.key && name !== '' && name !== local.name) {
        local.name = name
        changed = true
      }
    }
    if (changed) { this.schedule(); this.emit('devices') }
    return changed
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
