/**
 * Crash safety of the history store (DESIGN.md, "History"): SIGKILL during a stream of
 * appends loses at most the batches not yet acknowledged, and the store reopens. A real
 * child process (fixtures/append-writer.ts) appends until it is killed; this process then
 * reopens the store and checks what survived against what the child said was acknowledged.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { HistoryStore, type EntriesEvent } from '../../../src/main/history/history-store'
import { HistoryIndexFile, type IndexState } from '../../../src/main/history/index/history-index'
import { ConversationDag } from '../../../src/shared/conversation/conversation-dag'
import type { Entry } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { E2E_FIXTURES, ROOT } from '../../helpers/paths'

const WRITER = path.join(E2E_FIXTURES, 'append-writer.ts')

const children = new Set<ChildProcess>()
const stores = new Set<HistoryStore>()
const dirs: string[] = []

afterEach(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await once(child, 'close')
    }
  }
  children.clear()
  await Promise.allSettled([...stores].map(s => s.close()))
  stores.clear()
  await Promise.all(dirs.splice(0).map(d => fs.rm(d, { recursive: true, force: true })))
})

async function tempDir (): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'arbor-crash-'))
  dirs.push(dir)
  return dir
}

function randomInt (lo: number, hi: number): number {
  return lo + Math.floor(Math.random() * (hi - lo + 1))
}

/** Opens a store, hearing the entries it recovers from the feeds while it opens. */
async function openStore (dir: string): Promise<{ store: HistoryStore; recovered: Set<string>; log: ReturnType<typeof memoryLogger> }> {
  const log = memoryLogger()
  const store = new HistoryStore({ dir, log, watchPeers: false })
  stores.add(store)
  const recovered = new Set<string>()
  const onEntries = (ev: EntriesEvent): void => {
    for (const e of [...ev.joined, ...ev.waiting]) recovered.add(e.id)
  }
  store.on('entries', onEntries)
  await store.ready()
  store.off('entries', onEntries)
  return { store, recovered, log }
}

async function closeStore (store: HistoryStore): Promise<void> {
  await store.close()
  stores.delete(store)
}

interface Kill {
  seed: number
  ranMs: number
  acked: Set<string>
  /** entries of the append calls started but not acknowledged when the child died */
  inFlight: number
  batchesInFlight: number
  stderr: string
}

/** Runs the writer on dir until it has appended for a random 100–600 ms, then SIGKILLs it. */
async function runAndKill (dir: string, conversation: string): Promise<Kill> {
  const seed = randomInt(1, 2 ** 31)
  const child = spawn(process.execPath, ['--import', 'tsx', WRITER, dir, conversation, String(seed)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe']
  })
  children.add(child)
  const closed = once(child, 'close')
  const started = new Map<number, number>()
  const acked = new Set<string>()
  const errors: string[] = []
  let stderr = ''
  let buffered = ''
  let onReady: () => void = () => undefined
  const ready = new Promise<void>(resolve => { onReady = resolve })
  child.stderr.setEncoding('utf8').on('data', (s: string) => { stderr += s })
  child.stdout.setEncoding('utf8').on('data', (s: string) => {
    buffered += s
    let nl: number
    while ((nl = buffered.indexOf('\n')) !== -1) {
      const line = buffered.slice(0, nl)
      buffered = buffered.slice(nl + 1)
      const msg = JSON.parse(line) as { t: string; batch: number; n: number; ids: string[]; message: string }
      if (msg.t === 'ready') onReady()
      else if (msg.t === 'start') started.set(msg.batch, msg.n)
      else if (msg.t === 'ack') {
        started.delete(msg.batch)
        for (const id of msg.ids) acked.add(id)
      } else if (msg.t === 'error') errors.push(msg.message)
    }
  })
  const exitedEarly = closed.then(() => { throw new Error(`the writer exited before it was killed (seed ${seed}): ${stderr}`) })
  await Promise.race([ready, exitedEarly])
  const ranMs = randomInt(100, 600)
  await Promise.race([new Promise(resolve => setTimeout(resolve, ranMs)), exitedEarly])
  exitedEarly.catch(() => undefined)
  child.kill('SIGKILL')
  await closed // stdout is drained by now: every line the child wrote has been parsed
  children.delete(child)
  expect(child.signalCode, `seed ${seed}`).toBe('SIGKILL')
  expect(errors, `seed ${seed}: ${stderr}`).toEqual([])
  // A line cut by the kill can only be the last; its batch counts as in flight.
  return {
    seed,
    ranMs,
    acked,
    inFlight: [...started.values()].reduce((a, b) => a + b, 0),
    batchesInFlight: started.size,
    stderr
  }
}

