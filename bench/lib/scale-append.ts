// bench/scale's append line (run in a child, scale-child.ts): HistoryStore.append into the
// largest conversation this device writes to, in a copy of the large data set, beside raw
// Hypercore appends of the same bytes; then where its time goes (append-breakdown.ts).
import fs from 'node:fs/promises'
import path from 'node:path'
import Corestore from 'corestore'
import { HistoryStore } from '../../src/main/history/history-store'
import { encodeEntry, type Entry, type EntryDraft } from '../../src/shared/entry/entry'
import { measureInPlace, measurePieces, profile } from './append-breakdown'
import { benchLog, median, round, textMaker } from './util'

const TOTAL = 10_000
const CALL = 100
const ROOT = path.resolve(import.meta.dirname, '..', '..')

export async function appendThroughput (sourceDir: string, work: string, runs: number): Promise<Record<string, unknown>> {
  const dir = path.join(work, 'append-store')
  const tc = performance.now()
  await fs.cp(sourceDir, dir, { recursive: true }) // appends must not change the cached data set
  // Corestore refuses a copied store (its device file names the inode), so that two processes
  // never write one device's feeds: this copy is thrown away, so it gets a device file of its own.
  await fs.rm(path.join(dir, 'corestore', 'CORESTORE'))
  const copyMs = performance.now() - tc
  const store = new HistoryStore({ dir, log: benchLog })
  await store.ready()
  const own = new Set(store.feeds().filter(f => f.own).map(f => f.conversation))
  const target = store.list().filter(s => own.has(s.id) && s.waiting === 0).sort((a, b) => b.size - a.size)[0]
  if (target === undefined) throw new Error('the data set has no conversation this device writes to')
  const conversation = target.id
  const dag = await store.open(conversation) // loaded before any timing, as a node that shows it has
  const sizeBefore = dag.size
  let head = target.heads[0] as string

  // 200–500 B of text, user and assistant in turn, as history.append.throughput
  const text = textMaker(42)
  const bodies = Array.from({ length: TOTAL }, () => text())
  const callDrafts = (parent: string, from: number): EntryDraft[] => Array.from({ length: CALL }, (_, i): EntryDraft => ({
    kind: i % 2 === 0 ? 'user' : 'assistant',
    body: { text: bodies[from + i] as string },
    parents: [i === 0 ? parent : `$${i - 1}`]
  }))
  let lastEntries: Entry[] = []
  const appendAll = async (): Promise<void> => {
    const written: Entry[] = []
    for (let i = 0; i < TOTAL; i += CALL) {
      const got = await store.append(conversation, callDrafts(head, i))
      written.push(...got)
      head = (got[got.length - 1] as Entry).id
    }
    lastEntries = written
  }
  const subject = async (): Promise<number> => {
    const t0 = performance.now()
    await appendAll()
    return TOTAL / ((performance.now() - t0) / 1000)
  }
  const rawInto = async (cs: Corestore, name: string): Promise<number> => {
    const buffers = lastEntries.map(e => Buffer.from(encodeEntry(e)))
    const core = cs.get({ name })
    await core.ready()
    const t0 = performance.now()
    for (let i = 0; i < buffers.length; i += CALL) await core.append(buffers.slice(i, i + CALL))
    const r = buffers.length / ((performance.now() - t0) / 1000)
    await core.close()
    return r
  }
  let n = 0
  const raw = (): Promise<number> => rawInto(store.corestore, `bench/raw-append-${n++}`)
  const fresh = async (): Promise<number> => {
    const cs = new Corestore(path.join(work, `fresh-corestore-${n++}`))
    await cs.ready()
    const r = await rawInto(cs, 'bench')
    await cs.close()
    return r
  }

  const subjects: number[] = []
  const raws: number[] = []
  const freshes: number[] = []
  await subject(); await raw(); await fresh() // warm-up
  for (let i = 0; i < runs; i++) {
    subjects.push(await subject())
    raws.push(await raw())
    freshes.push(await fresh())
  }

  // Where the time goes: one run with the store's steps timed in place, one under the profiler.
  const inPlace = await measureInPlace(store, appendAll)
  const pieces = measurePieces(callDrafts(head, 0).map(d => ({ ...d, parents: [head] })).concat(
    Array.from({ length: 1900 }, (_, i): EntryDraft => ({ kind: i % 2 === 0 ? 'user' : 'assistant', body: { text: bodies[i + 100] as string }, parents: [head] }))
  ), { conversation, device: store.device, ts: Date.now() })
  const state = (store as unknown as { state: unknown }).state
  const ts = performance.now()
  const indexText = JSON.stringify(state)
  const stringifyMs = performance.now() - ts
  const cpu = await profile(appendAll, ROOT)

  await store.close()
  const value = median(subjects)
  const baseline = median(raws)
  const baselineFresh = median(freshes)
  return {
    value: Math.round(value),
    baseline: Math.round(baseline),
    ratio: round(value / baseline, 3),
    baselineFresh: Math.round(baselineFresh),
    ratioFresh: round(value / baselineFresh, 3),
    runs: subjects.map(x => Math.round(x)),
    baselineRuns: raws.map(x => Math.round(x)),
    appended: TOTAL,
    perCall: CALL,
    avgEntryBytes: Math.round(lastEntries.reduce((s, e) => s + Buffer.byteLength(encodeEntry(e)), 0) / lastEntries.length),
    conversationSize: sizeBefore,
    copyMs: round(copyMs),
    breakdown: {
      inPlaceMs: inPlace,
      inPlaceUsPerEntry: Object.fromEntries(Object.entries(inPlace.ms).map(([k, ms]) => [k, round(ms * 1000 / TOTAL, 1)])),
      perEntryUs: pieces,
      indexFile: { bytes: Buffer.byteLength(indexText), stringifyMs: round(stringifyMs, 1), saves: inPlace.calls['index file save (stringify + write + fsync + rename)'] ?? 0 },
      cpuProfile: { ...cpu, byFile: cpu.byFile.slice(0, 15), byFunction: cpu.byFunction.slice(0, 20), byArborFunction: cpu.byArborFunction.slice(0, 15) }
    }
  }
}
