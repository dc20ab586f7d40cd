import { describe, expect, it } from 'vitest'
import fs from 'node:fs/promises'
import path from 'node:path'
import Corestore from 'corestore'
import crypto from 'hypercore-crypto'
import { HistoryStore, type InvalidEvent } from '../../../src/main/history/history-store'
import { makeFeedHeader, verifyFeedHeader } from '../../../src/main/history/store/feed-header'
import { canonicalJson } from '../../../src/shared/entry/canonical-json'
import { encodeEntry, type Entry } from '../../../src/shared/entry/entry'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import { memoryLogger } from '../../../src/shared/logger'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'

const { dirs, defer } = perTest()

async function store (): Promise<HistoryStore & { logs: ReturnType<typeof memoryLogger> }> {
  const logs = memoryLogger()
  const s = Object.assign(new HistoryStore({ dir: await dirs.make(), log: logs }), { logs })
  defer(() => s.close())
  await s.ready()
  return s
}

/** Replicates two Corestores over a direct in-memory stream, as sync will over a socket. */
function connect (a: { replicate: (i: boolean) => NodeJS.ReadWriteStream & { destroy: () => void } }, b: typeof a): () => void {
  const s1 = a.replicate(true)
  const s2 = b.replicate(false)
  s1.pipe(s2).pipe(s1)
  const swallow = (): void => {} // streams error with "destroyed" when we cut them on purpose
  ;(s1 as unknown as NodeJS.EventEmitter).on('error', swallow)
  ;(s2 as unknown as NodeJS.EventEmitter).on('error', swallow)
  const cut = (): void => { s1.destroy(); s2.destroy() }
  defer(async () => cut())
  return cut
}

const user = (text: string, parent: string) => ({ kind: 'user' as const, body: { text }, parents: [parent] })
const ownFeed = (s: HistoryStore, conversation: string): string => s.feeds(conversation).find(f => f.own)?.key as string

