import crypto from 'node:crypto'
import {
  InvalidEntryError, MAX_ENTRY_BYTES, checkEntryShape, checkEnvelope, encodeWritten, hashInput, inputOf, storedOf, understand,
  type Author, type EncodedFields, type KnownEntry, type EntryDraft, type Validation, type WrittenEntry
} from '../../shared/entry'

/** An entry's id: the SHA-256 (hex) of its canonical encoding (as written) without the id. */
export function entryId (e: Omit<WrittenEntry, 'id'> | WrittenEntry): string {
  return sha256Hex(hashInput(e))
}

function sha256Hex (input: string): string {
  return crypto.hash('sha256', input, 'hex')
}

/**
 * Checks an entry read from a feed: its envelope and structure, that the id is the hash of
 * the entry, its size. Only these refuse it; a kind or body this version does not understand
 * gives an UnknownEntry (DESIGN.md, "Evolution"). `device`, when given, is the device that
 * wrote the feed the entry came from.
 */
export function validateEntry (raw: unknown, device?: string): Validation {
  const checked = checkEnvelope(raw, device)
  if (!checked.ok) return checked
  const entry = checked.entry
  const input = hashInput(entry)
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
    throw new InvalidEntryError(`${what} entry: ${(err as Error).message}`)
  }
  if (input.length > MAX_ENTRY_BYTES) throw new InvalidEntryError(`${what} entry: larger than ${MAX_ENTRY_BYTES} bytes`)
  // The hash input's UTF-8, made once: hashed, and (but for a root) the block around its id.
  const bytes = Buffer.from(input)
  const id = crypto.hash('sha256', bytes, 'hex')
  // What is returned is what is stored (JSON.parse(block) would give the same object: -0,
  // holes, undefined), a copy the caller's draft cannot change afterwards.
  const entry = written.entry as KnownEntry
  entry.id = id
  const { fields } = written
  if (fields.conversation === null) entry.conversation = id
  const v = checkEntryShape(entry, ctx.device)
  if (!v.ok) throw new InvalidEntryError(v.error)
  return { entry, block: fields.conversation === null ? Buffer.from(storedOf(fields, id)) : blockAround(bytes, fields.tail.length, id) }
}

/**
 * A child's block from its hash input's bytes: the same with `,"id":"…"` before the tail (its
 * kind, parents, ts and v: ASCII once the entry passed its checks), where canonical key order
 * puts it (storedOf's text, without encoding it again).
 */
function blockAround (input: Buffer, tailBytes: number, id: string): Buffer {
  const at = input.length - tailBytes
  const block = Buffer.allocUnsafe(input.length + ID_FIELD_BYTES)
  input.copy(block, 0, 0, at)
  block.write(',"id":"' + id + '"', at, 'latin1')
  input.copy(block, at + ID_FIELD_BYTES, at)
  return block
}

const ID_FIELD_BYTES = ',"id":"'.length + 64 + 1
