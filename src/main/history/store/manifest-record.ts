import { isHex32 } from '../../../shared/entry/hex32'

/**
 * A record of the manifest feed: feeds this device holds, with their lengths. The latest
 * record naming a feed wins; lengths only grow. Block 0 of the manifest is its header.
 */
export interface ManifestRecord {
  feeds: Array<{ key: string; conversation: string; device: string; length: number }>
}

/** Parses one manifest block, or null if it is not a manifest record. */
export function parseManifestRecord (block: Buffer): ManifestRecord | null {
  let raw: unknown
  try {
    raw = JSON.parse(block.toString('utf8'))
  } catch {
    return null
  }
  const feeds = (raw as { feeds?: unknown })?.feeds
  if (!Array.isArray(feeds)) return null
  const out: ManifestRecord['feeds'] = []
  for (const f of feeds as Array<Record<string, unknown> | null>) {
    const { key, conversation, device, length } = f ?? {}
    if (!isHex32(key) || !isHex32(conversation)) return null
    if (typeof device !== 'string' || (device !== '' && !isHex32(device))) return null
    if (typeof length !== 'number' || !Number.isInteger(length) || length < 0) return null
    out.push({ key, conversation, device, length })
  }
  return { feeds: out }
}
