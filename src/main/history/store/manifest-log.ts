import type Corestore from 'corestore'
import type Hypercore from 'hypercore'
import type { Logger } from '../../../shared/logger'
import { makeFeedHeader, type DeviceKeyPair } from './feed-header'
import type { FeedRecord } from '../index/history-index'
import { parseManifestRecord, type ManifestRecord } from './manifest-record'
import { storageError } from '../../disk/storage-error'

/** feeds per manifest record: a peer's list of thousands is split into blocks of a few tens of KB */
const MANIFEST_RECORD_FEEDS = 256

/** learned feeds whose manifest record is written in one append */
interface LearnedBatch { keys: string[]; written: Promise<void> }

export interface ManifestLogOptions {
  corestore: Corestore
  /** the data directory, to name it in storage errors */
  dir: string
  log: Logger
  /** How long feed-length updates may wait before they are written (HistoryStoreOptions.manifestDelayMs). */
  delayMs: number
  /** the index's record of a feed */
  feed: (key: string) => FeedRecord | undefined
  /** This device's public key (hex). */
  device: () => string
  /** whether the store is closing: no new timer then */
  closing: () => boolean
  /** The manifest has `length` blocks after a record this device wrote (the index's manifestIndexed); `save`: lengths recorded, the index is to be saved. */
  recorded: (length: number, save: boolean) => void
}

/**
 * The manifest feed: every conversation feed this device holds, with lengths, so recovery
 * after a crash finds them. Own feeds are recorded when created; feeds learned from peers in
 * one batch a turn of the event loop; lengths that grew, at most once every delayMs.
 */
export class ManifestLog {
  private core_: Hypercore.Core | null = null
  private readonly manifestDirty = new Set<string>()
  /** learned feeds whose manifest record is being written: nothing of them is indexed before it is on disk */
  private readonly recording = new Map<string, Promise<void>>()
  /** learned feeds this session knows the manifest lists, while their header is not indexed yet */
  private readonly inManifest = new Set<string>()
  private learnedBatch: LearnedBatch | null = null
  private manifestTimer: NodeJS.Timeout | null = null

  constructor (private readonly opts: ManifestLogOptions) {}

  /** Opens the manifest feed, writing its signed header if it is new. */
  async open (keyPair: DeviceKeyPair): Promise<void> {
    const core = this.opts.corestore.get({ name: 'arbor/manifest' })
    this.core_ = core
    await core.ready()
    if (core.length === 0) {
      const header = makeFeedHeader({ type: 'arbor/manifest', feed: this.key.toString('hex') }, keyPair)
      await core.append(Buffer.from(JSON.stringify(header)))
    }
  }

  private get core (): Hypercore.Core {
    if (this.core_ === null) throw new Error('HistoryStore is not ready')
    return this.core_
  }

  /** The manifest feed's key, for peers to replicate. */
  get key (): Buffer {
    if (this.core_?.key == null) throw new Error('HistoryStore is not ready')
    return this.core_.key
  }

  get length (): number { return this.core.length }

  /** Whether the manifest is open (records may still be written). */
  get writable (): boolean { return this.core_ !== null && !this.core_.closed }

  /** The record in block i (1 or later), or null where the block is not one. */
  async record (i: number): Promise<ManifestRecord | null> {
    const block = await this.core.get(i)
    return block === null ? null : parseManifestRecord(block)
  }

  /** Records a feed this device created, with its length. */
  async recordInManifest (rec: FeedRecord, length: number): Promise<void> {
    const record: ManifestRecord = { feeds: [{ key: rec.key, conversation: rec.conversation, device: rec.own ? this.opts.device() : rec.device, length }] }
    await this.core.append(Buffer.from(JSON.stringify(record)))
    this.opts.recorded(this.core.length, false)
  }

  /** Whether this session knows the manifest lists a learned feed whose header is not indexed yet. */
  lists (key: string): boolean { return this.inManifest.has(key) }

