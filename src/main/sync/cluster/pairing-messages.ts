import c from 'compact-encoding'
import { isHex32 } from '../../../shared/entry/hex32'
import { NAME_MAX, parseStatement, type JoinSignature, type Statement } from './membership'
import type { WelcomeContent } from './cluster-store'

/**
 * What the two sides of a pairing send each other through blind-pairing (pairing.ts), as
 * compact-encoding codecs like the arbor/1 messages (arbor-messages.ts): the candidate's
 * request (`joinRequest`, JSON) and the member's answer (`welcome`, binary, since it may
 * travel in a DHT record). Their bytes are those of every version since 1.0. Decoding throws
 * on what is not one (compact-encoding's way); both are read inside pairing's own try, where
 * a bad request is refused and a bad answer is BAD_ANSWER.
 */

/** The newest welcome this version reads (a candidate says so in its request; older ones read 1 only). */
export const WELCOME_VERSION = 2
/**
 * The statements a welcome carries stop at this size: it may travel in a DHT record, which
 * holds about 1.5 KB (measured on the testnet: 1500 bytes arrive, 2000 time out) with
 * blind-pairing's envelope around it. What does not fit arrives by gossip from the inviter.
 */
export const WELCOME_MAX_BYTES = 1100

// --- the candidate's request ---

export interface JoinRequest {
  key: string
  name: string
  /** its co-signature over its key, its name and the invite (absent from older versions) */
  join?: JoinSignature
  /** the newest welcome it reads (1 from older versions) */
  welcome: number
}

/**
 * JSON, with the fields of version 1; an older member reads key and name and ignores the
 * rest. Read leniently, as 1.0 did: a name is cut to NAME_MAX, a join or welcome that is not
 * of its shape is left out.
 */
export const joinRequest: c.Encoding<JoinRequest> = {
  preencode: (state, r) => { state.end += Buffer.byteLength(requestJson(r)) },
  encode: (state, r) => { state.start += (state.buffer as Buffer).write(requestJson(r), state.start) },
  decode: state => {
    const u = JSON.parse((state.buffer as Buffer).toString('utf8', state.start, state.end)) as { v?: unknown; key?: unknown; name?: unknown; join?: { at?: unknown; sig?: unknown }; welcome?: unknown }
    state.start = state.end
    if (u.v !== 1 || typeof u.key !== 'string' || typeof u.name !== 'string') throw new Error('not a pairing request')
    const key = u.key.toLowerCase()
    if (!isHex32(key)) throw new Error('not a device key')
    const r: JoinRequest = { key, name: u.name.slice(0, NAME_MAX), welcome: typeof u.welcome === 'number' && Number.isInteger(u.welcome) && u.welcome > 1 ? u.welcome : 1 }
    const j = u.join
    if (j !== null && typeof j === 'object' && typeof j.at === 'number' && Number.isFinite(j.at) && typeof j.sig === 'string') r.join = { at: j.at, sig: j.sig }
    return r
  }
}

function requestJson (r: JoinRequest): string {
  return JSON.stringify({ v: 1, key: r.key, name: r.name, ...(r.join !== undefined ? { join: r.join, welcome: r.welcome } : {}) })
}

// --- the member's answer ---

/** A welcome as sent: version 1 is what older devices read (the lists); version 2 appends the signed statements. */
export interface WelcomeMessage extends WelcomeContent { version: 1 | 2 }

/** Throws when the frame ends before `n` more bytes. */
function room (state: c.State, n: number): Buffer {
  if (state.end - state.start < n) throw new Error('truncated')
  return state.buffer as Buffer
}

