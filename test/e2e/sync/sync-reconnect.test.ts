// A reconnect costs what changed (docs/ARCHITECTURE.md, "Reconnecting"; issue 12 "Scale"):
// real HistoryStores and SyncNodes on MemoryLinks, restarts on their own directories, and a
// peer of protocol 1.0 (test/fixtures/protocol-1.0).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import fs from 'node:fs/promises'
import path from 'node:path'
import crypto from 'hypercore-crypto'
import { HistoryStore } from '../../../src/main/history/history-store'
import { PEER_FEEDS_FILE, SyncNode } from '../../../src/main/sync/sync-node'
import { SyncSession, localFeeds } from '../../../src/main/sync/wire/sync-session'
import type { FeedsDigest, FeedsMessage, FeedsSince } from '../../../src/main/sync/wire/arbor-messages'
import { memoryLogger } from '../../../src/shared/logger'
import { FeedList } from '../../../src/main/sync/peers/feed-list'
import { decodePeer, decodePeerFeedsFile } from '../../../src/main/sync/peers/peer-feeds-file'
import c from 'compact-encoding'
import Protomux from 'protomux'
import { MemoryLink } from '../../helpers/in-process-network'
import { TestCluster, type TestDevices } from '../../helpers/test-cluster'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'
import type { SyncSession as Session11 } from '../../fixtures/protocol-1.1/sync-session'
import type { SyncSession as OldSyncSession } from '../../fixtures/protocol-1.0/sync-session'
import { peerOf10, peerOf11, type OldPeer, type OldPeerOptions } from '../../helpers/old-peer'

const { dirs, defer } = perTest('arbor-reconnect-')

/** What a session received of the feed exchange: the device it runs on, and what. */
interface Got { on: string; type: 'since' | 'feeds' | 'digest' | 'want'; full?: boolean; feeds?: number }
let got: Got[] = []
const on = (s: SyncSession): string => (s.stream.publicKey as Buffer).toString('hex')
beforeEach(() => {
  got = []
  const proto = SyncSession.prototype as unknown as Record<string, (this: SyncSession, m?: unknown) => void>
  const record = (name: string, f: (s: SyncSession, m: never) => Got): void => {
    const orig = proto[name] as (this: SyncSession, m?: unknown) => void
    vi.spyOn(proto, name).mockImplementation(function (this: SyncSession, m?: unknown) { got.push(f(this, m as never)); orig.call(this, m) })
  }
  record('onFeedsSince', (s, m: FeedsSince) => ({ on: on(s), type: 'since', full: m.full, feeds: m.feeds.length }))
  record('onFeeds', (s, m: FeedsMessage) => ({ on: on(s), type: 'feeds', full: m.full, feeds: m.feeds.length }))
  record('onDigest', (s, _m: FeedsDigest) => ({ on: on(s), type: 'digest' }))
  record('sendAllFeeds', s => ({ on: on(s), type: 'want' }))
})
afterEach(() => { vi.restoreAllMocks() })

interface Dev { dir: string; history: HistoryStore; node: SyncNode }

/** Feeds a store holds open (its idle sweep closes them). */
const openCores = (h: HistoryStore): number => (h as unknown as { cores: Map<string, unknown> }).cores.size
/** Counts the feeds a store opens from now on (as bench/lib/sync-devices' openCounter does, on the Corestore). */
function openCounter (h: HistoryStore): () => number {
  const tracker = (h.corestore as unknown as { cores: { set: (id: string, core: unknown) => void } }).cores
  const original = tracker.set
  let n = 0
  tracker.set = function (this: unknown, id: string, core: unknown) { n++; original.call(this, id, core) }
  defer(() => { tracker.set = original })
  return () => n
}
const trusted: TestDevices = new Map()
const secret = crypto.randomBytes(32)

