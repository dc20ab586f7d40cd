// Reading the search log front to back (a start, a compaction): its whole frames in chunks, a
// frame longer than a chunk read whole, stopping at a torn or damaged one.
import type fsp from 'node:fs/promises'
import { FRAME_HEAD, decodeFrames, frameLength, type SearchRecord } from './search-log'

const READ_CHUNK = 4 * 1024 * 1024

/**
 * Calls `each` with every record from `from` to `size` (its offset and frame), in order; returns
 * where the whole frames end and whether a damaged or torn one stopped it (`stop` ends it early).
 */
export async function scanLog (fh: fsp.FileHandle, from: number, size: number, each: (r: SearchRecord, at: number, frame: Buffer) => Promise<void> | void, stop: () => boolean = () => false): Promise<{ end: number; damaged: boolean }> {
  let pos = from
  let buf = Buffer.alloc(Math.min(READ_CHUNK, Math.max(0, size - pos)))
  while (pos < size && !stop()) {
    const want = Math.min(size - pos, Math.max(READ_CHUNK, buf.length))
    if (buf.length < want) buf = Buffer.alloc(want)
    const { bytesRead } = await fh.read(buf, 0, want, pos)
    const chunk = buf.subarray(0, bytesRead)
    const r = decodeFrames(chunk)
    for (const [i, { at, record }] of r.records.entries()) {
      const end = i + 1 < r.records.length ? (r.records[i + 1] as { at: number }).at : r.end
      await each(record, pos + at, chunk.subarray(at, end))
    }
    if (r.damaged || bytesRead === 0) return { end: pos + r.end, damaged: true }
    if (r.end === 0) {
      // a frame longer than the chunk: read it whole next time, unless it runs past the file
      const len = chunk.length >= FRAME_HEAD ? frameLength(chunk) : Infinity
      if (pos + len > size) return { end: pos, damaged: true }
      buf = Buffer.alloc(len)
      continue
    }
    pos += r.end
  }
  return { end: pos, damaged: false }
}
