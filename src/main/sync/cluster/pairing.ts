import BlindPairing from 'blind-pairing'
import type Hyperswarm from 'hyperswarm'
import crypto from 'hypercore-crypto'
import z32 from 'z32'
import { consoleLogger, type Logger } from '../../../shared/logger'
import c from 'compact-encoding'
import { toHexKey, type ClusterStore, type InviteRecord, type WelcomeContent } from './cluster-store'
import { SECRET_BYTES } from './cluster-keys'
import { STATEMENT_MAX_SKEW_MS, cleanName, inviteKey, signJoin, verifyJoin } from './membership'
import { WELCOME_VERSION, decodeWelcome, encodeWelcome, joinRequest, type JoinRequest } from './pairing-messages'

/**
 * Pairing devices into a cluster with blind-pairing (DESIGN.md, "Sync and trust";
 * notes/holepunch.md section 4).
 *
 * The inviting device (a member) hands out a one-time, expiring code. Each invite has its
 * own random key, so each invite has its own discovery topic and old codes reveal nothing
 * about the cluster. The new device (the candidate) proves it holds the code and sends
 * its device key and name, co-signed over the invite; the member trusts that key, marks the
 * invite used, signs the new device's add (membership.ts), and answers (encrypted to the
 * candidate) with the cluster secret, the member list and the signed statements.
 *
 * An invite's key is derived from the inviting device's key and a nonce (inviteKey), so the
 * candidate's co-signature over the invite's discovery key names the inviting device: no
 * other member can present it as its own introduction.
 *
 * Pairing needs a connection (or the DHT mailbox fallback) between two devices that do
 * not trust each other yet: give it a swarm whose firewall admits unknown peers (a
 * Hyperswarm firewall bans a rejected peer for the swarm's lifetime).
 */

export const DEFAULT_INVITE_MS = 10 * 60_000
/** an expired invite is still answered ("expired") this long, for devices whose clock is behind */
export const EXPIRED_GRACE_MS = 10 * 60_000
export const DEFAULT_JOIN_TIMEOUT_MS = 60_000
/** DHT fallback polling (when no direct connection forms); blind-pairing's default is 7 min */
export const DEFAULT_POLL_MS = 5_000

export type PairingErrorCode = 'BAD_CODE' | 'EXPIRED' | 'USED' | 'REJECTED' | 'TIMEOUT' | 'CANCELLED' | 'ALREADY_PAIRED' | 'BAD_ANSWER'

export class PairingError extends Error {
  constructor (readonly code: PairingErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'PairingError'
  }
}

/** A device's key; with its secret key, pairing signs what the device says (older callers: the public key alone). */
export interface DeviceIdentity { publicKey: Buffer; secretKey?: Buffer }
export interface PairedDevice { key: string; name: string }

// --- invite codes ---

// version, flags, seed, discovery key, expiry (s): what createInvite makes
const INVITE_BYTES = 1 + 1 + 32 + 32 + 4
const Z32_CHARS = /^[ybndrfg8ejkmcpqxot1uwisza345h769]+$/

export interface DecodedInviteCode {
  invite: Buffer
  /** blind-pairing invite id (hex) */
  id: string
  discoveryKey: Buffer
  /** ms since the epoch (the code carries whole seconds) */
  expiresAt: number
}

/** Decodes an invite code; throws PairingError BAD_CODE for anything that is not an Arbor invite. */
export function decodeInviteCode (code: string): DecodedInviteCode {
  const bad = (): PairingError => new PairingError('BAD_CODE', 'that is not an Arbor invite code')
  if (typeof code !== 'string') throw bad()
  const s = code.replace(/\s+/g, '').toLowerCase()
  if (s.length === 0 || s.length > 400 || !Z32_CHARS.test(s)) throw bad()
  try {
    const invite = Buffer.from(z32.decode(s))
    const d = BlindPairing.decodeInvite(invite)
    // Arbor invites always name their topic and expire
    if (invite.byteLength !== INVITE_BYTES || d.discoveryKey === null || d.expires === 0 || z32.encode(invite) !== s) throw bad()
    return { invite, id: Buffer.from(d.id).toString('hex'), discoveryKey: Buffer.from(d.discoveryKey), expiresAt: d.expires }
  } catch {
    throw bad()
  }
}

/**
 * Creates a one-time invite (creating the cluster secret if this device has none yet) and
 * remembers it in the cluster file, so a PairingHost (even after a restart within the
 * expiry) answers it.
 */
