// Devices on different versions keep working together (docs/ARCHITECTURE.md, "Evolving
// safely"): entries a newer version wrote, and hellos of other versions, between real
// HistoryStores and SyncNodes on the in-process network.
import { describe, expect, it } from 'vitest'
import crypto from 'hypercore-crypto'
import c from 'compact-encoding'
import Protomux from 'protomux'
import { HistoryStore, type InvalidEvent } from '../../../src/main/history/history-store'
import { entryId, makeEntry } from '../../../src/main/history/store/entry-codec'
import { SyncNode, type PeerEvent, type PeerState } from '../../../src/main/sync/sync-node'
import { conversationJson, transcriptMarkdown, transcriptText } from '../../../src/shared/conversation/conversation-export'
import { ENTRY_SCHEMA_VERSION, type Entry, type WrittenEntry } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { planNext, toIrMessages } from '../../../src/main/runtime/agent/step-planner'
import { openWork } from '../../../src/main/runtime/placement/placement'
import { InProcessNetwork, MemoryLink } from '../../helpers/in-process-network'
import { PeerNodes } from '../../helpers/peer-nodes'
import { runCli } from '../../../src/main/cli/run-cli'
import { ApiService } from '../../../src/main/api/api-service'
import { TestCluster } from '../../helpers/test-cluster'
import { perTest } from '../../helpers/per-test'
import { PROTOCOL } from '../../../src/shared/protocol-version'
import { until } from '../../helpers/temp-dir'
import { peerOf10 } from '../../helpers/old-peer'

const { dirs, defer } = perTest()
/** this version's protocol, as the Devices screen shows it */
const THIS = `${PROTOCOL.major}.${PROTOCOL.minor}`

async function store (): Promise<HistoryStore & { invalid: InvalidEvent[] }> {
  const h = Object.assign(new HistoryStore({ dir: await dirs.make(), log: memoryLogger() }), { invalid: [] as InvalidEvent[] })
  await h.ready()
  h.on('invalid', (ev: InvalidEvent) => h.invalid.push(ev))
  defer(() => h.close())
  return h
}

async function node (history: HistoryStore, cluster: TestCluster, opts: Partial<ConstructorParameters<typeof SyncNode>[0]> = {}): Promise<SyncNode> {
  const n = new SyncNode({ history, cluster, swarm: false, log: memoryLogger(), heartbeatMs: 100, suspectAfterMs: 600, ...opts })
  await n.ready()
  defer(() => n.close())
  return n
}

/** An entry as a newer Arbor would write it: any kind, any body, with its id made right. */
function written (device: string, conversation: string, parents: string[], kind: string, body: unknown, ts = 5000): WrittenEntry {
  const e = { v: 1 as const, conversation, parents, author: { device }, ts, kind, body }
  return { ...e, id: entryId(e) }
}

