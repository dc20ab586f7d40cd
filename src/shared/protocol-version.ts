// Which versions of Arbor sync with which, and what a person is told when two differ
// (docs/ARCHITECTURE.md, "Evolving safely"). Pure: versions in, a verdict and words out.

/** What a device says of its version in the `arbor/1` hello. */
export interface ProtocolVersions {
  /** the protocol's major version: changes only with what an older device cannot safely ignore */
  major: number
  /** additions within the major: message types, message fields, entry envelope never */
  minor: number
  /** the oldest major this device still syncs with (it speaks the older protocol to such a peer) */
  oldest: number
  /** the entry kinds and bodies it knows (ENTRY_SCHEMA_VERSION) */
  schema: number
  /** the Arbor release it runs (for people only) */
  app?: string
}

/**
 * This Arbor's protocol: 1.4 (1.0 had no versions in its hello, and refused entries of kinds
 * it did not know; 1.1 sent its whole feed list on every reconnect that a peer had not cached;
 * 1.2 sends what changed, FeedsSince; 1.3 answers `held`, acknowledged intents; 1.4 relays
 * `alive` proofs, and a peer's bare `hears` no longer keeps a device alive). Bump `minor`
 * with every message type or message field added.
 */
export const PROTOCOL = { major: 1, minor: 4, oldest: 1 } as const

/** Whether a peer of these versions reads FeedsSince (protocol 1.2 on): else it is sent a FeedsDigest. */
export function speaksFeedsSince (peer: ProtocolVersions): boolean {
  return peer.major > 1 || peer.minor >= 2
}

/** A peer whose hello says nothing of versions: Arbor before 1.1. */
export const UNVERSIONED = { major: 1, minor: 0, oldest: 1, schema: 1 } as const

/**
 * How a peer's Arbor compares with this one's: 'same'; 'older' or 'newer' (they sync, but
 * one of them does not know all the other writes or says); 'too-old' or 'too-new' (their
 * protocols do not overlap: they do not sync).
 */
export type Compat = 'same' | 'older' | 'newer' | 'too-old' | 'too-new'

/** A paired device's version as this one sees it (Devices screen, `arbor devices`). */
export interface PeerVersion {
  compat: Compat
  /** its protocol, as "major.minor" */
  protocol: string
  schema: number
  app?: string
  /** what to do, in words ("update Arbor on server"); absent when compat is 'same' */
  advice?: string
}

export function compareVersions (self: ProtocolVersions, peer: ProtocolVersions): Compat {
  // Two devices sync when the ranges of majors they speak overlap.
  if (peer.major < self.oldest) return 'too-old'
  if (peer.oldest > self.major) return 'too-new'
  const order = peer.major - self.major || peer.minor - self.minor || peer.schema - self.schema
  return order < 0 ? 'older' : order > 0 ? 'newer' : 'same'
}

/** What a person should do about a peer `name` whose Arbor compares so with this one's. */
export function versionAdvice (compat: Compat, name: string, peer: ProtocolVersions): string | undefined {
  const protocol = `protocol ${peer.major}.${peer.minor}`
  const runs = `${name} runs ${peer.app !== undefined ? `Arbor ${peer.app} (${protocol})` : `an Arbor of ${protocol}`}`
  switch (compat) {
    case 'same': return undefined
    case 'older': return `${runs}, older than this one; it syncs, but update Arbor on ${name}`
    case 'newer': return `${runs}, newer than this one; it syncs, but some of its entries show here as from a newer version: update Arbor on this device`
    case 'too-old': return `not syncing: ${runs}, too old for this one; update Arbor on ${name}`
    case 'too-new': return `not syncing: ${runs}, too new for this one; update Arbor on this device`
  }
}

/** A peer's version as shown; `'unreadable'`: its hello has versions this one cannot read (a newer Arbor). */
export function peerVersion (self: ProtocolVersions, peer: ProtocolVersions | 'unreadable', name: string): PeerVersion {
  if (peer === 'unreadable') {
    return { compat: 'too-new', protocol: '?', schema: 0, advice: `not syncing: ${name} runs an Arbor whose versions this one cannot read; update Arbor on this device` }
  }
  const compat = compareVersions(self, peer)
  const v: PeerVersion = { compat, protocol: `${peer.major}.${peer.minor}`, schema: peer.schema }
  if (peer.app !== undefined) v.app = peer.app
  const advice = versionAdvice(compat, name, peer)
  if (advice !== undefined) v.advice = advice
  return v
}
