import { z } from 'zod'

/**
 * 32 bytes as 64 lower-case hex characters: device and feed keys, entry and conversation ids,
 * digests. The one definition: a schema for zod shapes, a predicate for hand-written checks.
 */
export const HEX32 = /^[0-9a-f]{64}$/

export function isHex32 (x: unknown): x is string {
  return typeof x === 'string' && x.length === 64 && HEX32.test(x)
}

export const Hex32 = z.string().regex(HEX32, 'must be 64 lower-case hex characters')
