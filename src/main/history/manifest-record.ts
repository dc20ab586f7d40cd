/**
 * A record of the manifest feed: feeds this device holds, with their lengths. The latest
 * record naming a feed wins; lengths only grow. Block 0 of the manifest is its header.
 */
export interface ManifestRecord {
  feeds: Array<{ key: string; conversation: string; device: string; length: number }>
}

const HEX32 = /^[0-9a-f]{64}$/

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
  for (const f of feeds as Array<Record<string, unknown>>) {
    if (typeof f?.key !== 'string' || !HEX32.test(f.key)) return null
    if (typeof f.conversation !== 'string' || !HEX32.test(f.conversation)) return null
    if (typeof f.device !== 'string' || (f.device !== '' && !HEX32.test(f.device))) return null
    if (typeof f.length !== 'number' || !Number.isInteger(f.length) || f.length < 0) return null
    out.push({ key: f.key, conversation: f.conversation, device: f.device, length: f.length })
  }
  return { feeds: out }
}