async function start (dir?: string, opts: { idleCloseMs?: number } = {}): Promise<Dev> {
  const d = dir ?? await dirs.make()
  const history = new HistoryStore({ dir: d, log: memoryLogger(), ...opts })
  await history.ready()
  const cluster = new TestCluster(secret, trusted)
  cluster.add(history.device)
  const node = new SyncNode({ history, cluster, swarm: false, log: memoryLogger(), heartbeatMs: 100, suspectAfterMs: 2000 })
  await node.ready()
  const dev = { dir: d, history, node }
  defer(() => stop(dev))
  return dev
}

async function stop (d: Dev): Promise<void> {
  await d.node.close()
  await d.history.close()
}

interface Conn { link: MemoryLink; a: SyncSession; b: SyncSession }

/** Links two nodes and waits until each knows the other's whole list as the other holds it now. */
async function connect (a: Dev, b: Dev): Promise<Conn> {
  const link = new MemoryLink(a.history.keyPair, b.history.keyPair)
  defer(() => link.cut())
  expect(await link.opened()).toBe(true)
  const sa = a.node.attach(link.a)
  const sb = b.node.attach(link.b)
  if (sa === null || sb === null) throw new Error('a node refused the connection')
  const c = { link, a: sa, b: sb }
  await until(() => knows(sa, b.history) && knows(sb, a.history), 'each to know the other\'s list')
  return c
}

/** Whether a session's picture of its peer's feeds is exactly what the peer's full list says. */
function knows (s: SyncSession, peer: HistoryStore): boolean {
  const want = localFeeds(peer)
  return s.opened && s.remoteFeeds.size === want.length && want.every(f => {
    const r = s.remoteFeeds.get(f.key)
    return r !== undefined && r.length === f.length && r.conversation === f.conversation
  })
}

/** Waits until no feed message has come for a while (heartbeats go on), so `got` is complete. */
async function settle (_link: MemoryLink, quietMs = 300): Promise<void> {
  let n = -1
  let since = 0
  await until(() => {
    if (got.length !== n) { n = got.length; since = performance.now() }
    return performance.now() - since >= quietMs
  }, 'the feed exchange to go quiet', 10_000, 20)
}

const note = (text: string, parent: string) => ({ kind: 'note' as const, body: { text }, parents: [parent] })

async function conversations (d: Dev, n: number): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < n; i++) {
    const root = await d.history.createConversation({ title: `c${i}` })
    await d.history.append(root.id, [note(`n${i}`, root.id)])
    ids.push(root.id)
  }
  return ids
}

/** What was received of the feed exchange since `from`, by device. */
const since = (from: number, d: Dev): Array<Omit<Got, 'on'>> => got.slice(from).filter(g => g.on === d.history.device).map(({ on: _on, ...g }) => g)

/** Two devices that synced 12 conversations (6 each), then cut. */
async function synced (): Promise<{ a: Dev; b: Dev; ids: string[]; conn: Conn }> {
  const [a, b] = [await start(undefined, { idleCloseMs: 100 }), await start(undefined, { idleCloseMs: 100 })]
  const ids = [...await conversations(a, 6), ...await conversations(b, 6)]
  const conn = await connect(a, b)
  await until(() => ids.every(id => a.history.summary(id)?.size === 2 && b.history.summary(id)?.size === 2), 'every conversation on both')
  await until(() => knows(conn.a, b.history) && knows(conn.b, a.history), 'the lists after indexing')
  await settle(conn.link)
  await conn.link.cut()
  return { a, b, ids, conn }
}

