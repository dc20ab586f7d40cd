import c from 'compact-encoding'
import { z } from 'zod'
import { Hex32 } from '../../../shared/entry/hex32-schema'
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../../shared/entry/json-depth'
import { UNVERSIONED, type ProtocolVersions } from '../../../shared/protocol-version'

/**
 * The messages of the `arbor/1` channel: their shapes, and a compact-encoding codec for each
 * (`arborMessages`, in wire order), the way hypercore's lib/messages.js names its own.
 * Everything from a peer is checked against these before use: a malformed message is
 * reported and dropped, never trusted.
 */

const Count = z.number().int().nonnegative()
const ProtocolField = z.object({ major: Count.min(1), minor: Count, oldest: Count.min(1) })

/**
 * The first message on `arbor/1`, in every version. `v` is sent as 1 (Arbor 1.0 requires it)
 * and read as any number; the versions (absent from 1.0's hello) say whether the two devices
 * sync (shared/protocol-version.ts). A newer version may add fields, never change these; the
 * versions are read apart (helloVersions), so a hello whose versions this one cannot read is
 * still a hello: that device is shown as too new, not dropped.
 */
export const Hello = z.object({
  v: z.number(),
  device: Hex32,
  name: z.string().max(200),
  manifest: Hex32.optional(),
  protocol: z.unknown().optional(),
  schema: z.unknown().optional(),
  app: z.unknown().optional()
})

/** The versions a hello says; 'unreadable' if they are there but not as this version reads them. */
export function helloVersions (m: Hello): ProtocolVersions | 'unreadable' {
  if (m.protocol === undefined) return { ...UNVERSIONED }
  const p = ProtocolField.safeParse(m.protocol)
  const schema = Count.safeParse(m.schema)
  if (!p.success || !schema.success) return 'unreadable'
  const v: ProtocolVersions = { ...p.data, schema: schema.data }
  // A release name is only shown: anything but a short plain one is left out.
  if (typeof m.app === 'string' && /^[0-9A-Za-z.+-]{1,40}$/.test(m.app)) v.app = m.app
  return v
}
export const FeedsMessage = z.object({
  /** true: the complete list (on connect); false: only feeds that changed */
  full: z.boolean(),
  feeds: z.array(z.object({ conversation: Hex32, key: Hex32, length: z.number().int().nonnegative() })).max(100_000)
})
/** On connect: a digest of every feed held and its length. A peer that has the same list cached asks for nothing. */
export const FeedsDigest = z.object({ digest: Hex32, count: z.number().int().nonnegative() })
/** Asks for the complete feeds list (the digest did not match what this device has cached). */
export const WantFeeds = z.object({})
/**
 * On connect, from protocol 1.2 (older peers ignore it; they are sent a FeedsDigest once their
 * hello says what they are): the sender's feeds that changed since it last told this device
 * (`full`: its whole list, to replace what this device had), and the digest and count of its
 * whole list once they are applied (FeedList). A receiver whose list then has another digest
 * asks for the whole list (WantFeeds).
 */
export const FeedsSince = z.object({
  full: z.boolean(),
  digest: Hex32,
  count: z.number().int().nonnegative(),
  feeds: FeedsMessage.shape.feeds
})

/**
 * Who is in the cluster. `devices` and `forgotten` are unsigned: older versions act on them,
 * this one does not. `statements` (optional: older peers neither send it nor keep it, as
 * z.object strips what it does not know) are the signed membership statements; each is
 * checked on its own (membership.ts), so one this version cannot read drops only itself.
 */
export const DevicesMessage = z.object({
  devices: z.array(z.object({ key: Hex32, name: z.string().max(200), addedAt: z.number() })).max(1000),
  forgotten: z.array(z.object({ key: Hex32, at: z.number() })).max(10_000),
  statements: z.array(z.unknown()).max(5000).optional()
})
export const RunningAgent = z.object({ conversation: Hex32, epoch: z.number().int().nonnegative(), device: Hex32 })
export const PresenceMessage = z.object({ agents: z.array(RunningAgent).max(10_000) })
/**
 * `hears`: the devices the sender says it hears right now (the receiver's lease counts whether it
 * is among them; before protocol 1.4 it also kept those devices alive: now only `alive` proofs do).
 * `echo`: the last `t` this device received from the peer it sends to (renews that peer's lease;
 * older versions send none and ignore it).
 */
export const HeartbeatMessage = z.object({ t: z.number(), hears: z.array(Hex32).max(1000).optional(), echo: z.number().optional() })
/** Live events for other devices' UIs (streamed tokens, tool output): never history. */
export const LiveMessage = z.object({ conversation: Hex32, event: z.record(z.string(), z.unknown()) })
const FeedLength = z.object({ key: Hex32, length: z.number().int().nonnegative() })
/**
 * Acknowledged intents (held-acks.ts; protocol 1.3): `want` asks the peer to answer once it
 * holds these feeds through `length`; `held` answers: the sender holds them (stored in its copy,
 * indexed) through `length`, which covers every block below. Older versions ignore the type.
 */
