// The search log's records (pure): what the full-text index persists so a restart does not read
// every feed again. A file is MAGIC, a version byte, then frames [uint32 length][uint32 crc32]
// [JSON payload], like index-codec: a torn or damaged frame ends what is read.
import { crc32 } from 'node:zlib'

export const SEARCH_MAGIC = Buffer.from('ARBSRCH')
export const SEARCH_FORMAT = 1
/** MAGIC, the version, and the log's nonce (the segment manifest names the log it covers by it) */
export const SEARCH_PREFIX = SEARCH_MAGIC.length + 1 + 16
export const FRAME_HEAD = 8

/** A document (a joined entry with text), a count of joined entries without text, or a conversation to forget. */
export type SearchRecord =
  | { t: 'd'; c: string; id: string; ts: number; x: string }
  | { t: 'n'; c: string; n: number }
  | { t: 'x'; c: string }

export function searchLogStart (nonce: Buffer): Buffer {
  return Buffer.concat([SEARCH_MAGIC, Buffer.from([SEARCH_FORMAT]), nonce])
}

/** A log's nonce, from its prefix. */
export function logNonce (head: Buffer): Buffer {
  return head.subarray(SEARCH_MAGIC.length + 1, SEARCH_PREFIX)
}

/** Why a file's start is not this version's search log, or null when it is. */
export function startProblem (head: Buffer): string | null {
  if (head.length < SEARCH_PREFIX || !head.subarray(0, SEARCH_MAGIC.length).equals(SEARCH_MAGIC)) return 'not a search log'
  const v = head[SEARCH_MAGIC.length] as number
  return v === SEARCH_FORMAT ? null : `search log format ${v} is not this version's ${SEARCH_FORMAT}`
}

export function encodeRecord (r: SearchRecord): Buffer {
  const payload = Buffer.from(JSON.stringify(r))
  const frame = Buffer.allocUnsafe(FRAME_HEAD + payload.length)
  frame.writeUInt32LE(payload.length, 0)
  frame.writeUInt32LE(crc32(payload), 4)
  payload.copy(frame, FRAME_HEAD)
  return frame
}

function isRecord (v: unknown): v is SearchRecord {
  if (typeof v !== 'object' || v === null) return false
  const r = v as Record<string, unknown>
  if (typeof r.c !== 'string') return false
  if (r.t === 'd') return typeof r.id === 'string' && typeof r.ts === 'number' && typeof r.x === 'string'
  if (r.t === 'n') return typeof r.n === 'number' && Number.isInteger(r.n) && r.n >= 0
  return r.t === 'x'
}

/**
 * The whole frames at the start of `buf` (a chunk of the file after its prefix): each record
 * with its offset in the chunk, where the whole frames end, and whether a damaged one (bad
 * checksum or record) stopped the reading; a frame cut by the chunk's end is not damaged.
 */
export function decodeFrames (buf: Buffer): { records: Array<{ at: number; record: SearchRecord }>; end: number; damaged: boolean } {
  const records: Array<{ at: number; record: SearchRecord }> = []
  let at = 0
  while (buf.length - at >= FRAME_HEAD) {
    const len = buf.readUInt32LE(at)
    if (buf.length - at - FRAME_HEAD < len) break
    const payload = buf.subarray(at + FRAME_HEAD, at + FRAME_HEAD + len)
    const record = crc32(payload) === buf.readUInt32LE(at + 4) ? decodePayload(payload) : null
    if (record === null) return { records, end: at, damaged: true }
    records.push({ at, record })
    at += FRAME_HEAD + len
  }
  return { records, end: at, damaged: false }
}

function decodePayload (payload: Buffer): SearchRecord | null {
  try {
    const v: unknown = JSON.parse(payload.toString('utf8'))
    return isRecord(v) ? v : null
  } catch {
    return null
  }
}

/** The length of the frame starting a buffer's first FRAME_HEAD bytes. */
export function frameLength (head: Buffer): number {
  return FRAME_HEAD + head.readUInt32LE(0)
}
