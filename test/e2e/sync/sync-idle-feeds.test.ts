// Sync while feeds are closed as idle (HistoryStore idleCloseMs, ARCHITECTURE.md 4.5 and 5.4):
// a feed closed on one device while a peer still needs it, or reopened later, must never stop
// replication. Idle closing is made aggressive (tens of ms) so every feed is closed and reopened
// many times during a test; nothing here may depend on a timing setting to pass.
import { describe, expect, it } from 'vitest'
import type { HistoryStore } from '../../../src/main/history/history-store'
import type { Entry, EntryDraft } from '../../../src/shared/entry/entry'
import type { InProcessNetwork } from '../../helpers/in-process-network'
import { perTest } from '../../helpers/per-test'
import { syncDevices, type SyncDevice } from '../../helpers/sync-devices'
import { until } from '../../helpers/temp-dir'

const { dirs, defer } = perTest('arbor-idle-feeds-')
const IDLE_CLOSE_MS = 20

type Device = SyncDevice

/** Devices with aggressive idle closing, in one cluster, on an in-process network (not linked yet). */
const devices = async (names: string[]): Promise<{ net: InProcessNetwork; d: Device[] }> => await syncDevices({ dirs, defer }, names, { idleCloseMs: IDLE_CLOSE_MS })

/** Entries a device holds, over every conversation (waiting ones included). */
const held = (h: HistoryStore): number => h.list().reduce((n, s) => n + s.size, 0)

/** Waits until `to` holds every entry `from` holds; a timeout says what is missing. */
async function holdsAll (to: HistoryStore, from: HistoryStore, what: string, ms: number): Promise<void> {
  const want = held(from)
  try {
    await until(() => held(to) === want, what, ms)
  } catch (err) {
    const short = from.list().filter(s => (to.summary(s.id)?.size ?? 0) < s.size)
    const unread = to.feeds().filter(f => !f.own && f.indexed === 0).length
    throw new Error(`${(err as Error).message}: ${held(to)} of ${want} entries, ${short.length} conversations short (${short.slice(0, 3).map(s => `${s.id.slice(0, 8)} ${to.summary(s.id)?.size ?? 0}/${s.size}`).join(', ')}), ${unread} peer feeds never read`, { cause: err })
  }
}

const chain = (parent: string, n: number, text: string): EntryDraft[] =>
  Array.from({ length: n }, (_, i) => ({ kind: 'user' as const, body: { text: `${text} ${i}` }, parents: [i === 0 ? parent : `$${i - 1}`] }))

describe('sync with aggressive idle closing', () => {
  it('a fresh device receives every entry of 500 conversations', async () => {
    const CONVERSATIONS = 500
    const PER = 20 // entries after each root
    const { net, d: [a, b] } = await devices(['a', 'b']) as { net: InProcessNetwork; d: [Device, Device] }
    for (let i = 0; i < CONVERSATIONS; i++) {
      const root = await a.history.createConversation({ title: `c${i}` })
      await a.history.append(root.id, chain(root.id, PER, `c${i}`))
    }
    expect(held(a.history)).toBe(CONVERSATIONS * (PER + 1))
    // a's feeds were closed as idle while it wrote; b asks for all of them at once
    await net.connect('a', 'b')
    await holdsAll(b.history, a.history, 'b to hold every entry of a', 60_000)
    expect(b.history.list().every(s => s.waiting === 0)).toBe(true)
  }, 120_000)

  it('with the a–c link cut, a\'s growth reaches c through b, live', async () => {
    const CONVERSATIONS = 6
    const ROUNDS = 30
    const { net, d: [a, b, c] } = await devices(['a', 'b', 'c']) as { net: InProcessNetwork; d: [Device, Device, Device] }
    await net.healAll()
    const heads = new Map<string, string>()
    for (let i = 0; i < CONVERSATIONS; i++) {
      const root = await a.history.createConversation({ title: `live ${i}` })
      heads.set(root.id, root.id)
    }
    await holdsAll(c.history, a.history, 'c to hold every root while linked to a', 10_000)
    net.cut('a', 'c')
    // a keeps writing, with pauses longer than the idle time, so feeds are closed and reopened
    // on every device between writes; c must keep up through b alone.
    for (let round = 0; round < ROUNDS; round++) {
      for (const [conv, head] of heads) {
        const [e] = await a.history.append(conv, chain(head, 1, `round ${round}`))
        heads.set(conv, (e as Entry).id)
      }
      await holdsAll(c.history, a.history, `c to receive round ${round} through b`, 10_000)
      expect(held(b.history)).toBe(held(a.history))
      await new Promise(resolve => setTimeout(resolve, 3 * IDLE_CLOSE_MS))
    }
    expect(net.isConnected('a', 'c')).toBe(false)
    expect(held(c.history)).toBe(CONVERSATIONS * (ROUNDS + 1))
  }, 120_000)

  it('a feed that arrives from two peers at once keeps arriving from either when one link is cut', async () => {
    // c receives a's feeds from a and from b at the same time; then the a–c link is cut in
    // the middle of a's growth and c must keep up through b. Found by the placement test: one
    // of c's two replication channels could be left believing c was behind where it was, and
    // neither side ever asked the other for the rest (hypercore's sync after an upgrade).
    const CONVERSATIONS = 4
    const CYCLES = 12
    const { net, d: [a, , c] } = await devices(['a', 'b', 'c']) as { net: InProcessNetwork; d: [Device, Device, Device] }
    await net.healAll()
    const heads = new Map<string, string>()
    for (let i = 0; i < CONVERSATIONS; i++) heads.set((await a.history.createConversation({ title: `two ways ${i}` })).id, '')
    for (const conv of heads.keys()) heads.set(conv, conv)
    const grow = async (what: string): Promise<void> => {
      for (const [conv, head] of heads) {
        const [e] = await a.history.append(conv, chain(head, 1, what))
        heads.set(conv, (e as Entry).id)
      }
    }
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      // linked three ways: a's growth reaches c from a and b at once
      for (let round = 0; round < 3; round++) await grow(`cycle ${cycle} both ${round}`)
      net.cut('a', 'c')
      for (let round = 0; round < 3; round++) await grow(`cycle ${cycle} via b ${round}`)
      await holdsAll(c.history, a.history, `c to receive cycle ${cycle} through b`, 10_000)
      await net.heal('a', 'c')
    }
    expect(held(c.history)).toBe(CONVERSATIONS * (1 + CYCLES * 6))
  }, 180_000)
})
