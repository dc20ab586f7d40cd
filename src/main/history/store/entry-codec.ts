import crypto from 'node:crypto'
import { TooDeepError, canonicalJson, type Json } from '../../../shared/entry/canonical-json'
import {
  BODY_SCHEMAS, InvalidEntryError, MAX_ENTRY_BYTES, checkEntryShape, checkEnvelope, copyBody, encodeWritten, fitsBody, hashInput, inputOf, storedOf, understand,
  type Author, type EncodedFields, type KnownEntry, type EntryDraft, type Validation, type WrittenEntry
} from '../../../shared/entry/entry'
import { MAX_JSON_DEPTH } from '../../../shared/entry/json-depth'

/** An entry's id: the SHA-256 (hex) of its canonical encoding (as written) without the id. */
export function entryId (e: Omit<WrittenEntry, 'id'> | WrittenEntry): string {
  return sha256Hex(hashInput(e))
}

function sha256Hex (input: string): string {
  return crypto.hash('sha256', input, 'hex')
}

/** Why an entry nesting past the envelope's bound is refused, read and written alike. */
export const TOO_DEEP = `nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects, more than an entry may`

/**
 * Checks an entry read from a feed: its envelope and structure, that the id is the hash of
 * the entry, its size and depth. Only these refuse it; a kind or body this version does not
 * understand gives an UnknownEntry (DESIGN.md, "Evolution"). `device`, when given, is the
 * device that wrote the feed the entry came from. (decodeBlock checks size and depth on the
 * block's bytes first, before anything parses them.)
 */
export function validateEntry (raw: unknown, device?: string): Validation {
  const checked = checkEnvelope(raw, device)
  if (!checked.ok) return checked
  const entry = checked.entry
  let input: string
  try {
    input = hashInput(entry)
  } catch (err) {
    if (err instanceof TooDeepError) return { ok: false, error: `entry ${entry.id.slice(0, 12)}: ${TOO_DEEP}` }
    throw err
  }
  const id = sha256Hex(input)
  if (id !== entry.id) return { ok: false, error: `entry ${entry.id.slice(0, 12)}: id is not the hash of its content (expected ${id.slice(0, 12)}): tampered or corrupt` }
  if (input.length > MAX_ENTRY_BYTES) return { ok: false, error: `entry ${entry.id.slice(0, 12)}: larger than ${MAX_ENTRY_BYTES} bytes` }
  return { ok: true, entry: understand(entry) }
}

/**
 * Builds a complete entry from a draft; throws InvalidEntryError if the result is invalid.
 * Remembers nothing: what the store writes comes from makeEntryBlock, and encodeEntry of
 * the entry gives the same bytes again.
 */
export function makeEntry (draft: EntryDraft, ctx: EntryContext): KnownEntry {
  return makeEntryBlock(draft, ctx).entry
}

export interface EntryContext { conversation: string | null; device: string; ts: number }

/**
 * makeEntry, and beside the entry its feed block: encodeEntry's bytes, encoded to UTF-8 once
 * (the feed, the entry cache's line and the DAG's size estimate all take this Buffer).
 * Encodes and hashes once: the id is computed here, so it is not checked again. `parents`
 * replaces the draft's (its `$k` resolved) without a copy of the draft.
 */
