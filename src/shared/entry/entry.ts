import { z } from 'zod'
import { canonicalCopy, canonicalJson, type Json } from './canonical-json'
import { MAX_JSON_DEPTH } from './json-depth'
import { isHex32 } from './hex32'
import { Hex32 } from './hex32-schema'
import { asWritten } from './entry-written'
import { BODY_SCHEMAS, EFFECT_CLASSES, type Entry, type KnownEntry, type WrittenEntry } from './entry-types'

export * from './entry-types'

/** Entries larger than this are refused: tool output is cut long before. */
export const MAX_ENTRY_BYTES = 1024 * 1024

/**
 * The most bytes a feed block of an entry within MAX_ENTRY_BYTES can hold: its stored text is the
 * hash input with the id put in, and a character of it takes at most 3 bytes of UTF-8. A larger
 * block is refused before it is parsed.
 */
export const MAX_ENTRY_BLOCK_BYTES = 3 * (MAX_ENTRY_BYTES + 256)

/** How deeply each field of an entry may nest: one level inside the entry, which nests at most MAX_JSON_DEPTH. */
const MAX_FIELD_DEPTH = MAX_JSON_DEPTH - 1

/** How deeply a tool call's arguments may nest: they sit four levels into an assistant entry (/body/toolCalls/i/args). */
export const MAX_ARGS_DEPTH = MAX_JSON_DEPTH - 4