// Big-endian, as the welcome has been written since version 1 (compact-encoding's are little-endian).
const u16: c.Encoding<number> = {
  preencode: state => { state.end += 2 },
  encode: (state, n) => { if (!(Number.isInteger(n) && n >= 0 && n <= 0xffff)) throw new RangeError(`${n} does not fit a welcome count`); state.start = (state.buffer as Buffer).writeUInt16BE(n, state.start) },
  decode: state => { const n = room(state, 2).readUInt16BE(state.start); state.start += 2; return n }
}
const time: c.Encoding<number> = {
  preencode: state => { state.end += 8 },
  encode: (state, n) => { state.start = (state.buffer as Buffer).writeDoubleBE(n, state.start) },
  decode: state => { const n = room(state, 8).readDoubleBE(state.start); state.start += 8; if (!Number.isFinite(n)) throw new Error('bad time'); return n }
}
/** Hex of `bytes` bytes as those bytes. */
const fixedHex = (bytes: number): c.Encoding<string> => ({
  preencode: state => { state.end += bytes },
  encode: (state, hex) => {
    if (hex.length !== bytes * 2 || !/^[0-9a-f]*$/.test(hex)) throw new TypeError(`not ${bytes} bytes of hex: ${hex.slice(0, 20)}`)
    state.start += (state.buffer as Buffer).write(hex, state.start, bytes, 'hex')
  },
  decode: state => { const s = room(state, bytes).toString('hex', state.start, state.start + bytes); state.start += bytes; return s }
})
const key = fixedHex(32)
const signature = fixedHex(64)
/** UTF-8 behind its byte length. */
const text: c.Encoding<string> = {
  preencode: (state, s) => { state.end += 2 + Buffer.byteLength(s) },
  encode: (state, s) => { u16.encode(state, Buffer.byteLength(s)); state.start += (state.buffer as Buffer).write(s, state.start) },
  decode: state => { const n = u16.decode(state); const s = room(state, n).toString('utf8', state.start, state.start + n); state.start += n; return s }
}
const byte: c.Encoding<number> = {
  preencode: state => { state.end += 1 },
  encode: (state, n) => { (state.buffer as Buffer)[state.start++] = n },
  decode: state => room(state, 1)[state.start++] as number
}
/** A u16 count, then each item. */
function list<T> (item: c.Encoding<T>): c.Encoding<T[]> {
  return {
    preencode: (state, xs) => { u16.preencode(state, xs.length); for (const x of xs) item.preencode(state, x) },
    encode: (state, xs) => { u16.encode(state, xs.length); for (const x of xs) item.encode(state, x) },
    decode: state => { const out: T[] = []; for (let n = u16.decode(state); n > 0; n--) out.push(item.decode(state)); return out }
  }
}

const member: c.Encoding<WelcomeContent['devices'][number]> = {
  preencode: (state, d) => { key.preencode(state, d.key); text.preencode(state, d.name); time.preencode(state, d.addedAt) },
  encode: (state, d) => { key.encode(state, d.key); text.encode(state, d.name); time.encode(state, d.addedAt) },
  decode: state => ({ key: key.decode(state), name: text.decode(state), addedAt: time.decode(state) })
}
const forgotten: c.Encoding<WelcomeContent['forgotten'][number]> = {
  preencode: (state, f) => { key.preencode(state, f.key); time.preencode(state, f.at) },
  encode: (state, f) => { key.encode(state, f.key); time.encode(state, f.at) },
  decode: state => ({ key: key.decode(state), at: time.decode(state) })
}

/** The binary form of a statement: its kind, then its fields in a fixed order (no room for fields it does not know: see fitsBinary). */
const STATEMENT_KINDS = { add: 1, remove: 2, name: 3 } as const
const FIELDS = { add: 9, remove: 6, name: 6 } as const
/** Writes (or measures) one field. */
type Put = (state: c.State, measure: boolean) => void
const put = <T>(enc: c.Encoding<T>, v: T): Put => (state, measure) => { if (measure) enc.preencode(state, v); else enc.encode(state, v) }
function fieldsOf (s: Statement): Put[] {
  switch (s.t) {
    case 'add': return [put(key, s.device), put(key, s.by), put(key, s.nonce), put(time, s.at), put(text, s.name), put(time, s.join.at), put(signature, s.join.sig), put(signature, s.sig)]
    case 'remove': return [put(key, s.device), put(key, s.by), put(time, s.at), put(signature, s.sig)]
    case 'name': return [put(key, s.device), put(time, s.at), put(text, s.name), put(signature, s.sig)]
  }
}

/** Whether a statement has exactly the fields the binary form holds (one a newer version extended comes by gossip). */
export function fitsBinary (s: Statement): boolean {
  return Object.keys(s).length === FIELDS[s.t] && (s.t !== 'add' || Object.keys(s.join).length === 2)
}

/**
 * One statement. One of a kind this version does not know cannot be stepped over (its length
 * is not written): the welcome is unreadable, as it always was. One of a known kind that is
 * not of its shape is read and dropped (null).
 */