export const HeldMessage = z.object({ want: z.array(FeedLength).max(1000).optional(), held: z.array(FeedLength).max(1000).optional() })

const Sig = z.string().regex(/^[0-9a-f]{128}$/, 'must be 128 lower-case hex characters')
/** How many devices or answers one `alive` message carries at most. */
export const ALIVE_MAX = 64
/**
 * Heard through a peer (alive-proofs.ts; protocol 1.4): `ask`, from a device to its peers: "prove
 * these devices alive, over my nonce `n`"; `relay`, from a peer to a device it hears: "sign these
 * askers' nonces"; `proofs`, that device's signatures, to the relaying peer and on to each asker.
 * Older versions ignore the type.
 */
export const AliveMessage = z.object({
  ask: z.object({ n: Hex32, about: z.array(Hex32).max(ALIVE_MAX) }).optional(),
  relay: z.array(z.object({ asker: Hex32, n: Hex32 })).max(ALIVE_MAX).optional(),
  proofs: z.array(z.object({ device: Hex32, asker: Hex32, n: Hex32, sig: Sig })).max(ALIVE_MAX).optional()
})

export type Hello = z.infer<typeof Hello>
export type FeedsMessage = z.infer<typeof FeedsMessage>
export type FeedAnnouncement = FeedsMessage['feeds'][number]
export type DevicesMessage = z.infer<typeof DevicesMessage>
export type FeedsDigest = z.infer<typeof FeedsDigest>
export type FeedsSince = z.infer<typeof FeedsSince>
export type RunningAgent = z.infer<typeof RunningAgent>
export type PresenceMessage = z.infer<typeof PresenceMessage>
export type HeartbeatMessage = z.infer<typeof HeartbeatMessage>
export type LiveMessage = z.infer<typeof LiveMessage>
export type HeldMessage = z.infer<typeof HeldMessage>
export type AliveMessage = z.infer<typeof AliveMessage>
export type WantFeeds = z.infer<typeof WantFeeds>

/**
 * What decoding a message from a peer gives: the checked message, or why it is not one.
 * Never a throw: Protomux destroys the whole stream (the feeds' replication with it) when a
 * decode throws, and one garbled frame must cost that frame only.
 */
export type Decoded<T> = { ok: true; value: T } | { ok: false; error: string }

/** A codec for one message: encodes what this device sends, decodes what a peer sent into a Decoded. */
export type MessageCodec<T> = c.Encoding<T, Decoded<T>>

/**
 * JSON text behind a length, the bytes c.json writes and every version of arbor/1 sends,
 * read against a zod shape (which drops the fields it does not know, as it always has).
 */
function jsonMessage<S extends z.ZodType> (schema: S): MessageCodec<z.infer<S>> {
  return {
    preencode: (state, m) => { c.json.preencode(state, m) },
    encode: (state, m) => { c.json.encode(state, m) },
    decode: state => {
      let raw: unknown
      try {
        const text = c.string.decode(state)
        // before anything walks it (zod, canonical JSON of a statement): recursion has a bottom
        if (nestsDeeperThan(text)) return { ok: false, error: `nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects` }
        raw = JSON.parse(text)
      } catch (err) {
        state.start = state.end // the rest of this frame is not read
        return { ok: false, error: `not JSON (${(err as Error).message})` }
      }
      const m = schema.safeParse(raw)
      if (m.success) return { ok: true, value: m.data }
      const issue = m.error.issues[0]
      return { ok: false, error: issue === undefined ? 'not of its shape' : `${issue.path.join('.') || 'the message'}: ${issue.message}` }
    }
  }
}

/**
 * The `arbor/1` messages in wire order: a message's type number is its place here. Append
 * only: an older version knows the first ones and ignores the types past them.
 */
export const ARBOR_MESSAGES = ['hello', 'feeds', 'devices', 'presence', 'heartbeat', 'live', 'feedsDigest', 'wantFeeds', 'feedsSince', 'held', 'alive'] as const
export type ArborMessageName = typeof ARBOR_MESSAGES[number]

export const arborMessages = {
  hello: jsonMessage(Hello),
  feeds: jsonMessage(FeedsMessage),
  devices: jsonMessage(DevicesMessage),
  presence: jsonMessage(PresenceMessage),
  heartbeat: jsonMessage(HeartbeatMessage),
  live: jsonMessage(LiveMessage),
  feedsDigest: jsonMessage(FeedsDigest),
  wantFeeds: jsonMessage(WantFeeds),
  feedsSince: jsonMessage(FeedsSince),
  held: jsonMessage(HeldMessage),
  alive: jsonMessage(AliveMessage)
} satisfies Record<ArborMessageName, object>

/** What each message carries. */
export type ArborMessage<K extends ArborMessageName> = (typeof arborMessages)[K] extends MessageCodec<infer T> ? T : never