describe('entries from a newer version of Arbor', () => {
  it('are kept, replicated and indexed: their children join on this version, relayed through it, and nothing waits', async () => {
    const [a, b, c] = [await store(), await store(), await store()]
    const cluster = new TestCluster(crypto.randomBytes(32), [a.device, b.device, c.device])
    const net = new InProcessNetwork().add('a', await node(a, cluster)).add('b', await node(b, cluster)).add('c', await node(c, cluster))
    defer(() => net.close())

    // a is the newer Arbor: its feed holds a kind this one does not know, a known kind with a
    // field this one does not know, and a known kind with a value this one does not know.
    const root = await a.createConversation({ title: 'across versions' })
    const [u1] = await a.append(root.id, [{ kind: 'user', body: { text: 'summarise and go on' }, parents: [root.id] }]) as [Entry]
    const f1 = written(a.device, root.id, [u1.id], 'checkpoint', { summary: 'the story so far', upTo: u1.id })
    const f2 = makeEntry({ kind: 'user', body: { text: 'and this picture?', attachments: [{ name: 'p.png' }] } as { text: string }, parents: [f1.id] }, { conversation: root.id, device: a.device, ts: 5001 })
    const f3 = written(a.device, root.id, [f2.id], 'agent.stopped', { epoch: 1, reason: 'compacted' }, 5002)
    const f4 = makeEntry({ kind: 'assistant', body: { text: 'a cat' }, parents: [f3.id] }, { conversation: root.id, device: a.device, ts: 5003 })
    const feed = a.corestore.get({ name: 'arbor/conversation/' + root.id })
    await feed.ready()
    await feed.append([f1, f2, f3, f4].map(e => Buffer.from(JSON.stringify(e))))
    // an append through a's store announces the feed's new length (what a newer a would do)
    await a.append(root.id, [{ kind: 'note', body: { text: 'a later note' }, parents: [root.id] }])

    await net.connect('a', 'b')
    await until(() => b.summary(root.id)?.size === 7, 'b to index all 7 entries of a\'s feed')
    const dag = await b.open(root.id)
    expect(b.invalid).toEqual([])
    expect(dag.waiting()).toEqual([])
    expect(dag.missing()).toEqual([])
    expect(b.summary(root.id)?.waiting).toBe(0)
    for (const e of [f1, f2, f3, f4]) expect(dag.isJoined(e.id), e.kind).toBe(true)
    expect(dag.get(f1.id)).toMatchObject({ kind: 'unknown', body: { kind: 'checkpoint', body: f1.body } })
    expect(dag.get(f3.id)).toMatchObject({ kind: 'unknown', body: { kind: 'agent.stopped', problem: expect.stringMatching(/reason/) as unknown } })
    // a known kind keeps the fields this version does not know
    expect(dag.get(f2.id)).toEqual(f2)
    expect(dag.heads().map(e => e.id).sort()).toEqual([f4.id, (dag.children(root.id).find(e => e.kind === 'note') as Entry).id].sort())

    // export gives them back as written; the transcript says what they are
    const json = conversationJson(dag)
    expect(json.entries.find(e => e.id === f1.id)).toEqual(f1)
    expect(json.entries.find(e => e.id === f3.id)).toEqual(f3)
    const branch = dag.branch(f4.id)
    expect(branch.map(e => e.id)).toEqual([root.id, u1.id, f1.id, f2.id, f3.id, f4.id])
    expect(transcriptText(branch).match(/An entry from a newer version of Arbor/g)).toHaveLength(2)
    expect(transcriptText(branch)).toContain('"checkpoint"')
    expect(transcriptMarkdown(dag, branch)).toContain('## From a newer version')

    // the model sees the turn without them, well-formed; the planner and placement look past them
    const ir = toIrMessages(branch, 'system')
    expect(ir.map(m => m.role)).toEqual(['system', 'user', 'user', 'assistant'])
    expect(JSON.stringify(ir)).not.toMatch(/compaction|compacted|story so far/)
    expect(planNext(branch, () => 'read', { device: b.device, agent: 'x' })).toEqual({ kind: 'done' })
    expect(openWork(dag)).toEqual([])

    // c gets them through b alone (a is away): b keeps and serves what it does not understand
    net.isolate('a')
    await net.connect('b', 'c')
    await until(() => c.summary(root.id)?.size === 7, 'c to get a\'s entries through b')
    const onC = await c.open(root.id)
    expect(onC.snapshot()).toEqual(dag.snapshot())
    expect(onC.waiting()).toEqual([])
    expect(c.invalid).toEqual([])

    // after a restart, b reads them back from its own cache just the same
    net.isolate('b')
    const dir = b.dir
    await b.close()
    const b2 = new HistoryStore({ dir, log: memoryLogger() })
    defer(() => b2.close())
    await b2.ready()
    const again = await b2.open(root.id)
    expect(again.snapshot()).toEqual(dag.snapshot())
    expect(again.get(f1.id)).toEqual(dag.get(f1.id))
    expect(b2.summary(root.id)?.waiting).toBe(0)
  })
})

// ------------------------------------------------------------------ hellos of other versions

/** Waits until `n` has heard `device`'s hello, and returns how it shows that device. */
async function shown (n: SyncNode, device: string): Promise<PeerState> {
  await until(() => n.peers().find(p => p.device === device)?.version !== undefined, `${device.slice(0, 6)}'s hello`)
  return n.peers().find(p => p.device === device) as PeerState
}

const note = (text: string, parent: string) => ({ kind: 'note' as const, body: { text }, parents: [parent] })