async function readIndex (dir: string): Promise<IndexState> {
  return (await new HistoryIndexFile(path.join(dir, 'index')).load(null)).state as IndexState
}

async function cachedIds (dir: string, conversation: string): Promise<Set<string>> {
  const text = await fs.readFile(path.join(dir, 'index', 'entries', conversation + '.jsonl'), 'utf8')
  const ids = new Set<string>()
  for (const line of text.split('\n')) {
    try {
      ids.add((JSON.parse(line) as { id: string }).id)
    } catch { /* a torn last line */ }
  }
  return ids
}

/** Length of this device's feed for the conversation (header block included). */
async function ownFeedLength (store: HistoryStore, conversation: string): Promise<number> {
  const rec = store.feeds(conversation).find(f => f.own)
  expect(rec).toBeDefined()
  const core = store.corestore.get({ key: Buffer.from((rec as { key: string }).key, 'hex') })
  await core.ready()
  const length = core.length
  await core.close()
  return length
}

/** The conversation as the blocks of this device's feed make it, read directly. */
async function dagFromFeed (store: HistoryStore, conversation: string): Promise<ConversationDag> {
  const rec = store.feeds(conversation).find(f => f.own)
  const core = store.corestore.get({ key: Buffer.from((rec as { key: string }).key, 'hex') })
  await core.ready()
  const dag = new ConversationDag(conversation)
  for (let i = 1; i < core.length; i++) dag.add(JSON.parse((await core.get(i) as Buffer).toString('utf8')) as Entry)
  await core.close()
  return dag
}

/** Everything that must hold of a store just reopened after a kill. */
async function checkStore (store: HistoryStore, conversation: string): Promise<ConversationDag> {
  const dag = await store.open(conversation)
  expect(dag.waiting().map(e => e.id)).toEqual([])
  expect(dag.missing()).toEqual([])
  // Every block of the feed but its header is an entry of the DAG: nothing stored is left out.
  expect(dag.size).toBe(await ownFeedLength(store, conversation) - 1)
  const summaries = store.list()
  expect(summaries.map(s => s.id)).toEqual([conversation])
  const summary = summaries[0]
  expect(summary?.size).toBe(dag.size)
  expect(summary?.waiting).toBe(0)
  expect(new Set(summary?.heads)).toEqual(new Set(dag.heads().map(e => e.id)))
  return dag
}

async function newConversation (dir: string): Promise<string> {
  const store = new HistoryStore({ dir, watchPeers: false })
  stores.add(store)
  await store.ready()
  const root = await store.createConversation({ title: 'crash safety' })
  await closeStore(store)
  return root.id
}

