// bench/scale's initial sync (run in a child, scale-child.ts): a fresh device given the whole
// history by one holder over an in-memory Noise link, beside raw Corestore replication of the
// same cores into a fresh Corestore. Runs alternate raw, arbor, raw, … so both see the same load.
import fs from 'node:fs/promises'
import path from 'node:path'
import Corestore from 'corestore'
import type Hypercore from 'hypercore'
import { Cluster, closeDevice, connect, connectRaw, contiguous, held, holdsAll } from './sync-devices'
import { median, round, start, type Took } from './util'


const note = (m: string): void => { process.stderr.write(`bench scale: ${m}\n`) }

export async function initialSync (holderDir: string, work: string, runs: number): Promise<Record<string, unknown>> {
  const cluster = new Cluster()
  const holder = await cluster.device(holderDir)
  const { entries, conversations } = held(holder.history)
  const feeds = holder.history.feeds().map(f => ({ key: f.key, length: holder.history.availableLength(f.key) }))
  const lengths = new Map(feeds.map(f => [f.key, f.length]))
  let n = 0

  const rawRun = async (): Promise<Took> => {
    const dir = path.join(work, `raw-${n++}`)
    const store = new Corestore(dir)
    await store.ready()
    const took = start()
    const link = await connectRaw(holder.history.corestore, store)
    const waits = feeds.map(f => {
      const core: Hypercore.Core = store.get({ key: Buffer.from(f.key, 'hex') })
      core.download({ start: 0, end: -1 })
      return { core, length: f.length }
    })
    await contiguous(waits)
    const t = took()
    link.destroy()
    await store.close()
    await fs.rm(dir, { recursive: true, force: true })
    return t
  }

  const watermarks: number[] = []
  const arborRun = async (): Promise<Took> => {
    const dir = path.join(work, `fresh-${n++}`)
    const fresh = await cluster.device(dir)
    const all = holdsAll(fresh.history, entries)
    const took = start()
    const conn = await connect(holder, fresh)
    await all
    const t = took()
    // the watermark: every feed's entries in the fresh device's entry cache too
    while (!fresh.history.feeds().every(f => f.indexed >= (lengths.get(f.key) ?? 0))) await new Promise(resolve => setTimeout(resolve, 5))
    watermarks.push(took().ms)
    const got = held(fresh.history)
    if (got.conversations !== conversations || got.entries !== entries || got.waiting !== 0) throw new Error(`the fresh device holds ${got.conversations} conversations, ${got.entries} entries (${got.waiting} waiting) of ${conversations}, ${entries}`)
    conn.link.destroy()
    await closeDevice(fresh)
    await fs.rm(dir, { recursive: true, force: true })
    return t
  }

  const raw: Took[] = []
  const arbor: Took[] = []
  raw.push(await rawRun())
  for (let i = 0; i < runs; i++) {
    arbor.push(await arborRun())
    raw.push(await rawRun())
    note(`initial sync run ${i}: arbor ${round(arbor[i]?.ms ?? 0)} ms (cpu ${round(arbor[i]?.cpuMs ?? 0)}), raw ${round(raw[i]?.ms ?? 0)} / ${round(raw[i + 1]?.ms ?? 0)} ms`)
  }
  await closeDevice(holder)
  const ms = median(arbor.map(t => t.ms))
  const baseMs = median(raw.map(t => t.ms))
  const cpu = median(arbor.map(t => t.cpuMs))
  const baseCpu = median(raw.map(t => t.cpuMs))
  return {
    value: Math.round(entries / (ms / 1000)),
    baseline: Math.round(entries / (baseMs / 1000)),
    ratio: round(baseMs / ms, 3),
    ms: round(ms),
    baselineMs: round(baseMs),
    runsMs: arbor.map(t => round(t.ms)),
    baselineRunsMs: raw.map(t => round(t.ms)),
    cpuMs: round(cpu),
    baselineCpuMs: round(baseCpu),
    cpuRatio: round(baseCpu / cpu, 3),
    watermarkMs: round(median(watermarks)),
    entries,
    conversations,
    feeds: feeds.length
  }
}