export async function createInvite (cluster: ClusterStore, opts: { expiresMs?: number; now?: number } = {}): Promise<{ code: string; expiresAt: number; id: string }> {
  const expiresMs = opts.expiresMs ?? DEFAULT_INVITE_MS
  if (!(expiresMs > 0)) throw new RangeError('an invite must expire in the future')
  const now = opts.now ?? Date.now()
  cluster.ensureSecret()
  // bound to this device when its key is known (see inviteKey); else a random key, as older versions made
  const nonce = cluster.device !== null ? crypto.randomBytes(32).toString('hex') : undefined
  const key = nonce !== undefined ? inviteKey(cluster.device as string, nonce) : crypto.randomBytes(32)
  const expiresAt = now + expiresMs
  const inv = BlindPairing.createInvite(key, { expires: expiresAt })
  const id = Buffer.from(inv.id).toString('hex')
  cluster.addInvite({ id, seed: Buffer.from(inv.seed).toString('hex'), key: key.toString('hex'), ...(nonce !== undefined ? { nonce } : {}), createdAt: now, expiresAt })
  await cluster.save()
  return { code: z32.encode(inv.invite), expiresAt, id }
}

// --- what the two sides send ---

/** The candidate's request, or null if it is not one (it is refused). */
function readRequest (buf: Buffer | null): JoinRequest | null {
  if (buf === null) return null
  try {
    return c.decode(joinRequest, buf)
  } catch {
    return null
  }
}

// blind-pairing's response statuses
const DENY_REJECTED = 1
const DENY_USED = 2
const DENY_EXPIRED = 3

// --- the member side ---

export interface PairingHostOptions {
  swarm: Hyperswarm
  cluster: ClusterStore
  /** this device (its key is what paired devices will trust; with its secret key, the adds it signs are honoured by the others) */
  device: DeviceIdentity
  onPaired?: (device: PairedDevice) => void
  pollMs?: number
  now?: () => number
  log?: Logger
}

/**
 * Answers candidates of every invite in the cluster file, until it expires (and for
 * EXPIRED_GRACE_MS after, to say so). Picks up invites created while it runs.
 */
export class PairingHost {
  private readonly swarm: Hyperswarm
  private readonly cluster: ClusterStore
  private readonly self: string
  private readonly onPaired: ((device: PairedDevice) => void) | undefined
  private readonly pollMs: number
  private readonly now: () => number
  private readonly log: Logger
  private blind: BlindPairing | null = null
  private readonly members = new Map<string, BlindPairing.Member>()
  private timer: NodeJS.Timeout | null = null
  private closed = false
  private readonly onInvites = (): void => { this.sync() }

  constructor (opts: PairingHostOptions) {
    this.swarm = opts.swarm
    this.cluster = opts.cluster
    this.self = toHexKey(opts.device.publicKey)
    this.onPaired = opts.onPaired
    this.pollMs = opts.pollMs ?? DEFAULT_POLL_MS
    this.now = opts.now ?? Date.now
    this.log = opts.log ?? consoleLogger('pairing')
    if (this.cluster.device === null) this.cluster.device = this.self
    useIdentity(this.cluster, opts.device)
  }

  /** Starts answering; resolves once every current invite is announced. */
  async ready (): Promise<void> {
    if (this.closed) throw new Error('the pairing host is closed')
    if (this.blind === null) {
      this.blind = new BlindPairing(this.swarm, { poll: this.pollMs })
      this.cluster.on('invites', this.onInvites)
      this.sync()
    }
    await this.flushed()
  }

  /** Resolves once every invite it listens for is announced on the DHT. */
  async flushed (): Promise<void> {
    await Promise.all([...this.members.values()].map(m => m.flushed()))
  }