  /** The manifest lists a learned feed (read back by recovery). */
  listed (key: string): void { this.inManifest.add(key) }

  /** A learned feed's header is indexed: from here on its watermark says it is recorded (indexed > 0). */
  headerIndexed (key: string): void { this.inManifest.delete(key) }

  /**
   * Writes a learned feed's manifest record; the feeds learned in one turn of the event
   * loop (a peer's whole list, at the first sync) share one append. Resolves once it is stored.
   */
  recordLearned (key: string): Promise<void> {
    const pending = this.recording.get(key)
    if (pending !== undefined) return pending
    if (this.learnedBatch === null) {
      const batch: LearnedBatch = { keys: [], written: Promise.resolve() }
      batch.written = new Promise<void>(resolve => setImmediate(resolve)).then(() => {
        this.learnedBatch = null
        return this.writeLearned(batch.keys)
      })
      // A failed record is retried by the next reader of the feed.
      const done = (): void => { for (const k of batch.keys) this.recording.delete(k) }
      batch.written.then(done, done)
      this.learnedBatch = batch
    }
    this.learnedBatch.keys.push(key)
    this.recording.set(key, this.learnedBatch.written)
    return this.learnedBatch.written
  }

  private async writeLearned (keys: string[]): Promise<void> {
    const feeds: ManifestRecord['feeds'] = []
    for (const k of keys) {
      const rec = this.opts.feed(k)
      if (rec !== undefined) feeds.push({ key: k, conversation: rec.conversation, device: rec.device, length: rec.indexed })
    }
    const blocks: Buffer[] = []
    for (let i = 0; i < feeds.length; i += MANIFEST_RECORD_FEEDS) blocks.push(Buffer.from(JSON.stringify({ feeds: feeds.slice(i, i + MANIFEST_RECORD_FEEDS) } satisfies ManifestRecord)))
    const manifest = this.core
    try {
      await manifest.append(blocks)
    } catch (err) {
      throw new Error(`could not record ${feeds.length} feed(s) learned from peers in the manifest: ${storageError(err, this.opts.dir).message}`, { cause: err })
    }
    this.opts.recorded(manifest.length, false)
    for (const k of keys) if (this.opts.feed(k)?.indexed === 0) this.inManifest.add(k)
  }

  /** A feed's watermark grew: its length goes into the next lengths record. */
  grew (key: string): void {
    this.manifestDirty.add(key)
    this.scheduleManifest()
  }

  private scheduleManifest (): void {
    if (this.manifestTimer !== null || this.opts.closing()) return
    this.manifestTimer = setTimeout(() => {
      this.manifestTimer = null
      this.writeManifestLengths().catch(err => this.opts.log.error(`could not update the manifest: ${(err as Error).message}`))
    }, this.opts.delayMs)
  }

  /** One manifest record with the new lengths of every feed that grew since the last one. */
  async writeManifestLengths (): Promise<void> {
    if (this.manifestDirty.size === 0) return
    const feeds: ManifestRecord['feeds'] = []
    for (const key of this.manifestDirty) {
      const rec = this.opts.feed(key)
      if (rec !== undefined) feeds.push({ key, conversation: rec.conversation, device: rec.device, length: rec.indexed })
    }
    this.manifestDirty.clear()
    try {
      await this.core.append(Buffer.from(JSON.stringify({ feeds } satisfies ManifestRecord)))
    } catch (err) {
      // not recorded (a full disk): these lengths go with the next record
      for (const f of feeds) this.manifestDirty.add(f.key)
      throw err
    }
    this.opts.recorded(this.core.length, true)
  }

  /** Once the learned feeds' records under way are written (or failed). */
  async settled (): Promise<void> {
    await Promise.allSettled([...this.recording.values()])
  }

  /** Stops the lengths timer (the store writes the last record itself as it closes). */
  stop (): void {
    if (this.manifestTimer !== null) clearTimeout(this.manifestTimer)
  }
}
