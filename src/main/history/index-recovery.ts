import type { Logger } from '../../shared/logger'
import type { ConversationIndex } from './conversation-index'
import type { EntryCache } from './store/entry-cache'
import type { FeedPool } from './store/feed-pool'
import { emptyIndex, type HistoryIndexFile } from './index/history-index'
import type { IndexWriter } from './index/index-writer'
import type { ManifestLog } from './store/manifest-log'
import type { PeerFeedFollower } from './store/peer-feed-follower'
import type { ResidentDags } from './store/resident-dags'
import { storageError } from '../disk/storage-error'

export interface IndexRecoveryParts {
  /** the data directory, to name it in storage errors */
  dir: string
  log: Logger
  /** This device's public key (hex). */
  device: string
  file: HistoryIndexFile
  index: IndexWriter
  cache: EntryCache
  manifest: ManifestLog
  pool: FeedPool
  follower: PeerFeedFollower
  dags: ResidentDags
  conversations: ConversationIndex
}

/**
 * The index as the store opens: loaded; the previous version's converted; rebuilt from the
 * manifest and the feeds when lost or unreadable; reconciled with them when the store was
 * not closed cleanly (after a crash the index may lag the feeds).
 */
export async function recoverIndex (p: IndexRecoveryParts): Promise<void> {
  const { state, problem, legacy, outdated } = await p.file.load(p.device)
  if (problem !== undefined) p.log.warn(`rebuilding the index: ${problem}`)
  // The previous version's index.json, or a snapshot without the listing `arbor ls` reads:
  // written once in this version's format (index.json then removed), as it is.
  if (state !== null && (legacy === true || outdated === true)) {
    p.index.state = state
    await p.index.saveIndex().catch(err => { p.log.warn(`could not convert the index yet: ${storageError(err, p.dir).message}`) })
  }
  if (state === null) {
    p.index.state = emptyIndex(p.device)
    p.index.state.clean = false
    await rebuild(p)
  } else {
    p.index.state = state
    if (!state.clean) {
      p.log.info('the store was not closed cleanly; reconciling the index with the feeds')
      await p.index.markDirty()
      await reconcile(p)
    }
  }
}

/** Rebuilds the index from the manifest and the feeds (after a lost or unreadable index). */
async function rebuild (p: IndexRecoveryParts): Promise<void> {
  await p.index.markDirty()
  await p.cache.clear()
  p.index.state.manifestIndexed = 0
  await reconcile(p)
}

/** Reads the manifest and every own feed past their watermarks (after a crash the index may lag). */
async function reconcile (p: IndexRecoveryParts): Promise<void> {
  const { manifest, index } = p
  const state = index.state
  for (let i = Math.max(1, state.manifestIndexed); i < manifest.length; i++) {
    const rec = await manifest.record(i)
    if (rec === null) { p.log.warn(`manifest block ${i} is unreadable; skipped`); continue }
    for (const f of rec.feeds) {
      const known = state.feeds[f.key]
      if (known !== undefined) {
        if (!known.own && known.indexed === 0) manifest.listed(f.key)
        continue
      }
      const own = f.device === p.device
      state.feeds[f.key] = { key: f.key, conversation: f.conversation, device: own ? p.device : '', own, indexed: 0 }
      index.changed('feed', f.key)
      if (!own) manifest.listed(f.key)
    }
  }
  state.manifestIndexed = manifest.length
  for (const rec of Object.values(state.feeds)) {
    const core = await p.pool.core(rec.key)
    // Only what is on this disk: replication resumes the rest when peers are back.
    if (rec.indexed < core.contiguousLength) await p.follower.readFeed(rec, core, false)
  }
  for (const id of new Set(Object.values(state.feeds).map(f => f.conversation))) {
    const dag = await p.dags.load(id)
    p.conversations.summarise(dag)
  }
  await index.saveIndex()
}