/** A kind is a short lower-case dotted name: shown to people, so nothing a terminal would act on. */
const KIND = /^[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*$/

// Strict: a top-level field outside the id's hash would be stored unauthenticated.
export const EnvelopeSchema = z.strictObject({
  v: z.literal(1),
  id: Hex32,
  conversation: Hex32,
  parents: z.array(Hex32).max(64),
  author: z.object({ device: Hex32, agent: z.string().min(1).max(200).optional() }),
  ts: z.number().int().nonnegative(),
  kind: z.string().max(64).regex(KIND, 'must be a lower-case dotted name'),
  body: z.unknown()
})

/** The canonical bytes an id is the hash of: everything but the id (and a root's own id). Of an entry as written. */
export function hashInput (e: Omit<WrittenEntry, 'id'> | WrittenEntry): string {
  if (e.author !== undefined) return inputOf(encodeFields(e))
  // not an entry (every envelope has an author), but the hash input of anything is defined
  return canonicalJson({ v: e.v, conversation: e.parents.length === 0 ? null : e.conversation, parents: e.parents, author: e.author, ts: e.ts, kind: e.kind, body: e.body })
}

/**
 * An entry's fields (as written, but the id) in canonical JSON, from which both its hash input
 * (inputOf) and its stored form (storedOf) are put together: writing an entry encodes its
 * body once, not twice. The bytes are those of canonicalJson on the two objects (keys in
 * code-unit order, undefined fields left out). Of an entry with an author, its first field.
 */
export interface EncodedFields {
  /** `{"author":…,"body":…` */
  head: string
  /** `,"conversation":…` of a child; null for a root, whose conversation is its own id */
  conversation: string | null
  /** `,"kind":…,"parents":…,"ts":…,"v":…}` */
  tail: string
}

export function encodeFields (e: Omit<WrittenEntry, 'id'> | WrittenEntry): EncodedFields {
  if (e.author === undefined) throw new TypeError('an entry without an author has no stored form')
  // In key order, so a value that is not JSON is reported where canonicalJson would find it first.
  const head = '{"author":' + canonicalJson(e.author, '/author', MAX_FIELD_DEPTH) + field('body', e.body)
  const conversation = e.parents.length === 0 ? null : field('conversation', e.conversation)
  const tail = field('kind', e.kind) + field('parents', e.parents) + field('ts', e.ts) + field('v', e.v) + '}'
  return { head, conversation, tail }
}

/**
 * encodeFields of an entry being written, and beside it the entry as JSON.parse of its stored
 * form gives it back (keys in the same order; canonicalCopy), but for the id, not known yet:
 * '' here, and a root's conversation with it. One walk of the body, no parse. Of an entry as
 * makeEntry builds it: an author of a device and an agent.
 */
export function encodeWritten (e: Omit<WrittenEntry, 'id'>): { fields: EncodedFields; entry: WrittenEntry } {
  // In key order, so a value that is not JSON is reported where canonicalJson would find it first.
  const author = e.author
  const body = e.body === undefined ? undefined : copyBody(e.body)
  const head = '{"author":' + canonicalJson(author, '/author', MAX_FIELD_DEPTH) + (body === undefined ? '' : ',"body":' + body.json)
  const root = e.parents.length === 0
  const conversation = root ? null : field('conversation', e.conversation)
  const tail = field('kind', e.kind) + field('parents', e.parents) + field('ts', e.ts) + field('v', e.v) + '}'
  // The envelope's strings are shared, not copied: ids and an agent's name, which the checks
  // after this refuse unless they are strings of 64 hex characters (the agent's, of 200 at
  // most), as they refuse a kind, conversation or ts that is not a string or number; a
  // parent's id is then the parent's own string. Only a -0 would read back otherwise.
  const entry = {
    author: author.agent === undefined ? { device: author.device } : { agent: author.agent, device: author.device },
    body: body?.copy,
    conversation: root ? '' : e.conversation,
    id: '',
    kind: e.kind,
    parents: [...e.parents],
    ts: e.ts === 0 ? 0 : e.ts,
    v: e.v
  } as unknown as WrittenEntry
  return { fields: { head, conversation, tail }, entry }
}

export function inputOf (f: EncodedFields): string {
  // A root's conversation is its own id, which cannot be part of its own hash.
  return f.head + (f.conversation ?? ',"conversation":null') + f.tail
}

/** The stored form (encodeEntry's) of the entry with these fields and this id. */
export function storedOf (f: EncodedFields, id: string): string {
  return f.head + (f.conversation ?? field('conversation', id)) + field('id', id) + f.tail
}

/** `,"key":value` in canonical JSON, or nothing for an undefined value (as canonicalJson drops it). */
function field (key: string, value: unknown): string {
  return value === undefined ? '' : ',"' + key + '":' + canonicalJson(value, '/' + key, MAX_FIELD_DEPTH)
}

/**
 * Of a body about to be written: its canonical JSON and copy (canonicalCopy), refused with a
 * TooDeepError past what a field of an entry may nest.
 */
export function copyBody (body: unknown): { json: string; copy: Json } {
  return canonicalCopy(body, '/body', MAX_FIELD_DEPTH)
}

/**
 * The stored form of an entry (the feed's block for entries written here, the entry cache's
 * line): canonical JSON, so stored bytes are deterministic. An UnknownEntry encodes as it is
 * held in memory (kind 'unknown'), so the cache reads it back as one; asWritten gives the
 * form its feed holds.
 */
export function encodeEntry (e: Entry): string {
  let text = encoded.get(e)
  if (text === undefined) encoded.set(e, text = canonicalJson(e))
  return text
}

// Entries are immutable, so each one's encoding is computed once (for the feed and the cache).
const encoded = new WeakMap<Entry, string>()

/**
 * Forgets an entry's remembered text once its last writer (the entry cache) has it: entries
 * live as long as their conversation is open, and keeping each one's text beside it doubled
 * what they hold (and a large WeakMap slows every young-generation GC). Asked for again, the
 * encoding is computed again.
 */
export function releaseEncoding (e: Entry): void {
  encoded.delete(e)
}

/**
 * Remembers the text an entry was read from, to be stored again as it is (the entry cache
 * needs one JSON line, not the canonical form). Text with a line break is not kept, nor the
 * text of an entry this version did not understand (its cache line is the in-memory form).
 */
export function rememberEncoding (e: Entry, text: string): void {
  if (e.kind !== 'unknown' && !text.includes('\n') && !encoded.has(e)) encoded.set(e, text)
}

// in a module of its own: the renderer's export needs it, and not zod
export { asWritten }

export class InvalidEntryError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'InvalidEntryError'
  }
}

export type Validation = { ok: true; entry: Entry } | { ok: false; error: string }
export type EnvelopeCheck = { ok: true; entry: WrittenEntry } | { ok: false; error: string }

