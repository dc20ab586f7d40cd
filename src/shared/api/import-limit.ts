/**
 * The largest session file conversation.import takes, in characters: the API's messages are
 * capped at 8 MiB and the text travels as a JSON string (escaped again). Without zod: the UI
 * checks a chosen file against it before reading it.
 */
export const MAX_IMPORT_CHARS = 3 * 1024 * 1024

/** Why a session file of `chars` characters (or bytes, before reading) is too large, or undefined. */
export function importTooLarge (chars: number, what = 'the file'): string | undefined {
  if (chars <= MAX_IMPORT_CHARS) return undefined
  return `${what} is ${(chars / 1024 / 1024).toFixed(1)} MiB; sessions up to ${MAX_IMPORT_CHARS / 1024 / 1024} MiB are imported`
}
