// A device of an older protocol at one end of a link, for the version tests: the frozen
// session of test/fixtures/protocol-1.0 or -1.1 (the code as that version shipped it, kept a
// copy on purpose) with a real HistoryStore behind it, announcing its feeds as a node does.
import type { FeedRecord } from '../../src/main/history/index/history-index'
import type { HistoryStore } from '../../src/main/history/history-store'
import { memoryLogger } from '../../src/shared/logger'
import * as v10 from '../fixtures/protocol-1.0/sync-session'
import * as v11 from '../fixtures/protocol-1.1/sync-session'
import type { MemoryLink } from './in-process-network'
import type { PerTest } from './per-test'
import type { TestCluster } from './test-cluster'

export interface OldPeerOptions {
  history: HistoryStore
  cluster: TestCluster
  /** this peer's end of the link */
  stream: MemoryLink['b']
  /** the feed lists it keeps of its peers across connections (a fresh one by default) */
  feedCache?: v10.SessionHost['feedCache']
  /** where the session's end is registered (perTest's defer) */
  defer: PerTest['defer']
}

export interface OldPeer<S> {
  session: S
  /** what it warned of: a message of this version it could not read */
  warnings: () => string[]
}

/** A device of protocol 1.0 (before hellos carried versions). */
export function peerOf10 (opts: OldPeerOptions): OldPeer<v10.SyncSession> {
  const log = memoryLogger()
  const session = new v10.SyncSession(opts.stream, { ...hostOf(opts, log, v10), name: 'old' })
  return started(session, opts, log)
}

/** A device of protocol 1.1 (hellos carry versions; no FeedsSince). */
export function peerOf11 (opts: OldPeerOptions): OldPeer<v11.SyncSession> {
  const log = memoryLogger()
  const host: v11.SessionHost = {
    ...hostOf(opts, log, v11),
    name: 'v1.1',
    versions: { major: 1, minor: 1, oldest: 1, schema: 1, app: '0.1.0' },
    onIncompatible: () => {},
    onEcho: () => {}
  }
  return started(new v11.SyncSession(opts.stream, host), opts, log)
}

/** What every old session needs of its node: the cluster's proofs and device list, its store's feed digest; nothing else heard. */
function hostOf (opts: OldPeerOptions, log: ReturnType<typeof memoryLogger>, fixture: typeof v10 | typeof v11) {
  const { history, cluster } = opts
  return {
    history,
    log,
    proof: (hh: Buffer, init: boolean) => cluster.proof(hh, init),
    verify: (hh: Buffer, init: boolean, proof: Buffer) => cluster.verifyProof(hh, init, proof),
    devices: () => cluster.devicesMessage(),
    mergeDevices: (msg: Parameters<TestCluster['merge']>[0]) => { cluster.merge(msg) },
    presence: () => [],
    onOpen: () => {},
    onHeard: () => {},
    onPresence: () => {},
    onHears: () => {},
    onLive: () => {},
    onClose: () => {},
    localDigest: () => { const feeds = fixture.localFeeds(history); return { digest: fixture.feedsDigest(feeds), count: feeds.length } },
    openTimeoutMs: 3000,
    feedCache: opts.feedCache ?? new Map()
  }
}

/** Starts the session; every feed the store adds, or can serve more of, is announced (as a node does) until the test ends. */
function started<S extends v10.SyncSession | v11.SyncSession> (session: S, opts: OldPeerOptions, log: ReturnType<typeof memoryLogger>): OldPeer<S> {
  const { history } = opts
  const onFeed = (rec: FeedRecord): void => { session.sendFeeds([{ conversation: rec.conversation, key: rec.key, length: history.availableLength(rec.key) }]) }
  history.on('feed', onFeed)
  opts.defer(() => { history.off('feed', onFeed); session.close('the test ended') })
  session.start()
  return { session, warnings: () => log.lines.filter(l => l.level === 'warn').map(l => l.message) }
}
