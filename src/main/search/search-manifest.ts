// The manifest of the full-text index's segments (pure): which segment files hold the documents
// of the search log up to `logBytes`, and the conversation table as it was there, so a start
// opens the segments and reads only the log past it. MAGIC, a crc32 of the JSON, the JSON. It
// names its log by the nonce in the log's header: a manifest of another log is not used.
import { crc32 } from 'node:zlib'
import type { ConversationsState } from './search-conversations'

const MAGIC = Buffer.from('ARBSMAN1')

export interface SearchManifest {
  logBytes: number
  conversations: ConversationsState
  /** segment file names (in the segment directory), oldest first */
  segments: string[]
}

export function encodeManifest (nonce: Buffer, m: SearchManifest): Buffer {
  const json = Buffer.from(JSON.stringify({ nonce: nonce.toString('hex'), ...m }))
  const crc = Buffer.alloc(4)
  crc.writeUInt32LE(crc32(json))
  return Buffer.concat([MAGIC, crc, json])
}

/** The manifest, or why it is not one of this log. */
export function decodeManifest (buf: Buffer, nonce: Buffer): SearchManifest | string {
  if (buf.length < MAGIC.length + 4 || !buf.subarray(0, MAGIC.length).equals(MAGIC)) return 'not a search manifest of this version'
  const json = buf.subarray(MAGIC.length + 4)
  if (crc32(json) !== buf.readUInt32LE(MAGIC.length)) return 'the search manifest is damaged'
  let v: unknown
  try { v = JSON.parse(json.toString('utf8')) } catch { return 'the search manifest is not JSON' }
  const m = v as Partial<SearchManifest> & { nonce?: unknown }
  if (m.nonce !== nonce.toString('hex')) return 'the manifest is of another search log'
  const c = m.conversations
  if (typeof m.logBytes !== 'number' || !Array.isArray(m.segments) || !m.segments.every(s => typeof s === 'string' && /^[0-9a-f]+\.seg$/.test(s)) ||
    typeof c !== 'object' || c === null || !Array.isArray(c.ids) || !Array.isArray(c.seen) || !Array.isArray(c.dropAt) || !Array.isArray(c.liveBytes) || typeof c.deadBytes !== 'number') return 'the search manifest is not one'
  return { logBytes: m.logBytes, conversations: c, segments: m.segments }
}