describe('devices whose hellos carry other versions', () => {
  it('a newer compatible version syncs both ways, and each device says which one to update', async () => {
    const [h, hx] = [await store(), await store()]
    const cluster = new TestCluster(crypto.randomBytes(32), [h.device, hx.device])
    const here = await node(h, cluster)
    const newer = await node(hx, cluster, { versions: { major: 1, minor: PROTOCOL.minor + 1, oldest: 1, schema: 3, app: '0.9.0' } })
    const net = new InProcessNetwork().add('here', here).add('newer', newer)
    defer(() => net.close())
    await net.connect('here', 'newer')
    const [mine, theirs] = [await h.createConversation({ title: 'mine' }), await hx.createConversation({ title: 'theirs' })]
    await until(() => hx.summary(mine.id) !== undefined && h.summary(theirs.id) !== undefined, 'both conversations on both devices')

    const x = await shown(here, hx.device)
    expect(x).toMatchObject({ connected: true, version: { compat: 'newer', protocol: `1.${PROTOCOL.minor + 1}`, schema: 3, app: '0.9.0' } })
    expect(x.version?.advice).toMatch(new RegExp(`runs Arbor 0\\.9\\.0 \\(protocol 1\\.${PROTOCOL.minor + 1}\\), newer than this one; .*update Arbor on this device`))
    const y = await shown(newer, h.device)
    expect(y).toMatchObject({ connected: true, version: { compat: 'older', protocol: THIS } })
    expect(y.version?.advice).toMatch(new RegExp(`update Arbor on ${h.device.slice(0, 6)}$`))
  })

  it('a version whose protocol does not overlap this one is shown with what to do, never synced with, the connection kept', async () => {
    const [h, hy] = [await store(), await store()]
    const cluster = new TestCluster(crypto.randomBytes(32), [h.device, hy.device])
    const here = await node(h, cluster, { openTimeoutMs: 300 })
    const tooNew = await node(hy, cluster, { openTimeoutMs: 300, versions: { major: 3, minor: 0, oldest: 2, schema: 9, app: '3.0.0' } })
    const events: PeerEvent[] = []
    here.on('peer', (ev: PeerEvent) => events.push(ev))
    const [mine, theirs] = [await h.createConversation({ title: 'mine' }), await hy.createConversation({ title: 'theirs' })]
    await h.append(mine.id, [note('more', mine.id)])
    const net = new InProcessNetwork().add('here', here).add('tooNew', tooNew)
    defer(() => net.close())
    await net.connect('here', 'tooNew')

    const y = await shown(here, hy.device)
    expect(y).toMatchObject({ connected: false, version: { compat: 'too-new', protocol: '3.0' } })
    expect(y.version?.advice).toMatch(/^not syncing: .* runs Arbor 3\.0\.0 \(protocol 3\.0\), too new for this one; update Arbor on this device$/)
    const x = await shown(tooNew, h.device)
    expect(x).toMatchObject({ connected: false, version: { compat: 'too-old', protocol: THIS } })
    expect(x.version?.advice).toMatch(new RegExp(`^not syncing: .*too old for this one; update Arbor on ${h.device.slice(0, 6)}$`))
    expect(events).toContainEqual({ device: hy.device, state: 'incompatible' })
    expect(events.filter(e => e.state === 'connected')).toEqual([])

    // well past the open timeout: still linked, and nothing went either way
    await new Promise(resolve => setTimeout(resolve, 900))
    expect(net.isConnected('here', 'tooNew')).toBe(true)
    expect(h.summary(theirs.id)).toBeUndefined()
    expect(hy.summary(mine.id)).toBeUndefined()
    expect(h.feeds().filter(f => !f.own)).toEqual([])
    expect(hy.feeds().filter(f => !f.own)).toEqual([])
    // nor does it raise an alarm: never suspected, never disconnected (it never was connected)
    expect(here.peers().find(p => p.device === hy.device)?.suspected).toBe(false)
    expect(events.filter(e => e.state === 'suspected' || e.state === 'disconnected')).toEqual([])
  })
})

