import type Hypercore from 'hypercore'
import { MAX_ENTRY_BLOCK_BYTES, MAX_ENTRY_BYTES, type Entry } from '../../../shared/entry/entry'
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../../shared/entry/json-depth'
import { TOO_DEEP, validateEntry } from './entry-codec'
import type { FeedRecord } from '../index/history-index'

/** What of a Hypercore session's internals a batched read uses (hypercore 11): its storage's read batch. */
interface ReadBatch { getBlock (index: number): Promise<Buffer | null>; tryFlush (): void }
interface SessionInternals { closing?: unknown; encryption?: unknown; valueEncoding?: unknown; state?: { storage?: { read?: () => ReadBatch } } }

/**
 * Blocks start..end-1 of a feed as this device's storage holds them (null for one it lacks):
 * never waits for a peer, never asks one. One storage read batch for the whole range, where
 * `core.get` makes one per block and costs ~4 times the CPU (bench/scale's sync line). A
 * session with an encoding or encryption, a closing one, or a Hypercore without these internals
 * is read block by block through `get`, which gives the same bytes (or its SESSION_CLOSED).
 */
export async function readLocalBlocks (core: Hypercore.Core, start: number, end: number): Promise<Array<Buffer | null>> {
  if (end <= start) return []
  const s = core as unknown as SessionInternals
  const read = s.state?.storage?.read
  if (s.closing != null || s.encryption != null || s.valueEncoding != null || typeof read !== 'function') {
    const out: Array<Promise<Buffer | null>> = []
    for (let i = start; i < end; i++) out.push(core.get(i, { wait: false }))
    return Promise.all(out)
  }
  const rx = read.call(s.state?.storage)
  const out: Array<Promise<Buffer | null>> = []
  for (let i = start; i < end; i++) out.push(rx.getBlock(i))
  rx.tryFlush()
  return Promise.all(out)
}

/**
 * A block of a conversation feed as an entry of that feed's device and conversation, or why it
 * is not one. Never throws: a peer's block costs that block at most, never the rest of its feed
 * (nor a start-up that reads it again). Its size and depth are checked on its bytes, before
 * anything parses or walks it.
 */
export function decodeBlock (block: Buffer, feed: Pick<FeedRecord, 'device' | 'conversation'>): { ok: true; entry: Entry; text: string } | { ok: false; error: string } {
  if (block.length > MAX_ENTRY_BLOCK_BYTES) return { ok: false, error: `block of ${block.length} bytes: larger than ${MAX_ENTRY_BYTES} bytes, the most an entry may be` }
  const text = block.toString('utf8')
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) return { ok: false, error: `block ${TOO_DEEP}` }
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    return { ok: false, error: 'block is not JSON' }
  }
  let v: ReturnType<typeof validateEntry>
  try {
    v = validateEntry(raw, feed.device)
  } catch (err) {
    return { ok: false, error: `block cannot be read as an entry: ${(err as Error).message}` }
  }
  if (!v.ok) return v
  if (v.entry.conversation !== feed.conversation) return { ok: false, error: `entry ${v.entry.id.slice(0, 12)} belongs to another conversation` }
  return { ok: true, entry: v.entry, text }
}