function describe (issues: z.core.$ZodIssue[], prefix: string): string {
  return issues.slice(0, 3).map(i => `${[prefix, ...i.path.map(String)].filter(Boolean).join('.') || 'entry'} ${i.message}`).join('; ')
}

function idHint (raw: unknown): string {
  const id = (raw as { id?: unknown } | null | undefined)?.id
  return typeof id === 'string' ? `entry ${id.slice(0, 12)}: ` : 'entry: '
}

/**
 * Checks the envelope: the fields every entry has, its structure (a root is a 'conversation'
 * entry without parents, naming itself; parents distinct) and, when `device` is given (the
 * device that wrote the feed the entry came from), the author. Not the id's hash, which
 * src/main/history/store/entry-codec.ts checks with the platform's SHA-256, nor the body: an entry
 * failing only its body is kept (understand). The envelope never changes within `arbor/1`.
 */
export function checkEnvelope (raw: unknown, device?: string): EnvelopeCheck {
  // idHint(raw), the error's prefix, made only for an error: every entry read or written passes here
  if (!fitsEnvelope(raw)) {
    // The schema says what is wrong (and has the last word on what fitsEnvelope is unsure of).
    const env = EnvelopeSchema.safeParse(raw)
    if (!env.success) return { ok: false, error: idHint(raw) + describe(env.error.issues, '') }
  }
  const e = raw as WrittenEntry
  if ((e.kind === 'conversation') !== (e.parents.length === 0)) {
    return { ok: false, error: `${idHint(raw)}only a conversation root has no parents, and a root is a "conversation" entry` }
  }
  if (e.parents.length > 1 && new Set(e.parents).size !== e.parents.length) return { ok: false, error: `${idHint(raw)}parents repeat` }
  if (e.parents.includes(e.id)) return { ok: false, error: `${idHint(raw)}is its own parent` }
  if (e.parents.length === 0 && e.conversation !== e.id) return { ok: false, error: `${idHint(raw)}a root's conversation must be its own id` }
  if (device !== undefined && e.author.device !== device) {
    return { ok: false, error: `${idHint(raw)}author ${e.author.device.slice(0, 12)} is not the device ${device.slice(0, 12)} that wrote this feed` }
  }
  return { ok: true, entry: raw as WrittenEntry }
}

const ENVELOPE_KEYS = ['v', 'id', 'conversation', 'parents', 'author', 'ts', 'kind', 'body']

/**
 * Whether EnvelopeSchema surely accepts `raw`, checked without zod (every entry read or
 * written passes here; zod costs several times more). Only ever stricter than the schema
 * (plain objects only, every key present): where it says no, the schema decides.
 * test/property/shared/entry.property.test.ts checks that it never accepts what the schema refuses.
 */
export function fitsEnvelope (raw: unknown): boolean {
  if (!isPlainObject(raw)) return false
  const e = raw as Record<string, unknown>
  // counted without Object.keys' array (every entry passes here); an enumerable key on
  // Object.prototype counts too, which only makes this stricter
  let keys = 0
  for (const _ in e) keys++
  if (keys !== ENVELOPE_KEYS.length) return false
  for (const k of ENVELOPE_KEYS) if (!Object.hasOwn(e, k) || e[k] === undefined) return false
  if (e.v !== 1 || !isHex32(e.id) || !isHex32(e.conversation)) return false
  const parents = e.parents
  if (!Array.isArray(parents) || parents.length > 64) return false
  for (const p of parents) if (!isHex32(p)) return false
  const author = e.author
  if (!isPlainObject(author) || !isHex32(author.device)) return false
  const agent = author.agent
  if (agent !== undefined && (typeof agent !== 'string' || agent.length < 1 || agent.length > 200)) return false
  if (typeof e.ts !== 'number' || !Number.isSafeInteger(e.ts) || e.ts < 0) return false
  return typeof e.kind === 'string' && e.kind.length <= 64 && KIND.test(e.kind)
}