  /** How many invites it is listening for. */
  get listening (): number { return this.members.size }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.cluster.off('invites', this.onInvites)
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    const members = [...this.members.values()]
    this.members.clear()
    await Promise.allSettled(members.map(m => m.close()))
    if (this.blind !== null) await this.blind.close()
  }

  /** Listens for exactly the invites still worth answering; prunes the rest from the file. */
  private sync (): void {
    if (this.closed || this.blind === null) return
    const now = this.now()
    this.cluster.pruneInvites(now, EXPIRED_GRACE_MS)
    const live = new Map(this.cluster.invites().map(i => [i.id, i]))
    for (const [id, m] of this.members) {
      if (!live.has(id)) { this.members.delete(id); m.close().catch((err: Error) => this.log.warn(`closing an invite listener: ${err.message}`)) }
    }
    for (const inv of live.values()) {
      if (this.members.has(inv.id)) continue
      const discoveryKey = crypto.discoveryKey(Buffer.from(inv.key, 'hex'))
      this.members.set(inv.id, this.blind.addMember({ discoveryKey, onadd: request => this.onRequest(request) }))
    }
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    const next = Math.min(...[...live.values()].map(i => i.expiresAt + EXPIRED_GRACE_MS))
    if (Number.isFinite(next)) {
      this.timer = setTimeout(() => { this.timer = null; this.sync() }, Math.max(0, next - now) + 10)
      this.timer.unref()
    }
  }

  // Must never throw: blind-pairing rethrows programmer errors from here as unhandled rejections.
  private async onRequest (request: BlindPairing.MemberRequest): Promise<void> {
    try {
      await this.answer(request)
    } catch (err) {
      this.log.error(`answering a pairing request: ${(err as Error).message}`)
    }
  }

  private async answer (request: BlindPairing.MemberRequest): Promise<void> {
    const inv: InviteRecord | undefined = this.cluster.invite(Buffer.from(request.inviteId).toString('hex'))
    if (inv === undefined) return // not an invite of ours (any more): no answer
    const invKeyPair = crypto.keyPair(Buffer.from(inv.seed, 'hex'))
    let userData: Buffer | null
    try {
      userData = request.open(invKeyPair.publicKey)
    } catch {
      return // not made with this invite
    }
    const candidate = readRequest(userData)
    if (candidate === null || candidate.key === this.self) {
      this.log.warn('refused a pairing request: it did not name a device')
      request.deny({ status: DENY_REJECTED })
      return
    }
    const now = this.now()
    if (candidate.join !== undefined) {
      const discovery = crypto.discoveryKey(Buffer.from(inv.key, 'hex')).toString('hex')
      if (!verifyJoin(candidate.key, candidate.name, discovery, candidate.join)) {
        this.log.warn(`refused device ${candidate.name} (${candidate.key.slice(0, 8)}): its pairing request is not signed by the device it names`)
        request.deny({ status: DENY_REJECTED })
        return
      }
      if (candidate.join.at > now + STATEMENT_MAX_SKEW_MS) {
        this.log.warn(`refused device ${candidate.name} (${candidate.key.slice(0, 8)}): its clock is ${Math.round((candidate.join.at - now) / 60_000)} min ahead of this device's; set its clock right and join again`)
        request.deny({ status: DENY_REJECTED })
        return
      }
    }
    const again = inv.usedBy === candidate.key // the same device asking again (a lost answer): answer again
    if (inv.usedBy !== undefined && !again) {
      this.log.warn(`refused device ${candidate.name} (${candidate.key.slice(0, 8)}): the invite was already used`)
      request.deny({ status: DENY_USED })
      return
    }
    if (!again && now >= inv.expiresAt) {
      this.log.warn(`refused device ${candidate.name} (${candidate.key.slice(0, 8)}): the invite has expired`)
      request.deny({ status: DENY_EXPIRED })
      return
    }
    const secret = this.cluster.ensureSecret()
    if (!again) {
      // synchronously, before any await: a second candidate with this code sees it used
      this.cluster.useInvite(inv.id, candidate.key, now)
      const { undo } = this.cluster.admit({ key: candidate.key, name: candidate.name, ...(candidate.join !== undefined ? { join: candidate.join } : {}) }, inv, now)
      try {
        await this.cluster.save()
      } catch (err) {
        this.cluster.unuseInvite(inv.id)
        undo()
        throw new Error(`could not record the new device, so it was not paired: ${(err as Error).message}`, { cause: err })
      }
    }
    const version = Math.min(candidate.welcome, WELCOME_VERSION) === 2 ? 2 : 1
    const data = encodeWelcome(this.cluster.welcomeFor(candidate.key, version === 1), version)
    request.confirm({
      key: Buffer.from(inv.key, 'hex'),
      encryptionKey: secret,
      additional: { data, signature: crypto.sign(data, invKeyPair.secretKey) }
    })
    if (!again) {
      this.log.info(`paired with ${candidate.name} (${candidate.key.slice(0, 8)})`)
      try { this.onPaired?.({ key: candidate.key, name: candidate.name }) } catch (err) { this.log.error(`onPaired: ${(err as Error).message}`) }
    }
  }
}

// --- the candidate side ---

export interface JoinOptions {
  swarm: Hyperswarm
  code: string
  /** this device (its key is what the cluster will trust) */
  device: DeviceIdentity
  /** this device's name as the others will show it (default: the cluster file's) */
  name?: string
  cluster: ClusterStore
  timeoutMs?: number
  /** aborting stops the attempt (PairingError CANCELLED); nothing is stored */
  signal?: AbortSignal
  pollMs?: number
  now?: () => number
}

/**
 * Joins the cluster of the device that made `code`: sends this device's key and name,
 * receives the cluster secret and members, and stores them. Resolves with the inviting
 * device's key. Throws PairingError (BAD_CODE, EXPIRED, USED, REJECTED, TIMEOUT,
 * CANCELLED, ALREADY_PAIRED, BAD_ANSWER).
 */
