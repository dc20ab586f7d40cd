// Devices on different versions keep working together (docs/ARCHITECTURE.md, "Evolving
// safely"): entries a newer version wrote, and hellos of other versions, between real
// HistoryStores and SyncNodes on the in-process network.
import { describe, expect, it } from 'vitest'
import crypto from 'hypercore-crypto'
import { HistoryStore, type InvalidEvent } from '../../src/main/history/history-store'
import { entryId, makeEntry } from '../../src/main/history/entry-codec'
import { SyncNode } from '../../src/main/sync/sync-node'
import { conversationJson, transcriptMarkdown, transcriptText } from '../../src/shared/conversation-export'
import type { Entry, WrittenEntry } from '../../src/shared/entry'
import { memoryLogger } from '../../src/shared/logger'
import { planNext, toIrMessages } from '../../src/main/runtime/agent/step-planner'
import { openWork } from '../../src/main/runtime/placement/placement'
import { InProcessNetwork } from '../helpers/in-process-network'
import { TestCluster } from '../helpers/test-cluster'
import { perTest } from '../helpers/per-test'
import { until } from '../helpers/temp-dir'

const { dirs, defer } = perTest()

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
    const f1 = written(a.device, root.id, [u1.id], 'compaction', { summary: 'the story so far', upTo: u1.id })
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
    expect(dag.get(f1.id)).toMatchObject({ kind: 'unknown', body: { kind: 'compaction', body: f1.body } })
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
    expect(transcriptText(branch)).toContain('"compaction"')
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
