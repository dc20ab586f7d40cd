import type { Entry, WrittenEntry } from './entry-types'

/** An entry as its feed holds it: what export writes and what its id is the hash of. */
export function asWritten (e: Entry): WrittenEntry {
  if (e.kind !== 'unknown') return e
  const { body, ...envelope } = e
  return { ...envelope, kind: body.kind, body: body.body }
}
