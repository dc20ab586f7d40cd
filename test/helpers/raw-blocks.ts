// What a compromised paired device writes to its own feeds when it does not go through Arbor's
// checks: blocks made by hand, appended as they are. The device is real (its HistoryStore,
// Corestore and key pair); only the check of what it writes is skipped.
import crypto from 'node:crypto'
import hypercoreCrypto from 'hypercore-crypto'
import type { HistoryStore } from '../../src/main/history/history-store'
import type { OwnFeeds } from '../../src/main/history/store/own-feeds'
import { makeEntryBlock } from '../../src/main/history/store/entry-codec'
import { encodeFields, hashInput, storedOf, type Entry, type EntryDraft, type WrittenEntry } from '../../src/shared/entry/entry'

/**
 * Appends blocks as they are to the device's own feed of a conversation. A feed it does not
 * have yet is made with `header` (given the feed's key) as its block 0, else with Arbor's own.
 */
export async function appendRawBlocks (history: HistoryStore, conversation: string, blocks: Buffer[], header?: (feed: string) => Buffer): Promise<void> {
  if (header !== undefined) {
    // the core OwnFeeds would make: it writes no header of its own on a feed that has one
    const core = history.corestore.get({ name: 'arbor/conversation/' + conversation })
    await core.ready()
    if (core.length === 0) await core.append(header((core.key as Buffer).toString('hex')))
    await core.close()
  }
  const own = (history as unknown as { ownFeeds: OwnFeeds }).ownFeeds
  await own.writeBlocks(await own.ownFeed(conversation), blocks)
}

/**
 * A conversation feed's header (feed-header.ts) with one more field nesting `depth` arrays,
 * validly signed by the device: the signed text is put together by hand, as deepNoteBlock's.
 */
export function deepHeaderBlock (o: { feed: string; conversation: string; device: { publicKey: Buffer; secretKey: Buffer }; depth: number }): Buffer {
  const device = o.device.publicKey.toString('hex')
  const signed = '{"conversation":"' + o.conversation + '","deep":' + '['.repeat(o.depth) + ']'.repeat(o.depth) + ',"device":"' + device + '","feed":"' + o.feed + '","type":"arbor/conversation","v":1}'
  const sig = hypercoreCrypto.sign(Buffer.from(signed), o.device.secretKey).toString('hex')
  return Buffer.from(signed.slice(0, -1) + ',"sig":"' + sig + '"}')
}

/** An ordinary entry of the device and its block, as Arbor writes it (to append by hand after the others). */
export function ordinaryBlock (device: string, conversation: string, draft: EntryDraft, ts = 1): { entry: Entry; block: Buffer } {
  return makeEntryBlock(draft, { conversation, device, ts })
}

/** The block of any entry with its true id, checked for nothing (too large, say). */
export function forgedBlock (e: Omit<WrittenEntry, 'id'>): { id: string; block: Buffer } {
  const id = crypto.hash('sha256', hashInput(e), 'hex')
  return { id, block: Buffer.from(storedOf(encodeFields(e), id)) }
}

/**
 * A `note` whose body holds `depth` nested arrays (`{"deep":[[[…]]],"text":…}`), with its true
 * id: its text is put together and hashed as canonical JSON without any recursive walk, so a
 * depth no encoder survives is no harder to write than any other.
 */
export function deepNoteBlock (o: { device: string; conversation: string; parent: string; depth: number; object?: boolean; ts?: number }): { id: string; block: Buffer } {
  const nested = o.object === true ? '{"a":'.repeat(o.depth) + '0' + '}'.repeat(o.depth) : '['.repeat(o.depth) + ']'.repeat(o.depth)
  const head = '{"author":{"device":"' + o.device + '"},"body":{"deep":' + nested + ',"text":"deep"},"conversation":"' + o.conversation + '"'
  const tail = ',"kind":"note","parents":["' + o.parent + '"],"ts":' + String(o.ts ?? 1) + ',"v":1}'
  const id = crypto.hash('sha256', head + tail, 'hex')
  return { id, block: Buffer.from(head + ',"id":"' + id + '"' + tail) }
}