describe('history store crash safety (SIGKILL of a real writer)', () => {
  it('keeps every acknowledged entry and reopens, over several kills of the same store', async () => {
    const dir = await tempDir()
    const conversation = await newConversation(dir)
    let before = new Set<string>([conversation])
    let readPastWatermark = 0
    const report: string[] = []

    for (let round = 1; round <= 3; round++) {
      const kill = await runAndKill(dir, conversation)
      const why = `round ${round}, seed ${kill.seed}, killed after ${kill.ranMs} ms`

      // What the killed process left on disk: an index marked dirty, lagging the feed.
      const index = await readIndex(dir)
      expect(index.clean, why).toBe(false)
      const watermark = Object.values(index.feeds).find(f => f.own)?.indexed ?? 0
      const cached = await cachedIds(dir, conversation)

      const { store, recovered, log } = await openStore(dir)
      expect(log.lines.some(l => l.level === 'info' && /not closed cleanly/.test(l.message)), why).toBe(true)
      expect(log.lines.filter(l => l.level !== 'info'), why).toEqual([])
      const dag = await checkStore(store, conversation)
      const ids = new Set([...dag.entries()].map(e => e.id))

      for (const id of before) expect(ids.has(id), `${why}: entry ${id} of an earlier round is gone`).toBe(true)
      const lost = [...kill.acked].filter(id => !ids.has(id))
      expect(lost, `${why}: acknowledged entries lost`).toEqual([])
      const unacked = [...ids].filter(id => !before.has(id) && !kill.acked.has(id))
      expect(unacked.length, `${why}: more unacknowledged entries survived than were in flight`).toBeLessThanOrEqual(kill.inFlight)

      // The reconcile found exactly the entries the entry cache had not got to.
      const pastCache = [...ids].filter(id => !cached.has(id))
      expect(new Set(pastCache), why).toEqual(recovered)
      const feedLength = await ownFeedLength(store, conversation)
      readPastWatermark += feedLength - watermark

      // The store takes new appends after the crash.
      const head = dag.heads().at(-1)?.id ?? conversation
      const [added] = await store.append(conversation, [{ kind: 'user', body: { text: `after crash ${round}` }, parents: [head] }])
      expect(added !== undefined && dag.isJoined(added.id)).toBe(true)
      const snapshot = dag.snapshot()
      await closeStore(store)

      // A clean reopen gives the same DAG, from the index and cache alone.
      const again = await openStore(dir)
      expect(again.log.lines.some(l => /not closed cleanly/.test(l.message))).toBe(false)
      const dag2 = await checkStore(again.store, conversation)
      expect(dag2.snapshot(), why).toEqual(snapshot)
      expect(again.recovered.size).toBe(0)
      await closeStore(again.store)

      report.push(`round ${round}: ${kill.acked.size} acked, ${kill.batchesInFlight} calls/${kill.inFlight} entries in flight, ` +
        `${unacked.length} unacked survived, ${feedLength - watermark} blocks past the index watermark, ${pastCache.length} past the entry cache`)
      before = new Set(snapshot.entries)
    }
    console.log(report.join('\n'))
    // The index is saved on a timer while appending, so after a kill it lags the feed.
    expect(readPastWatermark).toBeGreaterThan(0)
  })

  it('rebuilds a deleted index from the feeds after a kill, to the same DAG', async () => {
    const dir = await tempDir()
    const conversation = await newConversation(dir)
    const indexDir = path.join(dir, 'index')

    // 1. Killed, reopened with its index (reconcile), then reopened without it (rebuild).
    const first = await runAndKill(dir, conversation)
    const reconciled = await openStore(dir)
    const expected = (await checkStore(reconciled.store, conversation)).snapshot()
    await closeStore(reconciled.store)
    await fs.rm(indexDir, { recursive: true })
    const rebuiltClean = await openStore(dir)
    expect(rebuiltClean.log.lines.filter(l => l.level !== 'info')).toEqual([])
    expect((await checkStore(rebuiltClean.store, conversation)).snapshot(), `seed ${first.seed}`).toEqual(expected)
    await closeStore(rebuiltClean.store)

    // 2. Killed, and its index deleted before anything reopens it.
    const kill = await runAndKill(dir, conversation)
    const why = `seed ${kill.seed}, killed after ${kill.ranMs} ms`
    await fs.rm(indexDir, { recursive: true })
    const rebuilt = await openStore(dir)
    expect(rebuilt.log.lines.filter(l => l.level !== 'info'), why).toEqual([])
    const dag = await checkStore(rebuilt.store, conversation)
    // The same DAG as the feed's blocks make on their own.
    expect(dag.snapshot(), why).toEqual((await dagFromFeed(rebuilt.store, conversation)).snapshot())
    const ids = new Set(dag.snapshot().entries)
    for (const id of [...expected.entries, ...kill.acked]) expect(ids.has(id), `${why}: ${id} lost`).toBe(true)
    expect(ids.size - expected.entries.length - kill.acked.size, why).toBeLessThanOrEqual(kill.inFlight)
    await fs.access(path.join(indexDir, 'index.snap'))
    const [added] = await rebuilt.store.append(conversation, [{ kind: 'note', body: { text: 'after rebuild' }, parents: [conversation] }])
    const snapshot = dag.snapshot()
    expect(snapshot.entries).toContain(added?.id)
    await closeStore(rebuilt.store)

    const again = await openStore(dir)
    expect(again.log.lines.some(l => /not closed cleanly|rebuilding/.test(l.message))).toBe(false)
    expect((await checkStore(again.store, conversation)).snapshot()).toEqual(snapshot)
    await closeStore(again.store)
  })
})