describe('a reconnect', () => {
  it('with nothing changed sends no feed, opens no feed, and each side knows the other\'s whole list', async () => {
    const { a, b } = await synced()
    const mark = got.length
    // wait until the idle sweep closed what the first sync opened, then count what is opened
    await until(() => [a, b].every(d => openCores(d.history) === 0), 'the feeds to close as idle', 10_000)
    const opens = [a, b].map(d => openCounter(d.history))
    const conn = await connect(a, b)
    await settle(conn.link)
    expect(opens.map(o => o())).toEqual([0, 0])
    expect(since(mark, a)).toEqual([{ type: 'since', full: false, feeds: 0 }])
    expect(since(mark, b)).toEqual([{ type: 'since', full: false, feeds: 0 }])
    expect(conn.a.remoteFeeds.size).toBe(b.history.feeds().length)
  })

  it('after one feed grew, or a conversation was made, sends that feed alone, and the entries come', async () => {
    const { a, b, ids } = await synced()
    const [e] = await a.history.append(ids[0] as string, [note('while apart', ids[0] as string)])
    const fresh = await b.history.createConversation({ title: 'made while apart' })
    const mark = got.length
    const conn = await connect(a, b)
    await until(() => b.history.summary(ids[0] as string)?.size === 3 && a.history.summary(fresh.id)?.size === 1, 'the new entries')
    expect((await b.history.open(ids[0] as string)).has((e as { id: string }).id)).toBe(true)
    await settle(conn.link)
    // each side hears of one feed on connect; after that only the usual live announcements
    // (the receiver can now serve more of the feed it read)
    expect(since(mark, b)[0]).toEqual({ type: 'since', full: false, feeds: 1 })
    expect(since(mark, a)[0]).toEqual({ type: 'since', full: false, feeds: 1 })
    expect(got.slice(mark).filter(g => g.type === 'want' || g.full === true)).toEqual([])
    expect(knows(conn.a, b.history) && knows(conn.b, a.history)).toBe(true)
  })

  for (const side of ['a', 'b'] as const) {
    it(`after ${side} restarted sends what changed, not the whole list, both ways`, async () => {
      const pair = await synced()
      const dev = pair[side]
      // a change before it stops: the other holds that feed shorter
      const id = pair.ids[side === 'a' ? 2 : 8] as string
      await dev.history.append(id, [note('before the restart', id)])
      const grown = dev.history.feeds(id).find(f => f.own)?.key as string
      await stop(dev)
      // it saved the other's list as its own but for where they differ: that feed
      const saved = decodePeerFeedsFile(await fs.readFile(path.join(dev.dir, PEER_FEEDS_FILE)))
      const block = saved.peers.get(pair[side === 'a' ? 'b' : 'a'].history.device)
      expect(block !== undefined && decodePeer(block).like).toEqual({ differ: [[grown, 3]], absent: [] })
      const back = await start(dev.dir)
      // a start reads no peer's state: each is read when that peer first needs it
      const backNode = back.node as unknown as { mine: FeedList; peerFeeds: Map<string, { heard: FeedList }>; peerFeedsOf (device: string): { heard: FeedList } }
      expect(backNode.peerFeeds.size).toBe(0)
      const other = pair[side === 'a' ? 'b' : 'a']
      const [a, b] = side === 'a' ? [back, pair.b] : [pair.a, back]
      // and a change on the restarted side (before it reads its peer's state), and one on the other
      await a.history.append(pair.ids[1] as string, [note('after the restart', pair.ids[1] as string)])
      await b.history.append(pair.ids[7] as string, [note('meanwhile', pair.ids[7] as string)])
      const changed = back.history.feeds(pair.ids[side === 'a' ? 1 : 7]).find(f => f.own)?.key as string
      await until(() => backNode.mine.get(changed)?.length === back.history.availableLength(changed), 'the restarted side to list its change')
      const restored = backNode.peerFeedsOf(other.history.device)
      // what it restored is what it saved: each list's digest is that of what it holds
      for (const l of [backNode.mine, restored.heard]) {
        const again = new FeedList()
        for (const [k, f] of l.feeds) again.set(k, f)
        expect(l.digest).toBe(again.digest)
      }
      expect(restored.heard.get(grown)?.length).toBe(3)
      const mark = got.length
      const conn = await connect(a, b)
      await until(() => b.history.summary(pair.ids[1] as string)?.size === 3 && a.history.summary(pair.ids[7] as string)?.size === 3, 'both changes')
      await until(() => pair[side === 'a' ? 'b' : 'a'].history.summary(id)?.size === 3, 'the change before the restart')
      await settle(conn.link)
      // the restarted side tells of two feeds (before and after its restart), the other of one
      expect(since(mark, side === 'a' ? b : a)[0]).toEqual({ type: 'since', full: false, feeds: 2 })
      expect(since(mark, side === 'a' ? a : b)[0]).toEqual({ type: 'since', full: false, feeds: 1 })
      expect(got.slice(mark).filter(g => g.type === 'want' || g.full === true)).toEqual([])
      expect(knows(conn.a, b.history) && knows(conn.b, a.history)).toBe(true)
    })
  }

  /**
   * b stops, `spoil` changes what it saved of a, b starts again and a appends; they reconnect:
   * b2 knows nothing of a, so a's delta does not reach a's digest and b2 asks for the whole
   * list; a was never told by b2 since, so b2 sends its whole list; both end up exact.
   */
  async function reconnectUnsaved (spoil: (b: Dev, a: Dev) => Promise<void>): Promise<Dev> {
    const { a, b, ids } = await synced()
    await stop(b)
    await spoil(b, a)
    const b2 = await start(b.dir)
    await a.history.append(ids[2] as string, [note('x', ids[2] as string)])
    const mark = got.length
    const conn = await connect(a, b2)
    await settle(conn.link)
    expect(since(mark, b2).slice(0, 2)).toEqual([{ type: 'since', full: false, feeds: 1 }, { type: 'feeds', full: true, feeds: a.history.feeds().length }])
    expect(since(mark, a)[0]).toEqual({ type: 'since', full: true, feeds: b2.history.feeds().length })
    expect(knows(conn.a, b2.history) && knows(conn.b, a.history)).toBe(true)
    return b2
  }

  it('with the saved state lost or unreadable, falls back to the whole list and still ends up exact', async () => {
    await reconnectUnsaved(async b => { await fs.writeFile(path.join(b.dir, PEER_FEEDS_FILE), '{"v": 1, "peers": 7}') })
  })

  it('ignores the sync-peers.json the first build of 1.2 wrote: the whole list once, then that file is gone', async () => {
    const b2 = await reconnectUnsaved(async (b, a) => {
      // what that build saved: its own list and a peer holding the same, as JSON
      const feeds = b.history.feeds().map(f => [f.key, f.indexed])
      await fs.rm(path.join(b.dir, PEER_FEEDS_FILE), { force: true })
      await fs.writeFile(path.join(b.dir, 'sync-peers.json'), JSON.stringify({ v: 1, mine: { digest: '0'.repeat(64), feeds }, peers: { [a.history.device]: { digest: '0'.repeat(64), like: { differ: [], absent: [] }, unsent: [] } } }))
    })
    await until(async () => !await fs.stat(path.join(b2.dir, 'sync-peers.json')).then(() => true, () => false), 'the old file to be removed', 10_000)
    await fs.stat(path.join(b2.dir, PEER_FEEDS_FILE))
  })
})