export const statement: c.Encoding<Statement, Statement | null> = {
  preencode: (state, s) => { byte.preencode(state, 0); for (const f of fieldsOf(s)) f(state, true) },
  encode: (state, s) => { byte.encode(state, STATEMENT_KINDS[s.t]); for (const f of fieldsOf(s)) f(state, false) },
  decode: state => {
    const kind = byte.decode(state)
    let raw: unknown
    if (kind === 1) {
      const [device, by, nonce, at, name, joinAt, joinSig, sig] = [key.decode(state), key.decode(state), key.decode(state), time.decode(state), text.decode(state), time.decode(state), signature.decode(state), signature.decode(state)]
      raw = { t: 'add', v: 1, device, name, join: { at: joinAt, sig: joinSig }, by, nonce, at, sig }
    } else if (kind === 2) {
      const [device, by, at, sig] = [key.decode(state), key.decode(state), time.decode(state), signature.decode(state)]
      raw = { t: 'remove', v: 1, device, by, at, sig }
    } else if (kind === 3) {
      const [device, at, name, sig] = [key.decode(state), time.decode(state), text.decode(state), signature.decode(state)]
      raw = { t: 'name', v: 1, device, name, at, sig }
    } else {
      throw new Error('unknown statement')
    }
    return parseStatement(raw)
  }
}

/**
 * The welcome: its version, the inviter, the members, the devices forgotten, and (version 2)
 * the statements. It writes what it is given; what goes in is chosen by encodeWelcome.
 * Version 1 ends with the lists; a version 2 welcome may be followed by what a later version
 * appends, which this one leaves.
 */
export const welcome: c.Encoding<WelcomeMessage> = {
  preencode: (state, w) => {
    byte.preencode(state, w.version)
    key.preencode(state, w.inviter.key); text.preencode(state, w.inviter.name)
    list(member).preencode(state, w.devices)
    list(forgotten).preencode(state, w.forgotten)
    if (w.version === 2) list(statement as c.Encoding<Statement>).preencode(state, w.statements)
  },
  encode: (state, w) => {
    byte.encode(state, w.version)
    key.encode(state, w.inviter.key); text.encode(state, w.inviter.name)
    list(member).encode(state, w.devices)
    list(forgotten).encode(state, w.forgotten)
    if (w.version === 2) list(statement as c.Encoding<Statement>).encode(state, w.statements)
  },
  decode: state => {
    const version = byte.decode(state)
    if (version !== 1 && version !== 2) throw new Error('unknown version')
    const inviter = { key: key.decode(state), name: text.decode(state) }
    const devices = list(member).decode(state)
    const gone = list(forgotten).decode(state)
    if (version === 1) {
      if (state.start !== state.end) throw new Error('trailing bytes')
      return { version, inviter, devices, forgotten: gone, statements: [] }
    }
    const statements = list(statement).decode(state).filter((s): s is Statement => s !== null)
    state.start = state.end
    return { version, inviter, devices, forgotten: gone, statements }
  }
}

/** The size of one encoded value. */
function sizeOf<T> (enc: c.Encoding<T, unknown>, v: T): number {
  const state = { start: 0, end: 0, buffer: null }
  enc.preencode(state, v)
  return state.end
}

/**
 * The welcome for a device that reads `version`: names cut to NAME_MAX, at most 0xffff of
 * each list (the forgotten latest first), and, in version 2, the statements of the binary
 * form in their order while the whole stays under `maxBytes` (the rest arrives by gossip).
 */
export function fitWelcome (w: WelcomeContent, version: 1 | 2, maxBytes = WELCOME_MAX_BYTES): WelcomeMessage {
  const lists: WelcomeMessage = {
    version,
    inviter: { key: w.inviter.key, name: w.inviter.name.slice(0, NAME_MAX) },
    devices: w.devices.slice(0, 0xffff).map(d => ({ ...d, name: d.name.slice(0, NAME_MAX) })),
    forgotten: [...w.forgotten].sort((a, b) => b.at - a.at).slice(0, 0xffff),
    statements: []
  }
  if (version === 1) return lists
  let size = sizeOf(welcome, lists)
  for (const s of w.statements.filter(fitsBinary)) {
    const one = sizeOf(statement as c.Encoding<Statement>, s)
    if (size + one > maxBytes || lists.statements.length === 0xffff) break
    lists.statements.push(s)
    size += one
  }
  return lists
}

/** The bytes of the welcome for a device that reads `version` (fitWelcome). */
export function encodeWelcome (w: WelcomeContent, version: 1 | 2, maxBytes = WELCOME_MAX_BYTES): Buffer {
  return c.encode(welcome, fitWelcome(w, version, maxBytes))
}

/** Reads a welcome; throws on what is not one. */
export function decodeWelcome (buf: Buffer): WelcomeMessage {
  return c.decode(welcome, buf)
}
