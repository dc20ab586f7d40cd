import { createHash } from 'node:crypto'
import {
  InvalidEntryError, MAX_ENTRY_BYTES, checkEntryShape, encodeEntry, hashInput,
  type Author, type Entry, type EntryDraft, type Validation
} from '../../shared/entry'

/** An entry's id: the SHA-256 (hex) of its canonical encoding without the id. */
export function entryId (e: Omit<Entry, 'id'> | Entry): string {
  return sha256Hex(hashInput(e))
}

function sha256Hex (input: string): string {
  return createHash('sha256').update(input, 'utf8').digest('hex')
}

/**
 * Checks schema, per-kind body, structure and that the id is the hash of the entry.
 * `device`, when given, is the device that wrote the feed the entry came from.
 */
export function validateEntry (raw: unknown, device?: string): Validation {
  const checked = checkEntryShape(raw, device)
  if (!checked.ok) return checked
  const entry = checked.entry
  const input = hashInput(entry)
  const id = sha256Hex(input)
  if (id !== entry.id) return { ok: false, error: `entry ${entry.id.slice(0, 12)}: id is not the hash of its content (expected ${id.slice(0, 12)}): tampered or corrupt` }
  if (input.length > MAX_ENTRY_BYTES) return { ok: false, error: `entry ${entry.id.slice(0, 12)}: larger than ${MAX_ENTRY_BYTES} bytes` }
  return { ok: true, entry }
}

/**
 * Builds a complete entry from a draft; throws InvalidEntryError if the result is invalid.
 * Hashes once: the id is computed here, so it is not checked again.
 */
export function makeEntry (draft: EntryDraft, ctx: { conversation: string | null; device: string; ts: number }): Entry {
  const author: Author = draft.agent === undefined ? { device: ctx.device } : { device: ctx.device, agent: draft.agent }
  const partial = { v: 1 as const, conversation: ctx.conversation ?? '', parents: draft.parents, author, ts: ctx.ts, kind: draft.kind, body: draft.body }
  let input: string
  try {
    input = hashInput(partial as Omit<Entry, 'id'>)
  } catch (err) {
    throw new InvalidEntryError(`${draft.kind} entry: ${(err as Error).message}`)
  }
  if (input.length > MAX_ENTRY_BYTES) throw new InvalidEntryError(`${draft.kind} entry: larger than ${MAX_ENTRY_BYTES} bytes`)
  const id = sha256Hex(input)
  const built = { ...partial, id, conversation: draft.parents.length === 0 ? id : partial.conversation } as Entry
  // What is returned is what is stored: parsed back from the stored encoding (-0, holes, undefined).
  const entry = JSON.parse(encodeEntry(built)) as Entry
  const v = checkEntryShape(entry, ctx.device)
  if (!v.ok) throw new InvalidEntryError(v.error)
  return entry
}