// ------------------------------------------------------------------ peers of older protocols

/**
 * A device of an older protocol, in the cluster, with its own store; connect(h) links h to it
 * afresh (the old session on its end keeps its feed cache across links) and resolves once each
 * has the other's list. warnings: what its sessions warned of so far.
 */
async function oldSide<S extends OldSyncSession | Session11> (peerOf: (o: OldPeerOptions) => OldPeer<S>): Promise<{ store: HistoryStore; connect: (h: Dev) => Promise<{ link: MemoryLink; s: SyncSession; o: S }>; warnings: () => string[] }> {
  const store = new HistoryStore({ dir: await dirs.make(), log: memoryLogger() })
  await store.ready()
  defer(() => store.close())
  const cluster = new TestCluster(secret, trusted)
  cluster.add(store.device)
  const feedCache: OldPeerOptions['feedCache'] = new Map()
  const peers: Array<OldPeer<S>> = []
  const connect = async (h: Dev): Promise<{ link: MemoryLink; s: SyncSession; o: S }> => {
    const link = new MemoryLink(h.history.keyPair, store.keyPair)
    defer(() => link.cut())
    expect(await link.opened()).toBe(true)
    const s = h.node.attach(link.a) as SyncSession
    const o = peerOf({ history: store, cluster, stream: link.b, feedCache, defer })
    peers.push(o)
    await until(() => knows(s, store) && o.session.remoteFeeds.size === h.history.feeds().length, 'the lists both ways')
    return { link, s, o: o.session }
  }
  return { store, connect, warnings: () => peers.flatMap(p => p.warnings()) }
}

