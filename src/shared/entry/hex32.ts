/**
 * 32 bytes as 64 lower-case hex characters: device and feed keys, entry and conversation ids,
 * digests. The one definition: a predicate for hand-written checks here, the zod schema built
 * on it in hex32-schema.ts (apart, so that `arbor ls`, which checks ids, does not load zod).
 */
export const HEX32 = /^[0-9a-f]{64}$/

export function isHex32 (x: unknown): x is string {
  return typeof x === 'string' && x.length === 64 && HEX32.test(x)
}
