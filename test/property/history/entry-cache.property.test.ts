// The entry cache reads a file a chunk at a time into buffers it reuses: whatever the chunk size
// and wherever lines fall against it (lines longer than a chunk, a torn last line, lines that do
// not parse), a read gives what the file holds line by line, and an append after a torn last
// line starts a line of its own.
import fs from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { EntryCache } from '../../../src/main/history/store/entry-cache'
import type { Entry } from '../../../src/shared/entry/entry'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import { perTest } from '../../helpers/per-test'

const CONV = 'c'.repeat(64)
const DEVICE = 'd'.repeat(64)

/** What a file's text holds, read whole: parsed lines, and the lines that do not parse. */
function reference (text: string): { values: unknown[]; torn: number } {
  const values: unknown[] = []
  let torn = 0
  for (const line of text.split('\n')) {
    if (line === '') continue
    try { values.push(JSON.parse(line)) } catch { torn++ }
  }
  return { values, torn }
}

const lineArb = fc.oneof(
  { weight: 6, arbitrary: fc.record({ text: fc.string({ unit: 'binary', maxLength: 300 }), n: fc.integer() }).map(v => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }).filter(s => !s.includes('\n')) }, // a line that may not parse
  { weight: 1, arbitrary: fc.constant('') }
)

describe('EntryCache.read', () => {
  const { dirs } = perTest('arbor-entry-cache-')
  const dir = (): Promise<string> => dirs.make()

  it('reads every line whatever the chunk size, reusing its buffers across reads', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.array(lineArb, { maxLength: 30 }), { minLength: 1, maxLength: 4 }),
      fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
      fc.integer({ min: 1, max: 200 }),
      async (files, endsInNewline, chunk) => {
        const d = await dir()
        const cache = new EntryCache(d, chunk)
        await cache.ready()
        const texts = files.map((lines, i) => lines.join('\n') + (endsInNewline[i] === true && lines.length > 0 ? '\n' : ''))
        const ids = texts.map((_, i) => String(i).padStart(64, '0'))
        await Promise.all(texts.map((t, i) => fs.writeFile(cache.file(ids[i] as string), t)))
        // twice, some at once: the buffers are shared between reads and kept between them
        for (let round = 0; round < 2; round++) {
          const got = await Promise.all(ids.map(id => cache.read(id)))
          for (const [i, g] of got.entries()) {
            const want = reference(texts[i] as string)
            expect(g.entries).toEqual(want.values)
            expect(g.torn).toBe(want.torn)
            expect(g.bytes).toBe(Buffer.byteLength(texts[i] as string))
          }
        }
        await cache.close()
      }), { numRuns: 200 })
  })

  it('an append after a torn last line starts a line of its own', async () => {
    const cache = new EntryCache(await dir(), 16)
    await cache.ready()
    const root = makeEntry({ kind: 'conversation', parents: [], body: { title: 't', nonce: 'n' } }, { conversation: null, device: DEVICE, ts: 1 })
    const user = makeEntry({ kind: 'user', parents: [root.id], body: { text: 'hi' } }, { conversation: root.id, device: DEVICE, ts: 2 })
    await fs.writeFile(cache.file(CONV), JSON.stringify(root) + '\n{"torn":')
    const first = await cache.read(CONV)
    expect(first.entries.map(e => e.id)).toEqual([root.id])
    expect(first.torn).toBe(1)
    await cache.append(CONV, [user as Entry])
    const second = await cache.read(CONV)
    expect(second.entries.map(e => e.id)).toEqual([root.id, user.id])
    expect(second.torn).toBe(1)
    expect(await cache.read('e'.repeat(64))).toEqual({ entries: [], torn: 0, bytes: 0 })
    await cache.close()
  })
})