export async function joinCluster (opts: JoinOptions): Promise<Buffer> {
  const { swarm, cluster } = opts
  const timeoutMs = opts.timeoutMs ?? DEFAULT_JOIN_TIMEOUT_MS
  const code = decodeInviteCode(opts.code)
  const now = (opts.now ?? Date.now)()
  if (code.expiresAt <= now) {
    throw new PairingError('EXPIRED', `that invite expired at ${new Date(code.expiresAt).toLocaleString()}: ask for a new one`)
  }
  const self = toHexKey(opts.device.publicKey)
  const paired = cluster.devices()
  if (paired.length > 0) {
    throw new PairingError('ALREADY_PAIRED', `this device is already paired with ${paired.map(d => d.name).join(', ')}: forget ${paired.length === 1 ? 'it' : 'them'} before joining another cluster`)
  }
  const cancelled = (): PairingError => new PairingError('CANCELLED', 'pairing was cancelled')
  const aborted = (): boolean => opts.signal?.aborted === true
  if (aborted()) throw cancelled()
  if (cluster.device === null) cluster.device = self
  useIdentity(cluster, opts.device)
  if (opts.name !== undefined) cluster.setName(opts.name)

  // co-signed over the invite (whose discovery key names the inviting device), when this device can sign
  const name = cleanName(opts.name ?? cluster.name)
  const join = opts.device.secretKey !== undefined
    ? signJoin({ publicKey: opts.device.publicKey, secretKey: opts.device.secretKey }, name, code.discoveryKey.toString('hex'), now)
    : null
  const userData = c.encode(joinRequest, { key: self, name, ...(join !== null ? { join } : {}), welcome: WELCOME_VERSION })
  const blind = new BlindPairing(swarm, { poll: opts.pollMs ?? DEFAULT_POLL_MS })
  let candidate: BlindPairing.Candidate | null = null
  let timer: NodeJS.Timeout | null = null
  let onAbort: (() => void) | null = null
  try {
    const result = await new Promise<BlindPairing.Result>((resolve, reject) => {
      timer = setTimeout(() => {
        reject(new PairingError('TIMEOUT', `no device answered the invite within ${Math.round(timeoutMs / 1000)} s: is the inviting device online?`))
      }, timeoutMs)
      onAbort = () => { reject(cancelled()) }
      opts.signal?.addEventListener('abort', onAbort, { once: true })
      // onadd must not throw (blind-pairing awaits it on a connection)
      const c = candidate = blind.addCandidate({ invite: code.invite, userData, onadd: r => { resolve(r) } })
      // (answers arrive asynchronously: listening now misses none)
      c.request.on('rejected', (err: Error & { code?: string }) => {
        if (err.code === 'INVITE_USED') reject(new PairingError('USED', 'that invite has already been used: ask for a new one'))
        else if (err.code === 'INVITE_EXPIRED') reject(new PairingError('EXPIRED', 'the inviting device says that invite has expired: ask for a new one'))
        else if (err.code === 'PAIRING_REJECTED') reject(new PairingError('REJECTED', 'the inviting device refused to pair'))
        // anything else is an answer that does not open (not for us): keep waiting
      })
    })
    let welcome: WelcomeContent
    try {
      if (result.encryptionKey === null || result.encryptionKey.byteLength !== SECRET_BYTES || result.data === null) throw new Error('incomplete')
      welcome = decodeWelcome(Buffer.from(result.data))
      toHexKey(welcome.inviter.key)
    } catch (err) {
      throw new PairingError('BAD_ANSWER', `the inviting device sent an answer this Arbor cannot read (${(err as Error).message}): are both devices up to date?`, { cause: err })
    }
    if (aborted()) throw cancelled()
    cluster.setSecret(Buffer.from(result.encryptionKey))
    cluster.adoptWelcome(welcome)
    await cluster.save()
    return Buffer.from(welcome.inviter.key, 'hex')
  } finally {
    if (timer !== null) clearTimeout(timer)
    if (onAbort !== null) opts.signal?.removeEventListener('abort', onAbort)
    const c = candidate as BlindPairing.Candidate | null
    if (c !== null) {
      await c.close().catch(() => undefined)
      // blind-pairing leaves its per-peer resend timer (up to 1.5 s) running when a candidate
      // closes unpaired, which holds the process open: stop it (internal, hence guarded)
      const signal = (c as unknown as { signal?: { destroy?: () => void } | null }).signal
      if (signal !== null && typeof signal === 'object' && typeof signal.destroy === 'function') signal.destroy()
    }
    await blind.close()
  }
}

/** Gives the store the device's key pair when the caller has the secret key (so it signs), unless it has one. */
function useIdentity (cluster: ClusterStore, device: DeviceIdentity): void {
  if (device.secretKey !== undefined && !cluster.canSign) cluster.useKeyPair({ publicKey: device.publicKey, secretKey: device.secretKey })
}
