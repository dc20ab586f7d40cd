import crypto from 'hypercore-crypto'
import { canonicalJson } from '../../../shared/entry/canonical-json'
import { isHex32 } from '../../../shared/entry/hex32'
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../../shared/entry/json-depth'

/**
 * Block 0 of every feed Arbor writes says what the feed is and which device wrote it,
 * signed by that device's key, so entries read from a peer's feed can be checked
 * against the device that really wrote them.
 *
 * Evolving it (docs/ARCHITECTURE.md, "Evolving safely"): a newer version may add fields;
 * the signature covers every field but `sig`, so an older reader verifies a header with
 * fields it does not know, and ignores them. `v` changes only with what an older reader
 * cannot check (these fields' meaning, the signature): a header of another `v` is refused,
 * as the hello's protocol version keeps such a peer from syncing anyway.
 */
export interface FeedHeader {
  type: 'arbor/conversation' | 'arbor/manifest'
  v: 1
  feed: string          // the feed's own key (hex): binds the signature to this feed
  device: string        // the writing device's public key (hex)
  conversation?: string // for conversation feeds
  sig: string
}

/** The header version this Arbor writes and reads. */
export const FEED_HEADER_VERSION = 1

export interface DeviceKeyPair { publicKey: Buffer; secretKey: Buffer }

/** What the signature covers: every field but `sig`, those a newer version added included. */
function signable (h: Omit<FeedHeader, 'sig'> & { sig?: unknown }): Buffer {
  const { sig: _sig, ...signed } = h
  return Buffer.from(canonicalJson(signed))
}

export function makeFeedHeader (h: Omit<FeedHeader, 'sig' | 'device' | 'v'>, device: DeviceKeyPair): FeedHeader {
  const unsigned = { ...h, v: FEED_HEADER_VERSION as 1, device: device.publicKey.toString('hex') }
  return { ...unsigned, sig: crypto.sign(signable(unsigned), device.secretKey).toString('hex') }
}

/** Parses and verifies block 0; throws an Error saying what is wrong. */
export function verifyFeedHeader (block: Buffer, feedKey: Buffer, expect: { type: FeedHeader['type']; conversation?: string }): FeedHeader {
  const where = `feed ${feedKey.toString('hex').slice(0, 12)}`
  // Checked on the text before it is parsed and walked (the signature covers a canonical encoding of every field).
  const text = block.toString('utf8')
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw new Error(`${where}: header nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects, more than Arbor reads`)
  let h: FeedHeader
  try {
    h = JSON.parse(text) as FeedHeader
  } catch {
    throw new Error(`${where}: header is not JSON`)
  }
  if (h === null || typeof h !== 'object') throw new Error(`${where}: header is not an object`)
  if (h.type !== expect.type) throw new Error(`${where}: not an ${expect.type} feed (type ${String(h.type)})`)
  if (h.v !== FEED_HEADER_VERSION) {
    throw new Error(`${where}: header version ${String(h.v)}, which this Arbor does not read (header version ${FEED_HEADER_VERSION}): written by ${typeof h.v === 'number' && h.v > FEED_HEADER_VERSION ? 'a newer Arbor; update Arbor on this device' : 'something else than Arbor'}`)
  }
  if (h.feed !== feedKey.toString('hex')) throw new Error(`${where}: header names another feed`)
  if (!isHex32(h.device)) throw new Error(`${where}: header has no device key`)
  if (expect.conversation !== undefined && h.conversation !== expect.conversation) {
    throw new Error(`${where}: belongs to conversation ${String(h.conversation).slice(0, 12)}, not ${expect.conversation.slice(0, 12)}`)
  }
  if (typeof h.sig !== 'string' || !/^[0-9a-f]{128}$/.test(h.sig) ||
      !crypto.verify(signable(h), Buffer.from(h.sig, 'hex'), Buffer.from(h.device, 'hex'))) {
    throw new Error(`${where}: header signature does not verify for device ${h.device.slice(0, 12)}`)
  }
  return h
}
