// bench/scale's node measurements (each in its own child, scale-child.ts): an ArborNode (no
// swarm, no local socket) started on a data directory, timed to ready; and its memory after
// opening every conversation once.
import path from 'node:path'
import type { ArborNode } from '../../src/main/node'
import type { Logger } from '../../src/shared/logger'
import { round } from './util'

const quiet: Logger = {
  info: () => undefined,
  warn: m => process.stderr.write(`bench scale warning: ${m}\n`),
  error: m => process.stderr.write(`bench scale error: ${m}\n`)
}
const MB = 1024 * 1024

async function startNode (dataDir: string, work: string): Promise<{ node: ArborNode; importMs: number; historyMs: number; readyMs: number }> {
  const t0 = performance.now()
  const { ArborNode } = await import('../../src/main/node')
  const t1 = performance.now()
  const home = path.join(work, 'home')
  // Its own registry and HOME: the bench must not register the data set in the user's ~/.config.
  const node = new ArborNode({ dataDir, swarm: false, registryDir: path.join(home, 'nodes'), env: { HOME: home }, log: quiet })
  await node.history.ready()
  const t2 = performance.now()
  await node.ready()
  const t3 = performance.now()
  return { node, importMs: t1 - t0, historyMs: t2 - t1, readyMs: t3 - t1 }
}

/** ms from `new ArborNode` to ready (its HistoryStore's part beside), and of its close. */
export async function nodeReady (dataDir: string, work: string): Promise<Record<string, number>> {
  const { node, importMs, historyMs, readyMs } = await startNode(dataDir, work)
  const conversations = node.history.list().length
  const rss = process.memoryUsage().rss
  const t = performance.now()
  await node.close()
  return { ms: round(readyMs), historyMs: round(historyMs), importMs: round(importMs), closeMs: round(performance.now() - t), conversations, rssMb: round(rss / MB, 1) }
}

/** What the store says of the budget of its cache of opened conversations (`dagCacheStats()`; older names tried too), or null. */
function cacheBudget (store: object): { budgetBytes: number | null; cache: unknown } {
  const s = store as Record<string, unknown>
  const raw = s.dagCacheStats ?? s.cacheBudget ?? s.cacheStats ?? s.openBudget
  const value = typeof raw === 'function' ? (raw as () => unknown).call(store) : raw
  if (typeof value === 'number') return { budgetBytes: value, cache: value }
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>
    const bytes = [o.budgetBytes, o.bytes, o.maxBytes, o.budget, o.limit].find(v => typeof v === 'number')
    return { budgetBytes: (bytes as number | undefined) ?? null, cache: value }
  }
  return { budgetBytes: null, cache: null }
}

function memory (): { rss: number; heapUsed: number; external: number; arrayBuffers: number } {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error('run with --expose-gc')
  gc()
  gc()
  const m = process.memoryUsage()
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers }
}

/** How long the node idles before its settled RSS is read: V8 gives freed pages back from a background task once idle. */
const SETTLE_MS = 10_000

/**
 * RSS (after a full GC) of a ready node, after it opened every conversation once, after a
 * second pass over them all (what the process keeps does not grow with the opens), and once
 * it idled; peaks beside.
 */
export async function openAll (dataDir: string, work: string): Promise<Record<string, unknown>> {
  const { node } = await startNode(dataDir, work)
  const before = memory()
  const list = node.history.list()
  let peakHeapUsed = 0
  const pass = async (): Promise<{ ms: number; entries: number }> => {
    const t = performance.now()
    let entries = 0
    for (const [i, s] of list.entries()) {
      entries += (await node.history.open(s.id)).size
      if (i % 100 === 0) peakHeapUsed = Math.max(peakHeapUsed, process.memoryUsage().heapUsed)
    }
    return { ms: performance.now() - t, entries }
  }
  const { ms: openMs, entries } = await pass()
  const after = memory()
  const { ms: secondOpenMs } = await pass()
  const second = memory()
  await new Promise(resolve => setTimeout(resolve, SETTLE_MS))
  const settled = memory()
  const { budgetBytes, cache } = cacheBudget(node.history)
  await node.close()
  const mb = (x: number): number => round(x / MB, 1)
  return {
    rssMb: mb(after.rss),
    heapUsedMb: mb(after.heapUsed),
    externalMb: mb(after.external),
    arrayBuffersMb: mb(after.arrayBuffers),
    baselineRssMb: mb(before.rss),
    baselineHeapUsedMb: mb(before.heapUsed),
    baselineExternalMb: mb(before.external),
    secondPassRssMb: mb(second.rss),
    secondOpenMs: round(secondOpenMs),
    settledRssMb: mb(settled.rss),
    settleMs: SETTLE_MS,
    peakRssMb: mb(process.resourceUsage().maxRSS * 1024),
    peakHeapUsedMb: mb(peakHeapUsed),
    grownMb: mb(after.rss - before.rss),
    bytesPerEntry: Math.round((after.rss - before.rss) / Math.max(1, entries)),
    budgetBytes,
    cache,
    openMs: round(openMs),
    conversations: list.length,
    entries
  }
}