describe('a device of protocol 1.0 (before hellos carried versions)', () => {
  it('syncs with this one both ways; this one shows it as older, with what to do', async () => {
    const [h, ho] = [await store(), await store()]
    const cluster = new TestCluster(crypto.randomBytes(32), [h.device, ho.device])
    const here = await node(h, cluster)
    const [mine, theirs] = [await h.createConversation({ title: 'mine' }), await ho.createConversation({ title: 'theirs' })]
    const link = new MemoryLink(h.keyPair, ho.keyPair)
    defer(() => link.cut())
    expect(await link.opened()).toBe(true)
    here.attach(link.a)
    const old = peerOf10({ history: ho, cluster, stream: link.b, defer })

    await until(() => ho.summary(mine.id) !== undefined && h.summary(theirs.id) !== undefined, 'both conversations on both devices')
    // live, both ways
    const [m1] = await h.append(mine.id, [note('from this one', mine.id)]) as [Entry]
    const [t1] = await ho.append(theirs.id, [note('from the old one', theirs.id)]) as [Entry]
    await until(async () => (await ho.open(mine.id)).isJoined(m1.id) && (await h.open(theirs.id)).isJoined(t1.id), 'live entries both ways')

    expect(old.session.hello).toMatchObject({ v: 1, device: h.device }) // 1.0 read this one's hello
    expect(old.warnings()).toEqual([]) // and every other message of it
    const o = await shown(here, ho.device)
    expect(o).toMatchObject({ connected: true, version: { compat: 'older', protocol: '1.0' } })
    expect(o.version?.advice).toMatch(new RegExp(`runs an Arbor of protocol 1\\.0, older than this one; it syncs, but update Arbor on ${ho.device.slice(0, 6)}$`))
  })
})

/** c.json for values; a Buffer is sent as it is (bytes no Arbor would write). */
const jsonOrBytes = {
  preencode: (state: c.State, m: unknown): void => { if (Buffer.isBuffer(m)) state.end += m.byteLength; else c.json.preencode(state, m) },
  encode: (state: c.State, m: unknown): void => {
    if (!Buffer.isBuffer(m)) { c.json.encode(state, m); return }
    (state.buffer as Buffer).set(m, state.start)
    state.start += m.byteLength
  },
  decode: (state: c.State): unknown => c.json.decode(state)
}