/**
 * Whether BODY_SCHEMAS surely accepts `body` for `kind`, checked without zod, for the kinds
 * an agent writes every step (a zod parse costs 15–50 µs there, its code cold between steps).
 * Only ever stricter than the schema (plain objects, fields checked as the schema does, other
 * fields left to it as it leaves them): where it says no, the schema decides.
 * test/property/shared/entry.property.test.ts checks that it never accepts what the schema refuses.
 */
export function fitsBody (kind: string, body: unknown): boolean {
  if (!isPlainObject(body)) return false
  switch (kind) {
    case 'user': return typeof body.text === 'string' && (body.reply === undefined || body.reply === false)
    case 'note': return typeof body.text === 'string'
    case 'tool.result':
      return isName(body.callId) && typeof body.output === 'string' && RESULT_STATUSES.has(body.status as string) &&
        (body.truncated === undefined || typeof body.truncated === 'boolean')
    case 'tool.intent':
      // args may be anything, but zod wants its key there
      return isName(body.callId) && isName(body.tool) && isName(body.idemKey) && (EFFECT_CLASSES as readonly unknown[]).includes(body.effect) && Object.hasOwn(body, 'args')
    case 'assistant': {
      if (typeof body.text !== 'string' || !optionalString(body.reasoning) || !optionalString(body.model) || !optionalString(body.finish)) return false
      const usage = body.usage
      if (usage !== undefined && !(isPlainObject(usage) && isCount(usage.input) && isCount(usage.output) && (usage.reasoning === undefined || isCount(usage.reasoning)))) return false
      const calls = body.toolCalls
      if (calls === undefined) return true
      if (!Array.isArray(calls)) return false
      for (const c of calls as unknown[]) if (!isPlainObject(c) || !isName(c.id) || !isName(c.name) || !Object.hasOwn(c, 'args')) return false
      return true
    }
    default: return false
  }
}

const RESULT_STATUSES = new Set<string>(['ok', 'error', 'unknown', 'cancelled'])
const isName = (x: unknown): boolean => typeof x === 'string' && x.length > 0
const optionalString = (x: unknown): boolean => x === undefined || typeof x === 'string'
const isCount = (x: unknown): boolean => Number.isSafeInteger(x) && (x as number) >= 0

function isPlainObject (x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && Object.getPrototypeOf(x) === Object.prototype
}

/** Why this version does not understand a written entry's kind or body; undefined if it does. */
function notUnderstood (e: WrittenEntry): { problem?: string } | undefined {
  // Own keys only: a kind like "constructor" must not find Object.prototype's.
  const schema = Object.hasOwn(BODY_SCHEMAS, e.kind) ? (BODY_SCHEMAS as Record<string, z.ZodType>)[e.kind] : undefined
  if (schema === undefined) return {}
  if (fitsBody(e.kind, e.body)) return undefined
  const body = schema.safeParse(e.body)
  return body.success ? undefined : { problem: `${e.kind} ` + describe(body.error.issues, 'body') }
}

/**
 * The entry as this version understands it: itself if its kind is known and its body fits,
 * else an UnknownEntry holding its kind and body as written. Of an entry whose envelope is valid.
 */
export function understand (e: WrittenEntry): Entry {
  const why = notUnderstood(e)
  if (why === undefined) return e as KnownEntry
  const { kind, body, ...envelope } = e
  return { ...envelope, kind: 'unknown', body: { kind, body, ...why } }
}

/**
 * An entry read back from this device's own derived state (the entry cache): understood as
 * it was, except that one kept as unknown is looked at again (this version may know it now).
 */
export function reunderstand (e: Entry): Entry {
  return e.kind === 'unknown' ? understand(asWritten(e)) : e
}

/**
 * Checks the envelope and that the body fits its kind, as for an entry this device writes:
 * it must understand what it writes. `device`, when given, is the feed's device.
 */
export function checkEntryShape (raw: unknown, device?: string): Validation {
  const env = checkEnvelope(raw, device)
  if (!env.ok) return env
  const why = notUnderstood(env.entry)
  if (why !== undefined) return { ok: false, error: idHint(raw) + (why.problem ?? `unknown kind "${env.entry.kind}"`) }
  return { ok: true, entry: env.entry as KnownEntry }
}
