import { z } from 'zod'
import { HEX32 } from './hex32'

/** A 32-byte key or id in a zod shape (see hex32.ts). */
export const Hex32 = z.string().regex(HEX32, 'must be 64 lower-case hex characters')
