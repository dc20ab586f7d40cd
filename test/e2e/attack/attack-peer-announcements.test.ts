// A paired device turned malicious ("cloud") announces feeds nobody holds (issue 23): 20,000
// made-up feeds of 20,000 made-up conversations, random keys, lengths above 0. Every device is
// real: a HistoryStore on disk and a SyncNode; the attacker runs our code with its own key and
// sends its made-up list through its real session on the in-process network. The victim
// ("laptop") must record no more of them than the bound (feed records, what it keeps of the
// attacker's list, on disk), must keep syncing real feeds, and must never pass a made-up feed
// on to "phone", which never talked to the attacker.
import { describe, expect, it } from 'vitest'
import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import path from 'node:path'
import type Hypercore from 'hypercore'
import type { HistoryStore } from '../../../src/main/history/history-store'
import type { FeedAnnouncement } from '../../../src/main/sync/wire/arbor-messages'
import type { PeerFeeds } from '../../../src/main/sync/peers/peer-feeds'
import type { SyncNode } from '../../../src/main/sync/sync-node'
import type { SyncSession } from '../../../src/main/sync/wire/sync-session'
import { MemoryLink } from '../../helpers/in-process-network'
import { perTest } from '../../helpers/per-test'
import { syncDevices, type SyncDevice, type SyncDevicesOptions } from '../../helpers/sync-devices'
import { until } from '../../helpers/temp-dir'

const { dirs, defer } = perTest('arbor-announce-')

const MADE_UP = 20_000
/** what a peer may make this device record before any of it verifies (the fix's bound; today there is none) */
const bounds = await import('../../../src/main/sync/peers/feed-admission').catch(() => null)
const PER_PEER = bounds?.MAX_PENDING_PER_PEER ?? 4096

const hex32 = (): string => crypto.randomBytes(32).toString('hex')
const madeUp = (n: number): FeedAnnouncement[] => Array.from({ length: n }, () => ({ conversation: hex32(), key: hex32(), length: 1 + crypto.randomInt(1000) }))

/** What a node keeps of a peer's list (the node's own state, saved in sync-peers.bin). */
const heardOf = (node: SyncNode, device: string): number => (node as unknown as { peerFeeds: Map<string, PeerFeeds> }).peerFeeds.get(device)?.heard.size ?? 0
const heardKeys = (node: SyncNode, device: string): string[] => [...((node as unknown as { peerFeeds: Map<string, PeerFeeds> }).peerFeeds.get(device)?.heard.feeds.keys() ?? [])]

/** Bytes of every file under a directory. */
async function du (dir: string): Promise<number> {
  let n = 0
  for (const e of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += (await fs.stat(path.join(e.parentPath, e.name))).size
  }
  return n
}

/** Links two devices with a link of their own, returning each side's session (the attacker sends on its own). */
async function link (a: SyncDevice, b: SyncDevice, delayMs = 0): Promise<[SyncSession, SyncSession]> {
  const l = new MemoryLink(a.history.keyPair, b.history.keyPair, { delayMs })
  defer(() => l.cut())
  expect(await l.opened()).toBe(true)
  const sa = a.node.attach(l.a)
  const sb = b.node.attach(l.b)
  if (sa === null || sb === null) throw new Error('a node refused the link')
  await until(() => sa.opened && sb.opened, 'the arbor channel to open both ways')
  return [sa, sb]
}

const held = (h: HistoryStore, conversation: string): number => h.summary(conversation)?.size ?? 0

/** Ready devices in one cluster (closed after the test), not linked yet. */
async function devices (names: string[], o: SyncDevicesOptions = {}): Promise<SyncDevice[]> {
  return (await syncDevices({ dirs, defer }, names, o)).d
}

