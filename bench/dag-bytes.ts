// How well the DAG cache's size estimate (src/main/history/store/dag-cache.ts) bounds the heap the
// DAGs really take: conversations of realistic entries (test/fixtures/big-conversation.ts) are
// opened in a fresh store with a budget large enough to keep them all, and the live heap they
// add (heapUsed after a full collection) is set against the estimate the cache counts
// (dagCacheStats().bytes). Then every entry's encoding is remembered, as it is for entries
// written or received in this session, and the same again. Target: measured ≤ estimate.
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import v8 from 'node:v8'
import vm from 'node:vm'
import { HistoryStore } from '../src/main/history/history-store'
import type { ConversationDag } from '../src/shared/conversation/conversation-dag'
import { encodeEntry } from '../src/shared/entry/entry'
import { buildBigConversation } from '../test/fixtures/big-conversation'
import { benchLog, emit, round } from './lib/util'

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc') as () => void
const heapUsed = (): number => { gc(); gc(); return process.memoryUsage().heapUsed }

const CONVERSATIONS = 12
const ENTRIES = 1500
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'arbor-bench-dag-'))
try {
  // conversations of 1,500 entries (turns with Markdown, code, tool calls, branches) and of 12
  for (let i = 0; i < CONVERSATIONS; i++) await buildBigConversation(tmp, { entries: i % 3 === 2 ? 12 : ENTRIES, branches: i % 3 === 2 ? 1 : 40, title: `c${i}` })
  const store = new HistoryStore({ dir: tmp, watchPeers: false, log: benchLog, dagCacheBytes: 2 ** 40 })
  await store.ready()
  const ids = store.list().map(s => s.id)
  const kept: ConversationDag[] = []
  const before = heapUsed()
  for (const id of ids) kept.push(await store.open(id))
  const loaded = heapUsed() - before
  const stats = store.dagCacheStats()
  const entries = kept.reduce((n, d) => n + d.size, 0)
  const line = (name: string, measured: number): void => {
    emit({ name, value: Math.round(measured), unit: 'bytes', baseline: stats.bytes, baselineIs: 'the estimate dagCacheStats().bytes', ratio: round(measured / stats.bytes, 3), target: 'ratio ≤ 1', ok: measured <= stats.bytes, conversations: ids.length, entries, bytesPerEntry: Math.round(measured / entries) })
  }
  line('history.dagcache.estimate.loaded', loaded)
  // what entries written or received this session cost: their encoding is kept beside them
  for (const d of kept) for (const e of d.entries()) encodeEntry(e)
  line('history.dagcache.estimate.live', heapUsed() - before)
  await store.close()
} finally {
  await fs.rm(tmp, { recursive: true, force: true })
}