// ------------------------------------------------------------------ a peer of protocol 1.0

describe('a reconnect with a peer of protocol 1.0', () => {
  it('syncs both ways on every connection, and this device\'s saved picture of it spares the old one\'s list after a restart', async () => {
    const here = await start()
    const { store: old, connect: link } = await oldSide(peerOf10)
    const [mine] = await conversations(here, 1) as [string]
    const theirs = await old.createConversation({ title: 'theirs' })
    let c = await link(here)
    await until(() => old.summary(mine)?.size === 2 && here.history.summary(theirs.id)?.size === 1, 'both conversations on both')
    await settle(c.link)
    await c.link.cut()

    // again, with a change on each side: live and on connect, both ways
    await here.history.append(mine, [note('new here', mine)])
    await old.append(theirs.id, [note('new there', theirs.id)])
    c = await link(here)
    await until(() => old.summary(mine)?.size === 3 && here.history.summary(theirs.id)?.size === 2, 'the changes both ways')
    await settle(c.link)
    await c.link.cut()

    // this device restarts; the old one keeps its cache: its digest matches what this one saved
    await stop(here)
    const back = await start(here.dir)
    const mark = got.length
    c = await link(back)
    await settle(c.link)
    expect(since(mark, back)[0]).toEqual({ type: 'digest' })
    expect(since(mark, back).filter(g => g.type === 'feeds' && g.full === true)).toEqual([])
    const [late] = await old.append(theirs.id, [note('live from the old one', theirs.id)])
    await until(async () => (await back.history.open(theirs.id)).has((late as { id: string }).id), 'a live entry from the old one')
    expect(knows(c.s, old)).toBe(true)
  })
})

// ------------------------------------------------------------------ a peer of protocol 1.1 (the one before FeedsSince)

describe('a reconnect with a peer of protocol 1.1', () => {
  it('is sent the FeedsDigest it reads, syncs both ways live and on every connection, and ignores FeedsSince', async () => {
    const here = await start()
    const { store: other, connect: link, warnings } = await oldSide(peerOf11)
    const [mine] = await conversations(here, 1) as [string]
    const theirs = await other.createConversation({ title: 'theirs' })
    let c = await link(here)
    await until(() => other.summary(mine)?.size === 2 && here.history.summary(theirs.id)?.size === 1, 'both conversations on both')
    expect(c.o.compat).toBe('newer')
    await settle(c.link)
    await c.link.cut()

    for (let round = 0; round < 2; round++) {
      await here.history.append(mine, [note(`here ${round}`, mine)])
      await other.append(theirs.id, [note(`there ${round}`, theirs.id)])
      const mark = got.length
      c = await link(here)
      // (theirs also has the live entry of each round before)
      await until(() => other.summary(mine)?.size === 3 + round && here.history.summary(theirs.id)?.size === 2 + 2 * round, 'the changes both ways')
      expect(since(mark, here)[0]).toEqual({ type: 'digest' })
      const [late] = await other.append(theirs.id, [note(`live ${round}`, theirs.id)])
      await until(async () => (await here.history.open(theirs.id)).has((late as { id: string }).id), 'a live entry from 1.1')
      await settle(c.link)
      await c.link.cut()
    }
    expect(warnings()).toEqual([]) // it read every message this one sent it, and ignored FeedsSince
  })
})

// ------------------------------------------------------------------ a peer that lies about its list

