// Reconnecting with what changed (FeedsSince, docs/ARCHITECTURE.md "Reconnecting") gives each
// side exactly what the full exchange would: two real devices (HistoryStore + SyncNode on a
// MemoryLink) under random feed creation and growth on both sides, live and while apart,
// random reconnects, and restarts that keep or lose the saved peer state. After every
// reconnect each side's picture of the other (remoteFeeds) must equal the other's whole list
// (localFeeds: what a full exchange sends), feed for feed and length for length; and every
// list a device keeps, restored from its save or kept up to date, has the digest of what it holds.
//
// ARBOR_LONG=1 runs 40 cases instead of 5. A failure prints fast-check's seed and path:
// replay with fc.assert(..., { seed, path }).
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import fs from 'node:fs/promises'
import path from 'node:path'
import crypto from 'hypercore-crypto'
import { HistoryStore } from '../../../src/main/history/history-store'
import { PEER_FEEDS_FILE, SyncNode } from '../../../src/main/sync/sync-node'
import { localFeeds, type SyncSession } from '../../../src/main/sync/wire/sync-session'
import { FeedList } from '../../../src/main/sync/peers/feed-list'
import type { PeerFeeds } from '../../../src/main/sync/peers/peer-feeds'
import { memoryLogger } from '../../../src/shared/logger'
import { MemoryLink } from '../../helpers/in-process-network'
import { TestCluster, type TestDevices } from '../../helpers/test-cluster'
import { tempDirs, until } from '../../helpers/temp-dir'

const LONG = process.env.ARBOR_LONG === '1'
const NUM_RUNS = LONG ? 40 : 12

interface Dev { dir: string; history: HistoryStore; node: SyncNode; cluster: TestCluster }

type Cmd =
  | { t: 'create'; on: 0 | 1 }
  | { t: 'append'; on: 0 | 1; pick: number; n: number }
  | { t: 'toggle' }
  | { t: 'restart'; on: 0 | 1; lose: boolean }

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  fc.record({ t: fc.constant('create' as const), on: fc.constantFrom(0 as const, 1 as const) }),
  fc.record({ t: fc.constant('append' as const), on: fc.constantFrom(0 as const, 1 as const), pick: fc.nat(), n: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ t: fc.constant('toggle' as const) }),
  fc.record({ t: fc.constant('restart' as const), on: fc.constantFrom(0 as const, 1 as const), lose: fc.boolean() })
)

/** The session's picture of the peer, and the peer's whole list, as comparable sorted lines. */
const picture = (s: SyncSession): string[] => [...s.remoteFeeds].map(([k, f]) => `${k} ${f.conversation} ${f.length}`).sort()
const full = (h: HistoryStore): string[] => localFeeds(h).map(f => `${f.key} ${f.conversation} ${f.length}`).sort()

describe('reconnecting with what changed', () => {
  it('leaves each side knowing exactly the other\'s feeds and lengths, as the full exchange would', async () => {
    await fc.assert(fc.asyncProperty(fc.array(cmd, { minLength: 1, maxLength: 10 }), async cmds => {
      const dirs = tempDirs('arbor-reconnect-prop-')
      const secret = crypto.randomBytes(32)
      const trusted: TestDevices = new Map()
      const start = async (dir: string): Promise<Dev> => {
        const history = new HistoryStore({ dir, log: memoryLogger(), idleCloseMs: 200 })
        await history.ready()
        const cluster = new TestCluster(secret, trusted)
        cluster.add(history.device)
        const node = new SyncNode({ history, cluster, swarm: false, log: memoryLogger(), heartbeatMs: 200, suspectAfterMs: 5000 })
        await node.ready()
        return { dir, history, node, cluster }
      }
      const stop = async (d: Dev): Promise<void> => { await d.node.close(); await d.history.close() }
      const devs: Dev[] = [await start(await dirs.make()), await start(await dirs.make())]
      let link: MemoryLink | null = null
      let sessions: [SyncSession, SyncSession] | null = null
      const connect = async (): Promise<void> => {
        const [a, b] = devs as [Dev, Dev]
        link = new MemoryLink(a.history.keyPair, b.history.keyPair)
        expect(await link.opened()).toBe(true)
        const sa = a.node.attach(link.a)
        const sb = b.node.attach(link.b)
        if (sa === null || sb === null) throw new Error('a node refused the connection')
        sessions = [sa, sb]
        await exact()
      }
      /** Every list's digest is the digest of what it holds (restored from a save or kept up to date), on both devices. */
      const digestsTrue = (): void => {
        for (const d of devs) {
          const lists = [(d.node as unknown as { mine: FeedList }).mine, ...[...(d.node as unknown as { peerFeeds: Map<string, PeerFeeds> }).peerFeeds.values()].map(p => p.heard)]
          for (const l of lists) {
            const again = new FeedList()
            for (const [k, f] of l.feeds) again.set(k, f)
            expect(l.digest).toBe(again.digest)
          }
        }
      }
      /** Each side's picture of the other is the other's whole list (entries replicate meanwhile). */
      const exact = async (): Promise<void> => {
        digestsTrue()
        const [a, b] = devs as [Dev, Dev]
        const [sa, sb] = sessions as [SyncSession, SyncSession]
        try {
          await until(() => sa.opened && sb.opened && picture(sa).join() === full(b.history).join() && picture(sb).join() === full(a.history).join(), 'each side to know the other\'s list', 15_000)
        } catch (err) {
          expect({ aKnowsB: picture(sa), bHolds: full(b.history), bKnowsA: picture(sb), aHolds: full(a.history) }).toEqual({ aKnowsB: full(b.history), bHolds: full(b.history), bKnowsA: full(a.history), aHolds: full(a.history) })
          throw err
        }
      }
      const cut = async (): Promise<void> => {
        if (link === null) return
        await link.cut()
        link = null
        sessions = null
      }
      try {
        for (const c of cmds) {
          const d = devs[c.t === 'toggle' ? 0 : c.on] as Dev
          if (c.t === 'create') {
            await d.history.createConversation({ title: 'c' })
          } else if (c.t === 'append') {
            // into any conversation this device holds (its own feed there, new or grown)
            const held = d.history.list().map(s => s.id)
            if (held.length === 0) continue
            const id = held[c.pick % held.length] as string
            await d.history.append(id, Array.from({ length: c.n }, (_, i) => ({ kind: 'note' as const, body: { text: `n${i}` }, parents: [id] })))
          } else if (c.t === 'toggle') {
            if (link === null) await connect()
            else { await exact(); await cut() }
          } else {
            const wasLinked = link !== null
            await cut()
            await stop(d)
            if (c.lose) await fs.rm(path.join(d.dir, PEER_FEEDS_FILE), { force: true })
            devs[c.on] = await start(d.dir)
            digestsTrue()
            if (wasLinked) await connect()
          }
        }
        if (link === null) await connect()
        await exact()
      } finally {
        await cut()
        for (const d of devs) await stop(d)
        await dirs.cleanup()
      }
    }), { numRuns: NUM_RUNS })
  }, LONG ? 1_200_000 : 180_000)
})
