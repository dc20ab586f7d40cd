// The full-text index on a disk that fills (a small tmpfs): while its writes fail, the records
// it holds in memory stay under their cap (the rest are given up, their conversations marked);
// once space is back it indexes those conversations again from their DAGs without a restart,
// and after a restart it answers what a scan of the entries answers.
import fsp from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import { SearchIndex } from '../../../src/main/search/search-index'
import type { Entry } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { DagHistory } from '../../helpers/dag-history'
import { smallDisk, smallDiskProblem, type SmallDisk } from '../../helpers/small-disk'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'

const { defer } = perTest()

const DEVICE = 'e'.repeat(64)
const CAP = 64 * 1024

/** A conversation of `n` entries, each with ~1 KB of text naming it and its number. */
function conversation (name: string, n: number): Entry[] {
  const root = makeEntry({ kind: 'conversation', parents: [], body: { title: `${name} chat`, nonce: name } }, { conversation: null, device: DEVICE, ts: 1 })
  const out = [root]
  for (let i = 0; i < n; i++) {
    const text = `${name} entry${i} ` + 'filler words of a long tool output '.repeat(30)
    out.push(makeEntry({ kind: 'user', body: { text }, parents: [(out[out.length - 1] as Entry).id] }, { conversation: root.id, device: DEVICE, ts: 2 + i }))
  }
  return out
}

async function hits (index: SearchIndex, q: string): Promise<string[]> {
  return (await index.query(q, { limit: 200 })).hits.map(h => h.entry).sort()
}

const skip = smallDiskProblem !== null
describe.skipIf(skip)(`search index on a full disk${skip ? ` (skipped: ${smallDiskProblem ?? ''})` : ''}`, () => {
  it('holds at most its cap of records while writes fail, then indexes the conversations given up again once space is back', async () => {
    const d: SmallDisk = smallDisk(8)
    defer(() => { d.unmount() })
    const history = new DagHistory()
    const logs = memoryLogger()
    const dir = path.join(d.dir, 'index')
    const index = new SearchIndex({ source: history, dir, log: logs, flushMs: 1, maxPendingBytes: CAP })
    defer(() => index.close().catch(() => undefined))
    await index.open()
    for (const e of conversation('early', 5)) history.deliver(e)
    await index.flush()
    expect(await hits(index, 'early')).toHaveLength(6)

    d.fill()
    // ~300 KB of records while nothing can be written: five times the cap
    const late = [...conversation('alpha', 150), ...conversation('beta', 150)]
    for (const [i, e] of late.entries()) {
      history.deliver(e)
      if (i % 20 === 0) await index.flush().catch(() => undefined)
    }
    await index.flush().catch(() => undefined)
    const onDisk = (await fsp.stat(index.file)).size
    // held in memory, not on disk: within the cap (and one record's frame)
    expect(index.size.fileBytes - onDisk).toBeLessThanOrEqual(CAP + 2048)
    expect(index.stats.givenUp).toBeGreaterThan(0)
    expect(logs.lines.some(l => l.message.includes('indexed again once it takes them'))).toBe(true)
    // reads go on: what was written is still found
    expect(await hits(index, 'early')).toHaveLength(6)

    d.free()
    history.deliver(makeEntry({ kind: 'user', body: { text: 'after the space came back' }, parents: [(late[late.length - 1] as Entry).id] }, { conversation: (late[151] as Entry).id, device: DEVICE, ts: 999 }))
    await until(async () => {
      await index.flush().catch(() => undefined)
      return (await hits(index, 'alpha')).length === 151 && (await hits(index, 'beta')).length === 151
    }, 'the conversations given up to be indexed again', 20_000, 50)
    for (const q of ['alpha', 'beta', 'early', 'entry14', 'came']) expect(await hits(index, q)).toEqual(history.scan(q).map(h => h.id).sort())
    await index.close()

    const again = new SearchIndex({ source: history, dir, log: logs })
    defer(() => again.close())
    await again.open()
    expect(again.stats.reindexed).toBe(0)
    for (const q of ['alpha', 'beta', 'early', 'entry14', 'came']) expect(await hits(again, q)).toEqual(history.scan(q).map(h => h.id).sort())
  }, 60_000)
})