export function makeEntryBlock (draft: EntryDraft, ctx: EntryContext, parents: string[] = draft.parents): { entry: KnownEntry; block: Buffer } {
  const author: Author = draft.agent === undefined ? { device: ctx.device } : { device: ctx.device, agent: draft.agent }
  const partial = { v: 1 as const, conversation: ctx.conversation ?? '', parents, author, ts: ctx.ts, kind: draft.kind, body: draft.body }
  // a draft's kind is named in its errors; one that is not even a string cannot be
  const what = typeof draft.kind === 'string' ? draft.kind : 'an'
  let written: { fields: EncodedFields; entry: WrittenEntry }
  let input: string
  try {
    written = encodeWritten(partial)
    input = inputOf(written.fields)
  } catch (err) {
    if (err instanceof TooDeepError) throw new InvalidEntryError(`${what} entry: ${TOO_DEEP} (its ${err.at.slice(1)} nests deeper than ${err.maxDepth})`)
    throw new InvalidEntryError(`${what} entry: ${(err as Error).message}`)
  }
  if (input.length > MAX_ENTRY_BYTES) throw new InvalidEntryError(`${what} entry: larger than ${MAX_ENTRY_BYTES} bytes`)
  const id = sha256Hex(input)
  // What is returned is what is stored (JSON.parse(block) would give the same object: -0,
  // holes, undefined), a copy the caller's draft cannot change afterwards.
  const entry = written.entry as KnownEntry
  entry.id = id
  const { fields } = written
  if (fields.conversation === null) entry.conversation = id
  const v = checkEntryShape(entry, ctx.device)
  if (!v.ok) throw new InvalidEntryError(v.error)
  return { entry, block: Buffer.from(storedOf(fields, id)) }
}

/** What the store makes of an entry it appends: its own conversation and device, and its clock's time. */
export interface OwnEntryContext { conversation: string; device: string; ts: number }

/**
 * makeEntryBlock of an entry this device appends to a conversation it holds: `ctx` is the
 * store's own (ids it made or checked) and every one of `parents` is an entry it holds or has
 * just made (the caller checked each, and the array is not the draft's), so only what the
 * draft chose is checked here: its kind, agent and body, that parents do not repeat. Anything
 * not surely valid goes the whole way through makeEntryBlock, which decides and says why:
 * the same entry, block and refusals (test/property/shared/entry.property.test.ts). Every own append
 * passes here: the ids are not looked at again, the envelope is written without an encoder.
 */
export function makeOwnEntryBlock (draft: EntryDraft, ctx: OwnEntryContext, parents: string[]): { entry: KnownEntry; block: Buffer } {
  const { kind, agent, body } = draft
  const ts = ctx.ts
  if (
    typeof kind !== 'string' || kind === 'conversation' || !Object.hasOwn(BODY_SCHEMAS, kind) ||
    !(agent === undefined || (typeof agent === 'string' && agent.length >= 1 && agent.length <= 200)) ||
    parents.length === 0 || parents.length > 64 || (parents.length > 1 && new Set(parents).size !== parents.length) ||
    !Number.isSafeInteger(ts) || ts < 0 || body === undefined
  ) return makeEntryBlock(draft, ctx, parents)
  let copied: { json: string; copy: Json }
  try {
    copied = copyBody(body)
  } catch {
    return makeEntryBlock(draft, ctx, parents)
  }
  // fitsBody is only ever stricter than the schema: where it is unsure, the whole way decides
  if (!fitsBody(kind, copied.copy)) return makeEntryBlock(draft, ctx, parents)
  // Canonical JSON, keys in code-unit order: ids and a known kind need no escaping, a safe integer is its digits.
  const author = agent === undefined ? '{"device":"' + ctx.device + '"}' : '{"agent":' + canonicalJson(agent) + ',"device":"' + ctx.device + '"}'
  const head = '{"author":' + author + ',"body":' + copied.json + ',"conversation":"' + ctx.conversation + '"'
  const tail = ',"kind":"' + kind + '","parents":["' + parents.join('","') + '"],"ts":' + String(ts) + ',"v":1}'
  const input = head + tail
  if (input.length > MAX_ENTRY_BYTES) return makeEntryBlock(draft, ctx, parents)
  const id = sha256Hex(input)
  const entry = {
    author: agent === undefined ? { device: ctx.device } : { agent, device: ctx.device },
    body: copied.copy,
    conversation: ctx.conversation,
    id,
    kind,
    parents,
    ts: ts === 0 ? 0 : ts, // a -0 reads back as 0
    v: 1
  } as unknown as KnownEntry
  return { entry, block: Buffer.from(head + ',"id":"' + id + '"' + tail) }
}
