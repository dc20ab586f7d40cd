/**
 * Memory is bounded (issue 12, "Durable state"): a node that opens every conversation once
 * (placement and sync do) grows by its DAG cache budget and a constant, however much history
 * it holds. A real child process (fixtures/open-every-conversation.ts) opens a store holding
 * ~85 MB of entries, each conversation once, and reports its RSS and heap. With every DAG kept
 * for ever (before the DAG cache) it grew by ~107 MiB of RSS and ~85 MiB of live heap; within a
 * 4 MiB budget, by ~65 MiB of RSS (V8's young generation, up to 48 MiB, and old-generation
 * headroom: measured to level off there however many more conversations are opened) and ~2 MiB
 * of live heap.
 */
import { execFile } from 'node:child_process'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { HistoryStore } from '../../../src/main/history/history-store'
import type { EntryDraft } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { perTest } from '../../helpers/per-test'
import { E2E_FIXTURES } from '../../helpers/paths'

const CHILD = path.join(E2E_FIXTURES, 'open-every-conversation.ts')
const { dirs } = perTest('arbor-memory-')

const MiB = 1024 * 1024
const CONVERSATIONS = 120
const ENTRIES = 40
const BUDGET = 4 * MiB
/** what the process may grow by besides the budget: V8's young generation and heap headroom */
const CONSTANT = 80 * MiB

interface Report {
  conversations: number
  entries: number
  rssBefore: number
  rssPeak: number
  rssAfter: number
  heapBefore: number
  heapAfter: number
  stats?: { budgetBytes: number; bytes: number; count: number; evictions: number }
}

function openAll (dir: string, budget: number): Promise<Report> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--expose-gc', '--import', 'tsx', CHILD, dir, String(budget)], { encoding: 'utf8', timeout: 20_000, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err !== null) { reject(new Error(`${err.message}\n${stderr}`)); return }
      resolve(JSON.parse(stdout.trim().split('\n').pop() as string) as Report)
    })
  })
}

describe('memory of a node that opened every conversation', () => {
  it('grows by the DAG cache budget and a constant, not with the history', async () => {
    const dir = await dirs.make()
    const s = new HistoryStore({ dir, log: memoryLogger(), watchPeers: false })
    await s.ready()
    // tool outputs of ~18 KB: much history in few entries, so writing it stays quick
    const output = (c: number, i: number): string => `${c}:${i} ` + 'drwxr-xr-x  2 root root 4096 src/main/history\n'.repeat(380)
    for (let c = 0; c < CONVERSATIONS; c++) {
      const root = await s.createConversation({ title: `c${c}` })
      const drafts: EntryDraft[] = []
      for (let i = 0; i < ENTRIES; i++) drafts.push({ kind: 'tool.result', body: { callId: `call_${i}`, status: 'ok', output: output(c, i) }, parents: [i === 0 ? root.id : `$${i - 1}`] })
      await s.append(root.id, drafts)
    }
    await s.close()

    const r = await openAll(dir, BUDGET)
    const mib = (n: number): string => (n / MiB).toFixed(1)
    process.stderr.write(`history-memory: ${r.entries} entries in ${r.conversations} conversations opened: RSS +${mib(r.rssPeak - r.rssBefore)} MiB at the peak, ` +
      `+${mib(r.rssAfter - r.rssBefore)} MiB after; live heap +${mib(r.heapAfter - r.heapBefore)} MiB; budget ${mib(BUDGET)} MiB, cache ${JSON.stringify(r.stats)}\n`)
    expect(r.conversations).toBe(CONVERSATIONS)
    expect(r.entries).toBe(CONVERSATIONS * (ENTRIES + 1))
    expect(r.rssPeak - r.rssBefore).toBeLessThan(BUDGET + CONSTANT)
    // the live heap: what stays is within the budget (the estimate is an upper bound of the DAGs' heap)
    expect(r.heapAfter - r.heapBefore).toBeLessThan(BUDGET)
    expect(r.stats).toMatchObject({ budgetBytes: BUDGET, evictions: expect.any(Number) })
    expect(r.stats?.bytes).toBeLessThanOrEqual(BUDGET)
  }, 60_000)
})
