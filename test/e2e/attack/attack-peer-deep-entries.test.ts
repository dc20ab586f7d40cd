// Attack: a paired but compromised device writes, into a shared conversation, entries meant to
// take the other devices' nodes down (issue 23): a note whose body nests 100,000 arrays (or
// objects), with its true id, and a block far larger than any entry; then ordinary entries.
// Every recursive walk (the canonical encoder that checks the id, zod, JSON.stringify) would
// overflow the stack on the deep one. The victim must refuse each bad block as an envelope
// failure, say why, and read every later entry of that feed; it keeps working. Real nodes on
// disk (ArborNode: history, sync, agents) on the in-process network; Mallory's blocks are
// appended to her own feed by hand (test/helpers/raw-blocks.ts), as a modified Arbor would.
import { afterEach, describe, expect, it } from 'vitest'
import type { InvalidEvent } from '../../../src/main/history/history-store'
import { verifyFeedHeader } from '../../../src/main/history/store/feed-header'
import type { Entry } from '../../../src/shared/entry/entry'
import { MAX_JSON_DEPTH } from '../../../src/shared/entry/json-depth'
import { PeerNodes } from '../../helpers/peer-nodes'
import { appendRawBlocks, deepHeaderBlock, deepNoteBlock, forgedBlock, ordinaryBlock } from '../../helpers/raw-blocks'
import { until } from '../../helpers/temp-dir'

let peers: PeerNodes | null = null
afterEach(async () => {
  await peers?.close()
  peers = null
})

const DEPTH = 100_000

describe('attack: a peer\'s deeply nested or oversized entries', () => {
  it('a note nesting 100,000 arrays or objects, and an oversized block, are refused and reported; every later entry of that feed is read', async () => {
    peers = new PeerNodes()
    const victim = await peers.add('victim')
    const mallory = await peers.add('mallory')
    const invalid: InvalidEvent[] = []
    victim.node.history.on('invalid', ev => invalid.push(ev))

    const root = await victim.node.history.createConversation({ title: 'shared' })
    await peers.everywhere(root.id, root)
    // Mallory's feed of the conversation starts as any device's does
    const [first] = await mallory.node.history.append(root.id, [{ kind: 'note', body: { text: 'hello from mallory' }, parents: [root.id] }])
    await peers.everywhere(root.id, first as Entry)

    const dev = mallory.node.device
    const arrays = deepNoteBlock({ device: dev, conversation: root.id, parent: (first as Entry).id, depth: DEPTH })
    const objects = deepNoteBlock({ device: dev, conversation: root.id, parent: (first as Entry).id, depth: DEPTH, object: true })
    // a valid id, 4 MiB of text: larger than any entry may be
    const huge = forgedBlock({ v: 1, conversation: root.id, parents: [(first as Entry).id], author: { device: dev }, ts: 1, kind: 'note', body: { text: 'x'.repeat(4 * 1024 * 1024) } })
    const after1 = ordinaryBlock(dev, root.id, { kind: 'note', body: { text: 'after the deep ones' }, parents: [(first as Entry).id] })
    const after2 = ordinaryBlock(dev, root.id, { kind: 'user', body: { text: 'and one more', reply: false }, parents: [after1.entry.id] })
    await appendRawBlocks(mallory.node.history, root.id, [arrays.block, objects.block, huge.block, after1.block, after2.block])

    // every later entry of Mallory's feed joins the victim's tree
    await until(async () => (await victim.node.history.open(root.id)).isJoined(after2.entry.id), 'the entries after the deep ones on the victim', 20_000).catch((err: Error) => {
      throw new Error(`${err.message}; the victim warned: ${victim.log.lines.filter(l => l.level !== 'info').map(l => l.message).join(' | ')}`)
    })
    const dag = await victim.node.history.open(root.id)
    expect(dag.has(arrays.id) || dag.has(objects.id) || dag.has(huge.id)).toBe(false)
    // each bad block reported once, by its place in the feed, saying why
    await until(() => invalid.length >= 3, 'three refusals')
    const feed = mallory.node.history.feeds(root.id).find(f => f.own)?.key
    expect(invalid.map(i => [i.feed, i.seq])).toEqual([[feed, 2], [feed, 3], [feed, 4]])
    expect(invalid[0]?.error).toContain(`nests deeper than ${MAX_JSON_DEPTH} levels`)
    expect(invalid[1]?.error).toContain(`nests deeper than ${MAX_JSON_DEPTH} levels`)
    expect(invalid[2]?.error).toMatch(/larger than/)
    const warned = victim.log.lines.filter(l => l.level === 'warn' && l.message.includes('skipped block'))
    expect(warned.map(l => l.message)).toEqual([
      expect.stringContaining('skipped block 2 of feed'),
      expect.stringContaining('skipped block 3 of feed'),
      expect.stringContaining('skipped block 4 of feed')
    ])
    expect(victim.log.lines.filter(l => l.message.includes('Maximum call stack'))).toEqual([])

    // the victim's node keeps working in that conversation, and Mallory's later writes still arrive
    const [mine] = await victim.node.history.append(root.id, [{ kind: 'note', body: { text: 'still here' }, parents: [(first as Entry).id] }])
    await peers.everywhere(root.id, mine as Entry)
    const [later] = await mallory.node.history.append(root.id, [{ kind: 'note', body: { text: 'later' }, parents: [(mine as Entry).id] }])
    await peers.everywhere(root.id, later as Entry)
  }, 60_000)

  it('a feed whose signed header nests 100,000 arrays is refused whole, saying why; the rest of the conversation is read', async () => {
    peers = new PeerNodes()
    const victim = await peers.add('victim')
    const mallory = await peers.add('mallory')
    const invalid: InvalidEvent[] = []
    victim.node.history.on('invalid', ev => invalid.push(ev))
    const root = await victim.node.history.createConversation({ title: 'shared' })
    await peers.everywhere(root.id, root)

    const note = ordinaryBlock(mallory.node.device, root.id, { kind: 'note', body: { text: 'under a deep header' }, parents: [root.id] })
    await appendRawBlocks(mallory.node.history, root.id, [note.block], feed => deepHeaderBlock({ feed, conversation: root.id, device: mallory.node.history.keyPair, depth: DEPTH }))
    const feed = mallory.node.history.feeds(root.id).find(f => f.own)?.key as string
    // signed as any header: only its depth is wrong
    const shallow = deepHeaderBlock({ feed, conversation: root.id, device: mallory.node.history.keyPair, depth: 3 })
    expect(verifyFeedHeader(shallow, Buffer.from(feed, 'hex'), { type: 'arbor/conversation', conversation: root.id }).device).toBe(mallory.node.device)
    await until(() => invalid.length > 0, 'the deep header to be refused', 20_000)
    expect(invalid[0]).toMatchObject({ feed, seq: 0 })
    expect(invalid[0]?.error).toContain(`nests deeper than ${MAX_JSON_DEPTH} levels`)
    expect((await victim.node.history.open(root.id)).has(note.entry.id)).toBe(false)
    // the victim's node keeps working, and hears of the conversation from the others
    const [mine] = await victim.node.history.append(root.id, [{ kind: 'note', body: { text: 'still here' }, parents: [root.id] }])
    await peers.everywhere(root.id, mine as Entry)
    expect(invalid).toHaveLength(1)
  }, 60_000)
})