describe('a peer that says nothing changed while its feed grew', () => {
  /** A trusted device driven by hand: a real HistoryStore, replication, and an arbor/1 channel of protocol 1.2 that says what the test says. */
  async function liar (here: Dev): Promise<{ h: HistoryStore; heard: Array<[number, unknown]>; connect: () => Promise<{ link: MemoryLink; send: (type: number, m: unknown) => void; session: SyncSession }> }> {
    const heard: Array<[number, unknown]> = []
    const h = new HistoryStore({ dir: await dirs.make(), log: memoryLogger() })
    await h.ready()
    defer(() => h.close())
    const cluster = new TestCluster(secret, trusted)
    cluster.add(h.device)
    const connect = async (): Promise<{ link: MemoryLink; send: (type: number, m: unknown) => void; session: SyncSession }> => {
      const link = new MemoryLink(here.history.keyPair, h.keyPair)
      defer(() => link.cut())
      expect(await link.opened()).toBe(true)
      const session = here.node.attach(link.a) as SyncSession
      h.replicate(link.b)
      let opened!: () => void
      const wait = new Promise<void>(resolve => { opened = resolve })
      const channel = Protomux.from(link.b).createChannel({
        protocol: 'arbor/1',
        handshake: c.fixed32,
        messages: Array.from({ length: 9 }, (_, i) => ({ encoding: c.json, onmessage: (m: unknown) => { heard.push([i, m]) } })),
        onopen: () => opened()
      }) as Protomux.Channel
      channel.open(cluster.proof(link.b.handshakeHash as Buffer, false))
      await wait
      const msgs = (channel as unknown as { messages: Protomux.Message[] }).messages
      const send = (type: number, m: unknown): void => { msgs[type]?.send(m) }
      send(0, { v: 1, device: h.device, name: 'liar', manifest: h.manifestKey.toString('hex'), protocol: { major: 1, minor: 2, oldest: 1 }, schema: 1 })
      return { link, send, session }
    }
    return { h, heard, connect }
  }

  /** The digest and count of a list, as FeedsSince carries them. */
  const listOf = (h: HistoryStore): { digest: string; count: number; feeds: ReturnType<typeof localFeeds> } => {
    const l = new FeedList()
    const feeds = localFeeds(h)
    for (const f of feeds) l.set(f.key, f)
    return { digest: l.digest, count: l.size, feeds }
  }

  it('is caught by the feed\'s own replication where this device has the feed open; elsewhere it delays only the liar\'s own news, until a device holding it says so', async () => {
    const here = await start(undefined, { idleCloseMs: 300 })
    const l = await liar(here)
    const [x, y] = [await l.h.createConversation({ title: 'x' }), await l.h.createConversation({ title: 'y' })]
    let c = await l.connect()
    let ey: { id: string } | undefined
    const told = listOf(l.h)
    const lengthOf = (key: string): number => told.feeds.find(f => f.key === key)?.length ?? -1
    c.send(8, { full: true, ...told })
    await until(() => here.history.summary(x.id)?.size === 1 && here.history.summary(y.id)?.size === 1, 'the liar\'s conversations here')
    await until(() => c.session.remoteFeeds.size === 2, 'the liar\'s list here')
    const xFeed = l.h.feeds(x.id)[0]?.key as string
    const yFeed = l.h.feeds(y.id)[0]?.key as string
    const cores = (here.history as unknown as { cores: Map<string, unknown> }).cores
    expect(cores.has(xFeed)).toBe(true)
    // this device keeps x's feed open (as while it reads, writes or serves it); y's closes as idle
    const pinWhile = (here.history as unknown as { pinWhile: (key: string, fn: () => Promise<void>) => Promise<void> }).pinWhile.bind(here.history)
    await pinWhile(xFeed, async () => {
      await c.link.cut()
      await until(() => !cores.has(yFeed), 'y\'s feed to close as idle here')
      expect(cores.has(xFeed)).toBe(true)
      // both feeds grow while apart
      const [ex] = await l.h.append(x.id, [note('grown on x', x.id)]) as unknown as [{ id: string }]
      ey = (await l.h.append(y.id, [note('grown on y', y.id)]))[0]
      c = await l.connect()
      c.send(8, { full: false, feeds: [], digest: told.digest, count: told.count }) // "nothing changed"
      // the lie is taken as the liar's word: this device believes the old lengths
      await until(() => c.session.remoteFeeds.size === 2, 'the liar\'s list here again')
      expect(c.session.remoteFeeds.get(xFeed)?.length).toBe(lengthOf(xFeed))
      // x's feed is open here: Hypercore's replication brings its new length and blocks regardless
      await until(async () => (await here.history.open(x.id)).has(ex.id), 'the entry of the open feed, through replication')
    })
    // y's feed was closed: nothing here asks for blocks of which it was not told
    await new Promise(resolve => setTimeout(resolve, 500))
    const eyId = (ey as { id: string }).id
    expect((await here.history.open(y.id)).has(eyId)).toBe(false)
    expect(here.history.availableLength(yFeed)).toBe(lengthOf(yFeed))
    // until the liar (or any device holding it) tells: then it comes, checked as ever
    c.send(1, { full: false, feeds: [{ conversation: y.id, key: yFeed, length: l.h.availableLength(yFeed) }] })
    await until(async () => (await here.history.open(y.id)).has(eyId), 'y\'s entry once told')
  })

  it('a digest its own changes do not reach gets it asked for its whole list, once; this device believes nothing of it meanwhile', async () => {
    const here = await start()
    const l = await liar(here)
    await l.h.createConversation({ title: 'x' })
    const c = await l.connect()
    const { feeds } = listOf(l.h)
    c.send(8, { full: true, feeds, digest: '0'.repeat(64), count: feeds.length })
    await until(() => l.heard.some(([t]) => t === 7), 'a WantFeeds to the liar')
    await new Promise(resolve => setTimeout(resolve, 300))
    expect(l.heard.filter(([t]) => t === 7)).toHaveLength(1)
    expect(c.session.remoteFeeds.size).toBe(0)
    expect(c.session.opened).toBe(true)
    // its whole list, when it sends it, is what this device then knows of it
    c.send(1, { full: true, feeds })
    await until(() => c.session.remoteFeeds.size === feeds.length, 'the liar\'s whole list')
  })
})

