// A reconnect soon after a sync (issue 12, "reconnect with nothing changed"): Hypercore keeps a
// core "downloading" for 20–40 s after its last active session, and Corestore attaches every
// downloading core to each new connection, so a reconnect shortly after a sync opened a channel
// for every feed touched (at 1,000 feeds 200 KB and ten times the time of 100). The feed pool
// decides how long a feed stays open and for whom; an idle feed is attached to no new
// connection, and what changes later still reaches the peer over it.
import { describe, expect, it } from 'vitest'
import type Hypercore from 'hypercore'
import { HistoryStore } from '../../../src/main/history/history-store'
import type { EntryDraft } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { MemoryLink } from '../../helpers/in-process-network'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'

const { dirs, defer } = perTest('arbor-reconnect-idle-')
const CONVERSATIONS = 6
const ENTRIES = 10

interface HeldCore { key: Buffer | null; replicator: { attached: (muxer: unknown) => boolean } }
const heldCores = (h: HistoryStore): HeldCore[] => [...(h.corestore.cores as unknown as Iterable<HeldCore>)]
const pooled = (h: HistoryStore, key: string): boolean => (h as unknown as { cores: Map<string, Hypercore.Core> }).cores.has(key)
const chain = (parent: string, n: number, from = 0): EntryDraft[] =>
  Array.from({ length: n }, (_, i) => ({ kind: 'user' as const, body: { text: `entry ${from + i}` }, parents: [i === 0 ? parent : `$${i - 1}`] }))

async function store (): Promise<HistoryStore> {
  const h = new HistoryStore({ dir: await dirs.make(), log: memoryLogger(), idleCloseMs: 50 })
  await h.ready()
  defer(() => h.close())
  return h
}

function connect (a: HistoryStore, b: HistoryStore): MemoryLink {
  const link = new MemoryLink(a.keyPair, b.keyPair)
  defer(() => link.destroy())
  a.replicate(link.a)
  b.replicate(link.b)
  return link
}

describe('a reconnect soon after a sync', () => {
  it('the feeds close as idle, no idle feed is attached to the new connection, and later entries still arrive over it', async () => {
    const a = await store()
    const b = await store()
    const first = connect(a, b)
    expect(await first.opened()).toBe(true)
    const convs: Array<{ id: string; key: string; last: string }> = []
    for (let i = 0; i < CONVERSATIONS; i++) {
      const root = await a.createConversation({ title: `c${i}` })
      const written = await a.append(root.id, chain(root.id, ENTRIES))
      const key = a.feeds(root.id)[0]?.key as string
      convs.push({ id: root.id, key, last: written.at(-1)?.id as string })
      await b.addFeed(root.id, key)
    }
    await until(() => convs.every(c => b.summary(c.id)?.size === ENTRIES + 1), 'b to hold every entry', 20_000)
    // closed as idle on both sides soon after (before, each side's lingering "downloading" made
    // the other keep its feeds open for 20–40 s, and attach them to every new connection)
    await until(() => convs.every(c => !pooled(a, c.key) && !pooled(b, c.key)), 'both pools to close the feeds as idle', 5_000)

    first.destroy()
    const second = connect(a, b)
    expect(await second.opened()).toBe(true)
    await new Promise(resolve => setTimeout(resolve, 300))
    const keys = new Set(convs.map(c => c.key))
    for (const [h, side] of [[a, second.a], [b, second.b]] as const) {
      const attached = heldCores(h).filter(c => c.key !== null && keys.has(c.key.toString('hex')) && c.replicator.attached(side.userData))
      expect(attached.length, `${h === a ? 'a' : 'b'}: idle feeds attached to the new connection`).toBe(0)
    }

    // what changes afterwards reaches b over the new connection
    const c0 = convs[0] as { id: string; key: string; last: string }
    await a.append(c0.id, chain(c0.last, 3, ENTRIES))
    await b.updateFeed(c0.id, c0.key, a.availableLength(c0.key))
    await until(() => b.summary(c0.id)?.size === ENTRIES + 4, 'b to receive the later entries', 20_000)

    // A core Corestore opened for a peer's channel (the first open decides a core's options):
    // a's feed let go by Corestore, b asks for more of it, a writes to it, both idle, a reconnect.
    const c1 = convs[1] as { id: string; key: string; last: string }
    const held = (h: HistoryStore, key: string): HeldCore | undefined => heldCores(h).find(c => c.key?.toString('hex') === key)
    await until(() => held(a, c1.key) === undefined, 'Corestore to let go of a\'s idle feed', 20_000)
    second.freeze('a', 'out', true) // b's channel open reaches a, a's answer waits: Corestore opened the core for it
    // the length a's feed will have after one more entry: b opens the feed's channel to wait for it
    await b.updateFeed(c1.id, c1.key, a.availableLength(c1.key) + 1)
    await until(() => held(a, c1.key) !== undefined, 'a\'s Corestore to open the feed for b\'s channel', 5_000)
    second.freeze('a', 'out', false)
    await a.append(c1.id, chain(c1.last, 1, ENTRIES))
    await until(() => b.summary(c1.id)?.size === ENTRIES + 2, 'b to receive it', 20_000)
    await until(() => !pooled(a, c1.key) && !pooled(b, c1.key), 'both pools to close it as idle', 5_000)
    second.destroy()
    const third = connect(a, b)
    expect(await third.opened()).toBe(true)
    await new Promise(resolve => setTimeout(resolve, 300))
    const core = held(a, c1.key)
    expect(core, 'Corestore still holds the idle core (the check would prove nothing otherwise)').toBeDefined()
    expect(core?.replicator.attached(third.a.userData), 'a\'s feed opened for a peer, written, idle: attached to a new connection').toBe(false)
  }, 90_000)
})