describe('what a newer version may send on arbor/1', () => {
  /** A bare `arbor/1` channel from a trusted device, with `types` message slots, as a newer version would open it. */
  async function newerPeer (types = 13): Promise<{ here: SyncNode; h: HistoryStore; device: string; link: MemoryLink; send: (type: number, m: unknown) => void; got: Array<[number, unknown]>; opened: Promise<void>; log: ReturnType<typeof memoryLogger> }> {
    const h = await store()
    const peer = crypto.keyPair()
    const device = peer.publicKey.toString('hex')
    const cluster = new TestCluster(crypto.randomBytes(32), [h.device, device])
    const log = memoryLogger()
    const here = await node(h, cluster, { openTimeoutMs: 300, log })
    const link = new MemoryLink(h.keyPair, peer)
    defer(() => link.cut())
    expect(await link.opened()).toBe(true)
    here.attach(link.a)
    const got: Array<[number, unknown]> = []
    let opened!: () => void
    const channel = Protomux.from(link.b).createChannel({
      protocol: 'arbor/1',
      handshake: c.fixed32,
      messages: Array.from({ length: types }, (_, i) => ({ encoding: jsonOrBytes, onmessage: (m: unknown) => { got.push([i, m]) } })),
      onopen: () => opened()
    }) as Protomux.Channel
    const wait = new Promise<void>(resolve => { opened = resolve })
    channel.open(cluster.proof(link.b.handshakeHash as Buffer, false))
    const msgs = (channel as unknown as { messages: Protomux.Message[] }).messages
    return { here, h, device, link, send: (type, m) => { msgs[type]?.send(m) }, got, opened: wait, log }
  }

  it('a frame that is not even JSON is reported and dropped: the connection stays up and the messages after it are read', async () => {
    const p = await newerPeer()
    await p.opened
    p.send(0, { v: 1, device: p.device, name: 'garbled', manifest: 'e'.repeat(64) })
    expect(await shown(p.here, p.device)).toMatchObject({ connected: true })
    // On every known type: text that is not JSON, a length past the frame's end, no bytes at all.
    for (let type = 1; type < 11; type++) {
      p.send(type, Buffer.from('\x05{"t":'))
      p.send(type, Buffer.from([0xfd, 0xff, 0xff, 0x7b]))
      p.send(type, Buffer.alloc(0))
    }
    // a well-formed message after them is still read (the peer's heartbeat says it hears this device)
    const heard = new Promise<unknown>(resolve => p.here.once('hears', resolve))
    p.send(4, { t: 1, hears: [p.h.device] })
    expect(await heard).toEqual({ device: p.device, hears: [p.h.device] })
    await until(() => p.log.lines.filter(l => l.message.startsWith('ignored a malformed')).length >= 20, 'the malformed frames reported')
    await new Promise(resolve => setTimeout(resolve, 600)) // past the open timeout and a heartbeat or more
    expect(p.link.down).toBe(false)
    expect(p.here.peers().find(q => q.device === p.device)?.connected).toBe(true)
    expect(p.got.filter(([t]) => t === 4).length).toBeGreaterThan(0) // this device's heartbeats still reach it
  })

  it('message types and fields this version does not know are ignored, not fatal', async () => {
    const p = await newerPeer()
    await p.opened
    const hello = { v: 1, device: p.device, name: 'newer', manifest: 'e'.repeat(64), protocol: { major: 1, minor: 7, oldest: 1, next: 2 }, schema: 4, app: '1.7.0', keys: { x: 1 } }
    p.send(0, hello)
    p.send(11, { approvals: ['what is this?'] }) // a message type this version does not know
    p.send(12, 'not even an object')
    p.send(4, { t: 1, hears: [], load: 0.5 }) // a heartbeat with a field this version does not know
    const shownAs = await shown(p.here, p.device)
    expect(shownAs).toMatchObject({ connected: true, version: { compat: 'newer', protocol: '1.7', schema: 4, app: '1.7.0' } })
    // this one's hello reached it, and its own messages went on
    await until(() => p.got.some(([t]) => t === 0), 'this device\'s hello')
    expect(p.got.find(([t]) => t === 0)?.[1]).toMatchObject({ v: 1, device: p.h.device, protocol: PROTOCOL, schema: ENTRY_SCHEMA_VERSION })
    await new Promise(resolve => setTimeout(resolve, 600)) // past the open timeout
    expect(p.link.down).toBe(false)
    expect(p.here.peers().find(q => q.device === p.device)?.connected).toBe(true)
  })

  it('a hello of another hello version, or with versions this one cannot read, is a device too new, not a malformed message', async () => {
    for (const hello of [
      { v: 2, device: '', name: 'v2', protocol: { major: 2, minor: 0, oldest: 2 }, schema: 9 },
      { v: 1, device: '', name: 'odd', protocol: 'two point oh', schema: 'lots' }
    ]) {
      const p = await newerPeer()
      await p.opened
      p.send(0, { ...hello, device: p.device })
      const shownAs = await shown(p.here, p.device)
      expect(shownAs.connected).toBe(false)
      expect(shownAs.version?.compat).toBe('too-new')
      expect(shownAs.version?.advice).toMatch(/^not syncing: .*update Arbor on this device$/)
      await new Promise(resolve => setTimeout(resolve, 600))
      expect(p.link.down).toBe(false)
    }
  })
})

describe('arbor devices, between real nodes of different versions', () => {
  it('says which device does not sync and what to do', async () => {
    const nodes = new PeerNodes()
    defer(() => nodes.close())
    const laptop = await nodes.add('laptop')
    const server = await nodes.add('server', { protocolVersions: { major: 2, minor: 0, oldest: 2, schema: 5, app: '2.0.0' } })
    await shown(laptop.node.sync, server.node.device)
    let out = ''
    const api = new ApiService(laptop.node)
    defer(() => api.close())
    const code = await runCli(['devices'], { out: t => { out += t }, err: () => {}, env: {}, cwd: laptop.dir }, { api })
    expect(code).toBe(0)
    expect(out).toMatch(/server\s+not syncing \(too new\)/)
    expect(out).toContain('not syncing: server runs Arbor 2.0.0 (protocol 2.0), too new for this one; update Arbor on this device\n')
    const rows = await server.node.devices()
    expect(rows.find(r => r.name === 'laptop')?.version?.advice).toMatch(/too old for this one; update Arbor on laptop$/)
  })
})
