// Attack (issue 23): a compromised paired device's deeply nested entry must not keep the
// victim's node from starting. Two real `arbor serve` nodes on a HyperDHT testnet on loopback;
// Mallory's own feed of a shared conversation gets, by hand, a note nesting 100,000 arrays
// (its true id) and ordinary entries after it. The victim reads them, is SIGKILLed, and starts
// again offline: with the index the kill left (a reconcile reads the feeds past their
// watermarks), and with no index at all (a rebuild reads every feed again). Each time it must
// start, hold every ordinary entry of Mallory's, and say which block it skipped and why.
import fs from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { HistoryStore } from '../../../src/main/history/history-store'
import { memoryLogger } from '../../../src/shared/logger'
import type { Entry } from '../../../src/shared/entry/entry'
import { processCluster } from '../../helpers/arbor-processes'
import { appendRawBlocks, deepNoteBlock, ordinaryBlock } from '../../helpers/raw-blocks'
import { until } from '../../helpers/temp-dir'

const cluster = processCluster()

const ids = async (name: string, conv: string): Promise<Set<string>> => new Set((await cluster.entries(name, conv)).map(e => e.id))

describe('attack: a peer\'s deeply nested entry and a restart', () => {
  it('the victim, SIGKILLed after reading it, starts again (index as left, then rebuilt) and holds every later entry', async () => {
    await cluster.startPaired(['victim', 'mallory'], 60_000)
    const conv = (await cluster.ok('victim', 'new', '--title', 'shared')).trim()
    await until(async () => (await cluster.entries('mallory', conv)).length === 1, 'mallory to hold the conversation', 30_000, 100)
    await cluster.ok('mallory', 'post', conv, 'hello from mallory')
    const first = (await cluster.entries('mallory', conv)).find(e => e.kind === 'user') as Entry
    await until(async () => (await ids('victim', conv)).has(first.id), 'the victim to hold mallory\'s message', 30_000, 100)

    // Mallory's node, stopped, gets the blocks by hand on its own feed, then serves them again
    await cluster.kill('mallory', 'SIGTERM')
    const mallory = cluster.devices.get('mallory')?.dir as string
    const store = new HistoryStore({ dir: mallory, log: memoryLogger(), watchPeers: false })
    await store.ready()
    const deep = deepNoteBlock({ device: store.device, conversation: conv, parent: first.id, depth: 100_000 })
    const after1 = ordinaryBlock(store.device, conv, { kind: 'note', body: { text: 'after the deep one' }, parents: [first.id] })
    const after2 = ordinaryBlock(store.device, conv, { kind: 'user', body: { text: 'and one more', reply: false }, parents: [after1.entry.id] })
    await appendRawBlocks(store, conv, [deep.block, after1.block, after2.block])
    await store.close()
    await cluster.serve('mallory')

    const victim = cluster.devices.get('victim')
    if (victim === undefined) throw new Error('no victim')
    // the victim has read Mallory's feed as far as it could (today, up to the deep note)
    const read = (): boolean => victim.log.includes('Maximum call stack') || victim.log.includes('skipped block')
    await until(async () => read() && (victim.log.includes('Maximum call stack') || (await ids('victim', conv)).has(after2.entry.id)), 'the victim to read mallory\'s feed', 60_000, 100)
    await cluster.kill('victim', 'SIGKILL')

    for (const how of ['the index the kill left', 'the index rebuilt from the feeds']) {
      if (how !== 'the index the kill left') {
        await cluster.kill('victim', 'SIGKILL')
        await fs.rm(path.join(victim.dir, 'index'), { recursive: true, force: true })
      }
      const mark = victim.log.length
      await cluster.serve('victim', ['--offline']).catch((err: Error) => { throw new Error(`with ${how}: ${err.message.slice(0, 2000)}`) })
      const held = await ids('victim', conv)
      expect.soft([held.has(first.id), held.has(after1.entry.id), held.has(after2.entry.id), held.has(deep.id)], `with ${how}`).toEqual([true, true, true, false])
      if (how === 'the index rebuilt from the feeds') {
        // the rebuild read the deep block again: skipped, with a line saying why
        expect(victim.log.slice(mark)).toMatch(/skipped block 2 of feed [0-9a-f]{12}: .*nests deeper than \d+ levels/)
      }
    }
  }, 240_000)
})