describe('replication between two stores', () => {
  it('converges to the same DAG, branches from both devices kept', async () => {
    const a = await store()
    const b = await store()
    const root = await a.createConversation({ title: 'shared' })
    let parent = root.id
    for (let i = 0; i < 30; i++) parent = ((await a.append(root.id, [user(`a${i}`, parent)]))[0] as Entry).id
    connect(a.corestore, b.corestore)
    await b.addFeed(root.id, ownFeed(a, root.id))
    await until(async () => b.summary(root.id)?.size === 31, 'b to receive a\'s 31 entries')

    // b continues from an old entry of a: a branch written by another device
    const dagB = await b.open(root.id)
    const mid = dagB.pathTo(parent)[10] as Entry
    for (let i = 0; i < 5; i++) await b.append(root.id, [user(`b${i}`, i === 0 ? mid.id : dagB.heads().find(h => h.author.device === b.device)?.id as string)])
    await a.addFeed(root.id, ownFeed(b, root.id))
    await until(async () => a.summary(root.id)?.size === 36, 'a to receive b\'s 5 entries')

    const [sa, sb] = [(await a.open(root.id)).snapshot(), (await b.open(root.id)).snapshot()]
    expect(sa).toEqual(sb)
    expect(sa.heads).toHaveLength(2)
    expect(a.list()[0]?.heads.sort()).toEqual(sb.heads)
  })

  it('keeps entries whose parents have not arrived as waiting, and joins them later', async () => {
    const a = await store()
    const b = await store()
    const c = await store()
    const root = await a.createConversation({ title: 'relay' })
    const [a1] = await a.append(root.id, [user('from a', root.id)])
    connect(a.corestore, b.corestore)
    await b.addFeed(root.id, ownFeed(a, root.id))
    await until(async () => b.summary(root.id)?.size === 2, 'b to hold a\'s entries')
    const [b1] = await b.append(root.id, [user('from b', (a1 as Entry).id)])

    // c hears from b first: b's entry names a parent c has not got yet.
    connect(b.corestore, c.corestore)
    await c.addFeed(root.id, ownFeed(b, root.id))
    await until(async () => (await c.open(root.id)).size === 1, 'c to hold b\'s entry')
    const early = await c.open(root.id)
    expect(early.waiting().map(e => e.id)).toEqual([(b1 as Entry).id])
    expect(early.isJoined((b1 as Entry).id)).toBe(false)

    await c.addFeed(root.id, ownFeed(a, root.id)) // a's feed, served by b
    await until(async () => (await c.open(root.id)).joinedSize === 3, 'b\'s entry to join once a\'s arrive')
    expect((await c.open(root.id)).waiting()).toEqual([])
    expect(c.list()[0]).toMatchObject({ title: 'relay', size: 3, waiting: 0 })
  })

  it('forgets a peer\'s feed of which nothing verified while it runs, and follows it again when announced again', async () => {
    const a = await store()
    const b = await store()
    const root = await a.createConversation({ title: 'far' })
    const key = ownFeed(a, root.id)
    const mine = await b.createConversation({ title: 'own' })
    // announced while nobody can serve it: recorded, opened, nothing arrives
    await b.updateFeed(root.id, key, 1)
    const cores = (b as unknown as { cores: Map<string, unknown> }).cores
    await until(() => cores.has(key), 'the feed to be opened')
    expect(b.forgetUnverifiedFeed(ownFeed(b, mine.id)), 'an own feed').toBe(false)
    expect(b.forgetUnverifiedFeed(key)).toBe(true)
    expect(b.feeds().map(f => f.key)).not.toContain(key)
    expect(b.peerFeedSlots).toEqual({ active: 0, waiting: 0 })
    expect(cores.has(key), 'its core closed').toBe(false)
    // announced again, by a peer that holds it: followed and read as any feed
    connect(a.corestore, b.corestore)
    await b.updateFeed(root.id, key, 1)
    await until(() => b.summary(root.id)?.size === 1, 'the feed forgotten, then announced again, to arrive')
    expect(b.forgetUnverifiedFeed(key), 'a feed verified here').toBe(false)
    expect(b.feeds().map(f => f.key)).toContain(key)
  })

  it('skips invalid entries from a peer with a warning, and still reads the rest of that feed', async () => {
    const a = await store()
    const b = await store()
    const root = await a.createConversation({ title: 'target' })
    connect(a.corestore, b.corestore)
    await b.addFeed(root.id, ownFeed(a, root.id))
    await until(async () => b.summary(root.id)?.size === 1, 'b to hold the root')

    // A rogue device writes a feed by hand: a correct header, then junk and forgeries.
    const rogueDir = await dirs.make()
    const rogue = new Corestore(rogueDir)
    defer(() => rogue.close())
    const device = crypto.keyPair()
    const dev = device.publicKey.toString('hex')
    const core = rogue.get({ name: 'rogue' })
    await core.ready()
    const key = (core.key as Buffer).toString('hex')
    const good = (text: string, parent = root.id): Entry => makeEntry(user(text, parent), { conversation: root.id, device: dev, ts: 1 })
    const ok1 = good('fine')
    const tampered = { ...good('original'), body: { text: 'changed' } }
    const otherAuthor = makeEntry(user('not me', root.id), { conversation: root.id, device: 'c'.repeat(64), ts: 1 })
    const badSchema = { ...good('x'), kind: 'user', body: { txt: 'x' } }
    const ok2 = good('after the junk', ok1.id)
    await core.append([
      Buffer.from(JSON.stringify(makeFeedHeader({ type: 'arbor/conversation', feed: key, conversation: root.id }, device))),
      Buffer.from(encodeEntry(ok1)),
      Buffer.from('this is not json'),
      Buffer.from(JSON.stringify(tampered)),
      Buffer.from(encodeEntry(otherAuthor)),
      Buffer.from(JSON.stringify(badSchema)),
      Buffer.from(encodeEntry(ok2))
    ])
    connect(rogue, b.corestore)
    const invalid: InvalidEvent[] = []
    b.on('invalid', ev => invalid.push(ev))
    await b.addFeed(root.id, key)
    await until(async () => (await b.open(root.id)).size === 3 && invalid.length === 4, 'the valid entries and 4 refusals')
    expect(invalid.map(i => i.seq)).toEqual([2, 3, 4, 5])
    expect(invalid[0]?.error).toMatch(/not JSON/)
    expect(invalid[1]?.error).toMatch(/not the hash/)
    expect(invalid[2]?.error).toMatch(/is not the device/)
    expect(invalid[3]?.error).toMatch(/not the hash/) // the envelope is checked before the body
    expect(b.logs.lines.filter(l => l.level === 'warn')).toHaveLength(4)
    const dag = await b.open(root.id)
    expect(dag.has(ok1.id) && dag.has(ok2.id)).toBe(true)
    expect(dag.waiting()).toEqual([])
    // the node keeps working
    await b.append(root.id, [user('still here', ok2.id)])
    expect((await b.open(root.id)).size).toBe(4)

    // and rebuilding the conversation from the feeds (entry cache lost) skips the same junk
    await b.close()
    await fs.rm(path.join(b.dir, 'index', 'entries', root.id + '.jsonl'))
    const b2 = new HistoryStore({ dir: b.dir, log: memoryLogger() })
    defer(() => b2.close())
    await b2.ready()
    const healed = await b2.open(root.id)
    expect(healed.size).toBe(4)
    expect(healed.has(ok1.id) && healed.has(ok2.id)).toBe(true)
  })

  it('refuses a whole feed whose header is forged', async () => {
    const a = await store()
    const b = await store()
    const root = await a.createConversation({ title: 'target' })
    const rogue = new Corestore(await dirs.make())
    defer(() => rogue.close())
    const core = rogue.get({ name: 'forged' })
    await core.ready()
    const key = (core.key as Buffer).toString('hex')
    const real = crypto.keyPair()
    const header = makeFeedHeader({ type: 'arbor/conversation', feed: key, conversation: root.id }, real)
    // claims to be a's device, signed with another key
    const forged = { ...header, device: a.device }
    await core.append([Buffer.from(JSON.stringify(forged)), Buffer.from(encodeEntry(makeEntry(user('x', root.id), { conversation: root.id, device: a.device, ts: 1 })))])
    connect(a.corestore, b.corestore)
    connect(rogue, b.corestore)
    await b.addFeed(root.id, ownFeed(a, root.id))
    const invalid: InvalidEvent[] = []
    b.on('invalid', ev => invalid.push(ev))
    await b.addFeed(root.id, key)
    await until(() => invalid.length === 1, 'the forged header to be refused')
    expect(invalid[0]?.error).toMatch(/signature does not verify/)
    await until(async () => b.summary(root.id)?.size === 1, 'a\'s root')
    expect((await b.open(root.id)).size).toBe(1)
  })

  it('reads a feed whose header has fields a newer version added, and refuses a header of another version, saying to update', async () => {
    const device = crypto.keyPair()
    const feed = crypto.randomBytes(32)
    const conversation = 'c'.repeat(64)
    const signed = (h: Record<string, unknown>): Buffer => {
      const sig = crypto.sign(Buffer.from(canonicalJson(h)), device.secretKey).toString('hex')
      return Buffer.from(JSON.stringify({ ...h, sig }))
    }
    const base = { type: 'arbor/conversation', v: 1, feed: feed.toString('hex'), device: device.publicKey.toString('hex'), conversation }
    // today's header verifies as before; one with fields a newer version added, signed over them, too
    expect(verifyFeedHeader(Buffer.from(JSON.stringify(makeFeedHeader({ type: 'arbor/conversation', feed: feed.toString('hex'), conversation }, device))), feed, { type: 'arbor/conversation', conversation }).device).toBe(base.device)
    const newer = verifyFeedHeader(signed({ ...base, encryption: { scheme: 'x' }, purpose: 'chat' }), feed, { type: 'arbor/conversation', conversation }) as unknown as Record<string, unknown>
    expect(newer.purpose).toBe('chat')
    // the signature covers the new fields: changing one is caught
    const forged = { ...(JSON.parse(signed({ ...base, purpose: 'chat' }).toString()) as Record<string, unknown>), purpose: 'spy' }
    expect(() => verifyFeedHeader(Buffer.from(JSON.stringify(forged)), feed, { type: 'arbor/conversation', conversation })).toThrow(/signature does not verify/)
    expect(() => verifyFeedHeader(signed({ ...base, v: 2 }), feed, { type: 'arbor/conversation', conversation })).toThrow(/header version 2, which this Arbor does not read .*update Arbor on this device/)
  })
})
