import type Corestore from 'corestore'
import type Hypercore from 'hypercore'
import { makeFeedHeader, type DeviceKeyPair } from './feed-header'
import type { FeedPool } from './feed-pool'
import type { FeedRecord, IndexState } from '../index/history-index'
import type { ManifestLog } from './manifest-log'

const FEED_PREFIX = 'arbor/conversation/'

export interface OwnFeedsOptions {
  corestore: Corestore
  pool: FeedPool
  manifest: ManifestLog
  /** the index (its feed records) */
  state: () => IndexState
  device: () => string
  keyPair: () => DeviceKeyPair
  /** Before the first write of a session, the index on disk must say it may be stale. */
  markDirty: () => Promise<void>
  /** A feed record changed: it goes into the next index save. */
  changed: (key: string) => void
  /** A feed of this device was created or grew: the 'feed' event. */
  announce: (rec: FeedRecord) => void
}

/** This device's feed of each conversation: created with its signed header on first use, and written in batches. */
export class OwnFeeds {
  /** the own feed's key of each conversation */
  private readonly keys = new Map<string, string>()
  private keysRead = false
  /** the length of each own feed after its last write, whether or not the feed is open now */
  private readonly lengths = new Map<string, number>()

  constructor (private readonly opts: OwnFeedsOptions) {}

  /** The length of an own feed after its last write this session, if any. */
  length (key: string): number | undefined {
    return this.lengths.get(key)
  }

  /** This device's feed for a conversation, created (with its signed header) on first use. */
  async ownFeed (conversation: string): Promise<Hypercore.Core> {
    if (!this.keysRead) {
      for (const f of Object.values(this.opts.state().feeds)) if (f.own) this.keys.set(f.conversation, f.key)
      this.keysRead = true
    }
    const existing = this.keys.get(conversation)
    if (existing !== undefined) return this.opts.pool.core(existing)
    const core = this.opts.corestore.get({ name: FEED_PREFIX + conversation })
    await core.ready()
    const key = hex(core)
    this.opts.pool.add(key, core)
    const rec: FeedRecord = { key, conversation, device: this.opts.device(), own: true, indexed: 1 }
    await this.opts.pool.pinWhile(key, async () => {
      if (core.length === 0) {
        const header = makeFeedHeader({ type: 'arbor/conversation', feed: key, conversation }, this.opts.keyPair())
        await this.opts.markDirty()
        await core.append(Buffer.from(JSON.stringify(header)))
      }
      // Known as this device's feed only once the manifest lists it: after a failed write (a
      // full disk) the next append records it again instead of writing to an unlisted feed.
      await this.opts.manifest.recordInManifest(rec, core.length)
      this.opts.state().feeds[key] = rec
      this.opts.changed(key)
      this.keys.set(conversation, key)
    })
    this.opts.announce({ ...rec })
    return core
  }

  /** Appends entries' blocks (makeEntryBlock) to an own feed, in one Hypercore append. */
  async writeBlocks (core: Hypercore.Core, blocks: Buffer[]): Promise<void> {
    const key = hex(core)
    await this.opts.pool.pinWhile(key, async () => {
      await this.opts.markDirty()
      await core.append(blocks)
    })
    this.lengths.set(key, core.length)
    this.opts.announce({ ...this.opts.state().feeds[key] as FeedRecord })
  }
}

export function hex (core: Hypercore.Core): string {
  return (core.key as Buffer).toString('hex')
}