describe('a paired device announcing feeds nobody holds', () => {
  it('is recorded up to a bound, real feeds still sync, and nothing made up is passed on', async () => {
    const [laptop, cloud, phone] = await devices(['laptop', 'cloud', 'phone']) as [SyncDevice, SyncDevice, SyncDevice]
    // the laptop holds a conversation of the phone's before anything happens
    const before = await phone.history.createConversation({ title: 'before' })
    await link(laptop, phone)
    await until(() => held(laptop.history, before.id) === 1, 'the phone\'s first conversation on the laptop')
    const [attack] = await link(cloud, laptop)
    const diskBefore = await du(laptop.history.dir)

    // the flood: 20,000 made-up feeds in batches, as fast as the channel takes them
    const lies = madeUp(MADE_UP)
    const liedKeys = new Set(lies.map(f => f.key))
    for (let i = 0; i < lies.length; i += 2000) attack.sendFeeds(lies.slice(i, i + 2000))
    const cloudKey = cloud.history.device
    const recorded = (): number => laptop.history.feeds().filter(f => liedKeys.has(f.key)).length
    // until the laptop has taken in what it will of the flood
    await until(async () => {
      const n = recorded()
      await new Promise(resolve => setTimeout(resolve, 300))
      return n > 0 && n === recorded()
    }, 'the flood to settle', 30_000)

    // a real conversation written after the flood still arrives, whole
    const after = await phone.history.createConversation({ title: 'after' })
    await phone.history.append(after.id, [{ kind: 'user', body: { text: 'still here' }, parents: [after.id] }])
    await until(() => held(laptop.history, after.id) === 2, 'the phone\'s conversation written after the flood to reach the laptop', 30_000)

    // what the laptop keeps of the lies: feed records, its picture of the cloud's list, downloads waiting
    expect(recorded(), 'made-up feeds recorded as held').toBeLessThanOrEqual(PER_PEER)
    expect(heardOf(laptop.node, cloudKey), 'the cloud\'s list as the laptop keeps it').toBeLessThanOrEqual(PER_PEER + laptop.history.feeds().length)
    expect(laptop.history.peerFeedSlots.waiting, 'made-up feeds waiting to download').toBeLessThanOrEqual(PER_PEER)
    // said once for the peer, not once a feed
    expect(laptop.log.lines.filter(l => l.message.includes('left for now')).length).toBe(1)
    // and on disk, once every save is done: a record, a manifest line and an empty core for each
    // feed taken, none for a feed dropped
    await new Promise(resolve => setTimeout(resolve, 3000))
    const grew = await du(laptop.history.dir) - diskBefore
    expect(grew, `bytes the laptop's data directory grew by (${grew})`).toBeLessThan(PER_PEER * 640)

    // the phone never talked to the cloud: it holds, and was told of, no made-up feed
    expect(phone.history.feeds().filter(f => liedKeys.has(f.key))).toEqual([])
    expect(heardKeys(phone.node, laptop.history.device).filter(k => liedKeys.has(k))).toEqual([])

    // nothing of it is kept past a restart (nothing of those feeds arrived); the real conversation is
    await laptop.node.close()
    await laptop.history.close()
    const [again] = await devices(['laptop'], { at: { laptop: laptop.history.dir } }) as [SyncDevice]
    const restarted = again.history
    expect(restarted.feeds().filter(f => liedKeys.has(f.key))).toEqual([])
    expect(restarted.summary(after.id)?.size).toBe(2)
  }, 120_000)

  it('a device holding more feeds than the bound still gives a new device every one, asked for again as they arrive', async () => {
    const CONVERSATIONS = 300
    const bound = { perPeer: 40, total: 80 }
    const [holder, fresh] = await devices(['holder', 'fresh'], { pendingFeeds: bound }) as [SyncDevice, SyncDevice]
    for (let i = 0; i < CONVERSATIONS; i++) await holder.history.createConversation({ title: `c${i}` })
    // at every feed the fresh device records, what is pending there stays within the bound
    let most = 0
    fresh.history.on('feed', () => { most = Math.max(most, fresh.history.feeds().filter(f => !f.own && f.indexed === 0).length) })
    await link(holder, fresh)
    await until(() => fresh.history.list().length === CONVERSATIONS, 'the fresh device to hold every conversation', 60_000)
    expect(most).toBeLessThanOrEqual(bound.perPeer)
    // said once per round, not once per feed left for later
    const said = fresh.log.lines.filter(l => l.message.includes('left for now'))
    expect(said.length).toBeGreaterThan(0)
    expect(said.length).toBeLessThanOrEqual(Math.ceil((CONVERSATIONS - bound.perPeer) / (bound.perPeer / 2)) + 1)
  }, 120_000)

  it('two devices holding big histories both give a new device every feed at once, sharing the total', async () => {
    // a total below two peers' bounds: the second holder's feeds take their share from the first's
    const bound = { perPeer: 40, total: 60 }
    const [a, b, fresh] = await devices(['a', 'b', 'fresh'], { pendingFeeds: bound }) as [SyncDevice, SyncDevice, SyncDevice]
    // both hold 200 conversations, and each 50 the other does not
    for (let i = 0; i < 100; i++) await a.history.createConversation({ title: `a${i}` })
    for (let i = 0; i < 100; i++) await b.history.createConversation({ title: `b${i}` })
    const [ab] = await link(a, b)
    await until(() => a.history.list().length === 200 && b.history.list().length === 200, 'a and b to hold each other\'s conversations', 60_000)
    ab.close('a and b part')
    for (let i = 0; i < 50; i++) await a.history.createConversation({ title: `a-only${i}` })
    for (let i = 0; i < 50; i++) await b.history.createConversation({ title: `b-only${i}` })
    let most = 0
    fresh.history.on('feed', () => { most = Math.max(most, fresh.history.feeds().filter(f => !f.own && f.indexed === 0).length) })
    await Promise.all([link(a, fresh), link(b, fresh)])
    await until(() => fresh.history.list().length === 300, 'the fresh device to hold every conversation of both', 90_000)
    for (const c of [...a.history.list(), ...b.history.list()]) expect(fresh.history.summary(c.id)?.size, `conversation ${c.title}`).toBe(c.size)
    expect(most).toBeLessThanOrEqual(bound.total)
  }, 180_000)

  it('devices an attacker planted fill the total, and another device\'s new conversations still arrive', async () => {
    // small bounds: four planted devices at their bound fill the total
    const bound = { perPeer: 20, total: 80 }
    const [laptop, phone, ...clouds] = await devices(['laptop', 'phone', 'cloud1', 'cloud2', 'cloud3', 'cloud4'], { pendingFeeds: bound }) as [SyncDevice, SyncDevice, ...SyncDevice[]]
    const before = await phone.history.createConversation({ title: 'before' })
    await link(laptop, phone)
    await until(() => held(laptop.history, before.id) === 1, 'the phone\'s first conversation on the laptop')
    const attacks: SyncSession[] = []
    for (const c of clouds) attacks.push((await link(c, laptop))[0])

    // each planted device announces five times its bound of made-up feeds
    const lies = clouds.map(() => madeUp(5 * bound.perPeer))
    const liedKeys = new Set(lies.flat().map(f => f.key))
    const recorded = (): number => laptop.history.feeds().filter(f => liedKeys.has(f.key)).length
    let most = 0
    laptop.history.on('feed', () => { most = Math.max(most, recorded()) })
    attacks.forEach((a, i) => { a.sendFeeds(lies[i] as FeedAnnouncement[]) })
    await until(() => recorded() === bound.total, 'the planted devices\' made-up feeds to fill the total')

    // and keeps at it: every 100 ms each announces its list again, and new lies
    let attacking = true
    let rounds = 0
    const attack = (async () => {
      for (; rounds < 600 && attacking; rounds++) {
        attacks.forEach((a, i) => {
          const more = madeUp(5)
          for (const f of more) liedKeys.add(f.key)
          a.sendFeeds([...(lies[i] as FeedAnnouncement[]), ...more])
        })
        await new Promise(resolve => setTimeout(resolve, 100))
      }
    })()
    defer(async () => { attacking = false; await attack })

    // the phone writes conversations while the total is full: each arrives, whole
    for (let i = 0; i < 3; i++) {
      const after = await phone.history.createConversation({ title: `after ${i}` })
      await phone.history.append(after.id, [{ kind: 'user', body: { text: 'still here' }, parents: [after.id] }])
      await until(() => held(laptop.history, after.id) === 2, `the phone's conversation ${i}, written while the planted devices fill the total, to reach the laptop`, 15_000)
    }
    // what the lies announced again and again cost stays what one announcement cost: each
    // made-up feed still open is followed once (its listeners and download range)
    await until(() => rounds >= 30, 'the planted devices to announce their lists 30 times')
    const cores = (laptop.history as unknown as { cores: Map<string, Hypercore.Core & { activeRequests: unknown[] }> }).cores
    for (const [key, core] of cores) {
      if (!liedKeys.has(key)) continue
      expect(core.listenerCount('download'), `download listeners of made-up feed ${key.slice(0, 12)}`).toBeLessThanOrEqual(1)
      expect(core.activeRequests.length, `requests of made-up feed ${key.slice(0, 12)}`).toBeLessThanOrEqual(2)
    }
    attacking = false
    await attack
    // the total stayed a hard bound throughout
    expect(most, 'made-up feeds recorded at once').toBeLessThanOrEqual(bound.total)
    expect(recorded()).toBeLessThanOrEqual(bound.total)
  }, 120_000)

  it('a holder cut off while planted devices take its share gives every feed once it is back', async () => {
    const bound = { perPeer: 20, total: 60 }
    const [fresh, holder, ...clouds] = await devices(['fresh', 'holder', 'cloud1', 'cloud2', 'cloud3', 'cloud4'], { pendingFeeds: bound }) as [SyncDevice, SyncDevice, ...SyncDevice[]]
    for (let i = 0; i < 80; i++) await holder.history.createConversation({ title: `h${i}` })
    const attacks: SyncSession[] = []
    for (const c of clouds) attacks.push((await link(c, fresh))[0])
    const liedKeys = new Set<string>()
    const lie = (a: SyncSession, n: number): void => {
      const feeds = madeUp(n)
      for (const f of feeds) liedKeys.add(f.key)
      a.sendFeeds(feeds)
    }
    const waiting = (): number => fresh.history.feeds().filter(f => !f.own && f.indexed === 0 && !liedKeys.has(f.key)).length
    // three planted devices fill the total
    for (const a of attacks.slice(0, 3)) lie(a, 100)
    await until(() => fresh.history.feeds().filter(f => liedKeys.has(f.key)).length === bound.total, 'the planted devices to fill the total')

    // the holder's list takes its fair share (60 among four); a slow link keeps its blocks away meanwhile
    const [toFresh] = await link(holder, fresh, 300)
    await until(() => waiting() === 15, 'the holder\'s fair share of feeds to be taken')
    toFresh.close('the holder goes away before any of them arrives')
    // a fourth planted device comes while it is away: 60 among five, some of the holder's are forgotten
    lie(attacks[3] as SyncSession, 100)
    await until(() => waiting() === 12, 'the holder\'s share to shrink to 12')

    // back, the holder gives every conversation, the forgotten ones too
    await link(holder, fresh)
    await until(() => fresh.history.list().length === 80, 'every conversation of the holder on the fresh device', 60_000)
    expect(fresh.history.feeds().filter(f => liedKeys.has(f.key)).length).toBeLessThanOrEqual(bound.total)
  }, 120_000)

  it('a device learns a feed from another that holds it while its writer is away', async () => {
    const [a, b, c] = await devices(['a', 'b', 'c']) as [SyncDevice, SyncDevice, SyncDevice]
    const root = await b.history.createConversation({ title: 'b\'s' })
    const [sb] = await link(b, c)
    await until(() => held(c.history, root.id) === 1, 'c to hold b\'s conversation')
    sb.close('b goes away')
    await link(a, c)
    await until(() => held(a.history, root.id) === 1, 'a to hold b\'s conversation, from c')
  }, 60_000)
})
