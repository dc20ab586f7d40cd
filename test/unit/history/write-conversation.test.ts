// HistoryStore.writeConversation (an import): the root and every entry below it in one batch of
// its feed, or nothing at all when one draft is bad; reopened from disk, the tree is there.
import { afterEach, describe, expect, it } from 'vitest'
import { HistoryStore } from '../../../src/main/history/history-store'
import { InvalidEntryError, type Entry } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs()
const open: HistoryStore[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map(s => s.close()))
  await dirs.cleanup()
})

async function store (dir: string): Promise<HistoryStore> {
  const s = new HistoryStore({ dir, log: memoryLogger() })
  open.push(s)
  await s.ready()
  return s
}

describe('HistoryStore.writeConversation', () => {
  it('writes a root and a tree below it in one batch, read back after a reopen', async () => {
    const dir = await dirs.make()
    const a = await store(dir)
    const written = await a.writeConversation({ title: 'imported' }, root => [
      { kind: 'user', body: { text: 'one', reply: false }, parents: [root] },
      { kind: 'assistant', body: { text: 'two' }, parents: ['$0'] },
      { kind: 'user', body: { text: 'other branch', reply: false }, parents: ['$0'] }
    ])
    expect(written.map(e => e.kind)).toEqual(['conversation', 'user', 'assistant', 'user'])
    const id = (written[0] as Entry).id
    expect(a.feeds(id).length).toBe(1)
    await a.close()
    open.splice(0)
    const b = await store(dir)
    const dag = await b.open(id)
    expect(dag.headIds().sort()).toEqual([written[2]?.id, written[3]?.id].sort())
    expect(dag.title()).toBe('imported')
  })

  it('writes nothing when a draft is bad: no conversation, no feed', async () => {
    const a = await store(await dirs.make())
    await expect(a.writeConversation({ title: 'half' }, root => [
      { kind: 'user', body: { text: 'fine', reply: false }, parents: [root] },
      { kind: 'user', body: { text: 'names a later draft', reply: false }, parents: ['$5'] }
    ])).rejects.toThrow(InvalidEntryError)
    expect(a.list()).toEqual([])
    expect(a.feeds()).toEqual([])
  })
})
