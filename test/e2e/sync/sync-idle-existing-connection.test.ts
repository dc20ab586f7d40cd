// A feed closed as idle while a peer asks for it on a connection that already existed (issue 12,
// "a feed closed as idle while a peer still needs it"). When the pool closes a feed's last
// session, Corestore keeps the core a few seconds (its gc of idle cores) and the core stays
// paired on every connection it was attached to: a peer opening the feed's channel there pairs
// with it through Hypercore's replicator, not through Corestore, so Corestore's gc is not
// cancelled and closes the core under the peer, which then waits on that feed for ever.
// The window is driven, not hoped for: the holder's output is held from before the peer's
// channel open until the held core was either closed or taken back by the pool.
import { describe, expect, it } from 'vitest'
import type Hypercore from 'hypercore'
import { HistoryStore } from '../../../src/main/history/history-store'
import type { EntryDraft } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { MemoryLink } from '../../helpers/in-process-network'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'

const { dirs, defer } = perTest('arbor-idle-existing-')
const ENTRIES = 40

/** What the test reads of a core Corestore holds (its own objects, no Arbor knob). */
interface HeldCore {
  key: Buffer | null
  closing: Promise<void> | null
  replicator: { peers: unknown[]; attached: (muxer: unknown) => boolean }
}

const heldCore = (h: HistoryStore, key: string): HeldCore | undefined => {
  for (const core of h.corestore.cores as unknown as Iterable<HeldCore>) if (core.key?.toString('hex') === key) return core
  return undefined
}
/** Whether the store's feed pool holds a session of the feed (HistoryStore's `cores`, which tests reach for). */
const pooled = (h: HistoryStore, key: string): boolean => (h as unknown as { cores: Map<string, Hypercore.Core> }).cores.has(key)

const chain = (parent: string, n: number): EntryDraft[] =>
  Array.from({ length: n }, (_, i) => ({ kind: 'user' as const, body: { text: `entry ${i}` }, parents: [i === 0 ? parent : `$${i - 1}`] }))

async function store (idleCloseMs?: number): Promise<HistoryStore> {
  const h = new HistoryStore({ dir: await dirs.make(), log: memoryLogger(), ...(idleCloseMs !== undefined ? { idleCloseMs } : {}) })
  await h.ready()
  defer(() => h.close())
  return h
}

/**
 * How long after a core went idle Corestore's gc has closed it: a strike every 2 s, closed at
 * the fourth (4–6 s after the idle), with a margin.
 */
const GC_WINDOW_MS = 9_000

describe('a feed closed as idle, requested on an existing connection', () => {
  // early in the window, and late (the gc closes it 4–6 s after the idle)
  for (const askAfterMs of [0, 3_000]) {
    it(`the peer receives every entry when it asks ${askAfterMs} ms into Corestore's gc window`, async () => {
      const a = await store(50)
      const b = await store()
      const link = new MemoryLink(a.keyPair, b.keyPair)
      defer(() => link.destroy())
      expect(await link.opened()).toBe(true)
      a.replicate(link.a)
      b.replicate(link.b)

      // written on the open connection: the feed's core is attached to it (Corestore's attachAll)
      const root = await a.createConversation({ title: 'held' })
      await a.append(root.id, chain(root.id, ENTRIES))
      const key = a.feeds(root.id)[0]?.key as string
      await until(() => !pooled(a, key), 'a to close the feed as idle', 5_000)
      const idleAt = Date.now()
      if (askAfterMs > 0) await new Promise(resolve => setTimeout(resolve, askAfterMs))
      const core = heldCore(a, key)
      // the window: no session of a's, Corestore still holds the core, paired on this connection
      expect(pooled(a, key)).toBe(false)
      expect(core).toBeDefined()
      expect(core?.closing).toBeNull()
      expect(core?.replicator.attached(link.a.userData)).toBe(true)

      // a's answers are held from before b's channel open reaches it to the end of the gc
      // window (or until the gc closed the core): b has not had a block when the gc strikes
      link.freeze('a', 'out', true)
      await b.addFeed(root.id, key)
      await until(() => (core?.replicator.peers.length ?? 0) > 0, 'b\'s channel to pair with a\'s held core', 5_000)
      await until(() => core?.closing !== null || Date.now() >= idleAt + GC_WINDOW_MS, 'the gc window to pass', GC_WINDOW_MS + 1_000)
      link.freeze('a', 'out', false)

      await until(() => b.summary(root.id)?.size === ENTRIES + 1, 'b to hold every entry', 20_000).catch((err: Error) => {
        throw new Error(`${err.message}: it holds ${b.summary(root.id)?.size ?? 0} of ${ENTRIES + 1}, a's core ${core?.closing !== null ? 'closed' : 'open'}`, { cause: err })
      })
      // the same core, held for b by a's pool
      expect(core?.closing).toBeNull()
      expect(heldCore(a, key)).toBe(core)
    }, 60_000)
  }
})
