// Devices of a sync benchmark in one process (HistoryStore + SyncNode without a swarm, one
// TestCluster), linked by in-memory Noise links, and raw Corestore replication beside them.
// bench/scale.ts's and bench/sync.ts's.
import type Corestore from 'corestore'
import type Hypercore from 'hypercore'
import crypto from 'hypercore-crypto'
import { HistoryStore, type HistoryStoreOptions } from '../../src/main/history/history-store'
import { SyncNode } from '../../src/main/sync/sync-node'
import type { SyncSession } from '../../src/main/sync/wire/sync-session'
import type { Logger } from '../../src/shared/logger'
import { MemoryLink } from '../../test/helpers/in-process-network'
import { TestCluster, type TestDevices } from '../../test/helpers/test-cluster'

export const syncLog: Logger = {
  info: () => undefined,
  warn: m => process.stderr.write(`bench sync warning: ${m}\n`),
  error: m => process.stderr.write(`bench sync error: ${m}\n`)
}

export interface Device { history: HistoryStore; node: SyncNode }

/** Every device made with the same Cluster trusts the others (one secret, one device list). */
export class Cluster {
  readonly secret = crypto.randomBytes(32)
  readonly devices: TestDevices = new Map()

  async device (dir: string, opts: Partial<HistoryStoreOptions> = {}): Promise<Device> {
    const history = new HistoryStore({ dir, log: syncLog, ...opts })
    await history.ready()
    const cluster = new TestCluster(this.secret, this.devices, 'bench')
    cluster.add(history.device)
    const node = new SyncNode({ history, cluster, swarm: false, log: syncLog })
    await node.ready()
    return { history, node }
  }
}

export async function closeDevice (d: Device): Promise<void> {
  await d.node.close()
  await d.history.close()
}

export interface Connection { link: MemoryLink; a: SyncSession; b: SyncSession }

/** Links two nodes as Hyperswarm would: attach() once the Noise handshake is done (a initiates). */
export async function connect (a: Device, b: Device): Promise<Connection> {
  const link = new MemoryLink(a.history.keyPair, b.history.keyPair)
  if (!await link.opened()) throw new Error('the Noise handshake failed')
  const sa = a.node.attach(link.a)
  const sb = b.node.attach(link.b)
  if (sa === null || sb === null) throw new Error('a node refused the connection')
  return { link, a: sa, b: sb }
}

/** Raw Corestore replication of two stores over the same kind of link. */
export async function connectRaw (a: Corestore, b: Corestore): Promise<MemoryLink> {
  const link = new MemoryLink(crypto.keyPair(), crypto.keyPair())
  if (!await link.opened()) throw new Error('the Noise handshake failed')
  a.replicate(link.a)
  b.replicate(link.b)
  return link
}

/** Resolves once every core has `contiguousLength` ≥ its target; rejects after stallMs without progress. */
export function contiguous (cores: Array<{ core: Hypercore.Core; length: number }>, stallMs = 60_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let left = 0
    let progress = 0
    let seen = 0
    const watchdog = setInterval(() => {
      if (progress !== seen) { seen = progress; return }
      clearInterval(watchdog)
      reject(new Error(`raw replication stalled: ${left} cores incomplete after ${stallMs / 1000} s without progress`))
    }, stallMs)
    const finish = (): void => { clearInterval(watchdog); resolve() }
    for (const { core, length } of cores) {
      if (core.contiguousLength >= length) continue
      left++
      const check = (): void => {
        progress++
        if (core.contiguousLength < length) return
        core.off('download', check)
        if (--left === 0) finish()
      }
      core.on('download', check)
    }
    if (left === 0) finish()
  })
}

/** Counts cores a Corestore creates (opens) from now on, through its core tracker. */
export function openCounter (store: Corestore): { count: () => number; stop: () => void } {
  const tracker = (store as unknown as { cores: { set: (id: string, core: unknown) => void } }).cores
  const original = tracker.set
  let n = 0
  tracker.set = function (this: unknown, id: string, core: unknown) { n++; original.call(this, id, core) }
  return { count: () => n, stop: () => { tracker.set = original } }
}

/** Resolves when check() holds, checking on every turn of the event loop (no timer granularity). */
export async function until (check: () => boolean, what: string, ms = 120_000): Promise<void> {
  const deadline = performance.now() + ms
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setImmediate(resolve))
  }
}

/** Entries a store holds and how many of them wait, from its summaries. */
export function held (store: HistoryStore): { entries: number; waiting: number; conversations: number } {
  let entries = 0
  let waiting = 0
  const list = store.list()
  for (const s of list) { entries += s.size; waiting += s.waiting }
  return { entries, waiting, conversations: list.length }
}

/**
 * Resolves once a store holds `want` entries, none waiting, checked on every 'entries' event
 * (the running total is kept from the summaries it changes); rejects with what is missing
 * after stallMs without progress.
 */
export function holdsAll (store: HistoryStore, want: number, stallMs = 60_000): Promise<void> {
  const sizes = new Map<string, { size: number; waiting: number }>()
  let total = 0
  let waiting = 0
  for (const s of store.list()) { sizes.set(s.id, { size: s.size, waiting: s.waiting }); total += s.size; waiting += s.waiting }
  return new Promise((resolve, reject) => {
    let seen = total
    const stop = (): void => { store.off('entries', on); clearInterval(watchdog) }
    const on = (ev: { conversation: string }): void => {
      const s = store.summary(ev.conversation)
      const was = sizes.get(ev.conversation) ?? { size: 0, waiting: 0 }
      const now = { size: s?.size ?? 0, waiting: s?.waiting ?? 0 }
      total += now.size - was.size
      waiting += now.waiting - was.waiting
      sizes.set(ev.conversation, now)
      if (total >= want && waiting === 0) { stop(); resolve() }
    }
    const watchdog = setInterval(() => {
      if (total !== seen) { seen = total; return }
      stop()
      const peer = store.feeds().filter(f => !f.own)
      reject(new Error(`sync stalled: ${total} of ${want} entries (${waiting} waiting) after ${stallMs / 1000} s without progress; ${peer.length} peer feeds known, ${peer.filter(f => f.indexed === 0).length} with nothing read`))
    }, stallMs)
    store.on('entries', on)
    if (total >= want && waiting === 0) { stop(); resolve() }
  })
}