describe('a change while a reconnect is opening', () => {
  it('a feed that grows after this device sent what changed, before the peer\'s hello arrived, still reaches the peer on that connection', async () => {
    const { a, b, ids } = await synced()
    const id = ids[0] as string
    const tip = (await a.history.open(id)).branch().at(-1)?.id as string
    // The peer's hello reaches A 100 ms late (a slow link); A's feed grows just after A sent
    // its FeedsSince, so its announcement falls between the two.
    const proto = SyncSession.prototype as unknown as Record<string, (this: SyncSession, m?: unknown) => void>
    const onHello = proto.onHello as (this: SyncSession, m?: unknown) => void
    vi.spyOn(proto, 'onHello').mockImplementation(function (this: SyncSession, m?: unknown) {
      if (on(this) === a.history.device) setTimeout(() => onHello.call(this, m), 100)
      else onHello.call(this, m)
    })
    const onOpen = proto.onOpen as (this: SyncSession, m?: unknown) => void
    let grew: Promise<unknown> | undefined
    vi.spyOn(proto, 'onOpen').mockImplementation(function (this: SyncSession, m?: unknown) {
      onOpen.call(this, m)
      if (on(this) === a.history.device && grew === undefined) grew = a.history.append(id, [note('while opening', tip)])
    })
    const link = new MemoryLink(a.history.keyPair, b.history.keyPair)
    defer(() => link.cut())
    expect(await link.opened()).toBe(true)
    a.node.attach(link.a)
    b.node.attach(link.b)
    await until(() => grew !== undefined, 'A to open its side')
    await grew
    await until(() => b.history.summary(id)?.size === 3, 'the peer to hold the entry written while the connection opened', 5_000)
  }, 30_000)
})
