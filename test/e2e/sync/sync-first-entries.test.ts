// A new device syncing a big history shows its first conversations at once (issue 12): it
// opens peers' feeds a bounded number at a time, so the holder serves the first of them while
// the rest wait, instead of both sides opening every feed before either reads one. Asserted
// on structure (how many feeds were opened on each side when the first entry was indexed),
// never on wall time.
import { describe, expect, it } from 'vitest'
import type Corestore from 'corestore'
import { HistoryStore } from '../../../src/main/history/history-store'
import { memoryLogger } from '../../../src/shared/logger'
import type { InProcessNetwork } from '../../helpers/in-process-network'
import { perTest } from '../../helpers/per-test'
import { syncDevices, type SyncDevice } from '../../helpers/sync-devices'
import { until } from '../../helpers/temp-dir'

const { dirs, defer } = perTest('arbor-first-entries-')
const CONVERSATIONS = 600
/** more than the open limit and what is in flight around it, far fewer than the feeds */
const FIRST_OPENS = 150

type Device = SyncDevice

/** `names`' devices; a name in `at` opens the history already in that directory */
const devices = async (names: string[], at: Record<string, string> = {}): Promise<{ net: InProcessNetwork; d: Device[] }> => await syncDevices({ dirs, defer }, names, { at })

/** Counts the cores a Corestore opens (its core tracker's inserts), and the most opening at once. */
function opens (store: Corestore): { count: () => number; maxOpening: () => number } {
  const tracker = (store as unknown as { cores: { set: (id: string, core: { ready: () => Promise<void> }) => void } }).cores
  const original = tracker.set
  let n = 0
  let opening = 0
  let most = 0
  tracker.set = function (this: unknown, id, core) {
    n++
    opening++
    most = Math.max(most, opening)
    core.ready().then(() => { opening-- }, () => { opening-- })
    original.call(this, id, core)
  }
  return { count: () => n, maxOpening: () => most }
}

const held = (h: HistoryStore): number => h.list().reduce((n, s) => n + s.size, 0)

describe('first sync of a big history', () => {
  // Failed before the slots (feed-slots.ts): at the fresh device's first entry both sides had
  // opened all 600 feeds. (A window held only from the open to the core's first peer passed
  // here but stalled at 13,904 feeds: see the branch s12-firstsync's history.)
  it(`the fresh device indexes entries before it or the holder has opened ${FIRST_OPENS} of ${CONVERSATIONS} feeds`, async () => {
    // written, then started again: a holder that starts has none of its feeds open
    const dir = await dirs.make()
    const writer = new HistoryStore({ dir, log: memoryLogger() })
    for (let i = 0; i < CONVERSATIONS; i++) await writer.createConversation({ title: `c${i}` })
    await writer.close()
    const { net, d: [holder, fresh] } = await devices(['holder', 'fresh'], { holder: dir }) as { net: InProcessNetwork; d: [Device, Device] }
    const h = opens(holder.history.corestore)
    const f = opens(fresh.history.corestore)
    let atFirst: { holder: number; fresh: number } | null = null
    fresh.history.on('entries', () => { atFirst ??= { holder: h.count(), fresh: f.count() } })
    await net.connect('holder', 'fresh')
    await until(() => held(fresh.history) === CONVERSATIONS, 'the fresh device to hold every conversation', 120_000)
    expect(atFirst).not.toBeNull()
    expect(atFirst).toEqual({ holder: expect.any(Number), fresh: expect.any(Number) })
    const first = atFirst as unknown as { holder: number; fresh: number }
    expect(first.fresh, `feeds opened on the fresh device at its first entry (most opening at once ${f.maxOpening()})`).toBeLessThanOrEqual(FIRST_OPENS)
    expect(first.holder, `feeds opened on the holder at the fresh device's first entry (most opening at once ${h.maxOpening()})`).toBeLessThanOrEqual(FIRST_OPENS)
    // every slot was given back as its feed came in
    expect(fresh.history.peerFeedSlots).toEqual({ active: 0, waiting: 0 })
  }, 180_000)

  it('a holder cut mid-sync holds no slot: the other holder brings all it has while the first stays away, and the first the rest when back', async () => {
    const n = 300
    const make = async (): Promise<string> => {
      const dir = await dirs.make()
      const writer = new HistoryStore({ dir, log: memoryLogger() })
      for (let i = 0; i < n; i++) await writer.createConversation({ title: `c${i}` })
      await writer.close()
      return dir
    }
    const [aDir, bDir] = [await make(), await make()]
    const { net, d: [, b, fresh] } = await devices(['a', 'b', 'fresh'], { a: aDir, b: bDir }) as { net: InProcessNetwork; d: [Device, Device, Device] }
    const ofB = new Set(b.history.list().map(c => c.id))
    const fromB = (): number => fresh.history.list().filter(c => ofB.has(c.id) && c.size > 0).length
    // a's list is queued first, and a stops answering (frozen): its feeds hold the slots and wait ahead of b's
    await net.connect('a', 'fresh')
    await until(() => fresh.history.feeds().length >= n, "the fresh device to learn a's feeds", 60_000)
    net.freeze('a', true)
    await net.connect('b', 'fresh')
    await until(() => fresh.history.feeds().length >= 2 * n, "the fresh device to learn b's feeds", 60_000)
    expect(fresh.history.peerFeedSlots.waiting, "feeds waiting for a slot when a goes").toBeGreaterThan(n)
    net.cut('a', 'fresh')
    net.freeze('a', false)
    await until(() => fromB() === n, 'every conversation of b, while a is away', 120_000)
    await net.connect('a', 'fresh')
    await until(() => held(fresh.history) === 2 * n, 'every conversation of a once it is back', 120_000)
    expect(fresh.history.peerFeedSlots).toEqual({ active: 0, waiting: 0 })
  }, 360_000)
})
