import { describe, expect, it } from 'vitest'
import { memoryLogger } from '../../../src/shared/logger'
import { NodeHost, type NodeHostOptions } from '../../../src/main/electron/node-host'
import { ManualClock } from '../../../src/shared/clock'
import type { SecretName, SecretStore } from '../../../src/main/secrets/secret-store'
import { FakeUtility } from '../../helpers/fake-utility'

// Electron main's supervision of the node (src/main/electron/node-host.ts), with Electron's
// UtilityProcess and MessageChannelMain substituted and time moved by hand.

class MemorySecrets implements SecretStore {
  readonly description = 'encrypted by the test keychain'
  readonly values = new Map<SecretName, string>()
  refuse: string | undefined
  async get (name: SecretName): Promise<string | undefined> { return this.values.get(name) }
  async set (name: SecretName, value: string | undefined): Promise<void> {
    if (this.refuse !== undefined) throw new Error(this.refuse)
    if (value === undefined) this.values.delete(name)
    else this.values.set(name, value)
  }
}

function harness (opts: Partial<NodeHostOptions<string>> = {}) {
  const clock = new ManualClock(1_000_000)
  const nodes: FakeUtility[] = []
  const log = memoryLogger()
  const secrets = new MemorySecrets()
  const forceKilled: number[] = []
  let channels = 0
  const host = new NodeHost<string>({
    fork: () => { const n = new FakeUtility(); nodes.push(n); return n },
    channel: () => { channels++; return { port1: `node-end-${channels}`, port2: `window-end-${channels}` } },
    dataDir: '/data/arbor',
    secrets,
    log,
    clock,
    random: () => 0,
    forceKill: pid => { forceKilled.push(pid) },
    ...opts
  })
  const events: Array<{ type: string; message?: string; restartInMs?: number }> = []
  host.on('up', () => { events.push({ type: 'up' }) })
  host.on('down', e => { events.push({ type: 'down', ...e }) })
  host.on('failed', e => { events.push({ type: 'failed', ...e }) })
  const last = (): FakeUtility => nodes.at(-1) as FakeUtility
  return { host, clock, nodes, log, secrets, events, forceKilled, last }
}

describe('Electron main supervises the node (NodeHost)', () => {
  it('forks the node with the data directory and the decrypted secrets, and opens API channels once it is up', async () => {
    const h = harness()
    h.secrets.values.set('apiKey', 'sk-decrypted')
    await h.host.ready()
    expect(h.nodes).toHaveLength(1)
    expect(h.last().posted[0]?.msg).toEqual({ type: 'start', dataDir: '/data/arbor', secrets: { apiKey: 'sk-decrypted' }, secretsDescription: 'encrypted by the test keychain' })
    expect(h.host.state).toBe('starting')
    expect(h.host.connect()).toBeNull() // not open yet: windows wait

    h.last().say({ type: 'ready', device: 'ab'.repeat(32) })
    expect(h.events).toEqual([{ type: 'up' }])
    expect(h.host.state).toBe('up')
    expect(h.host.connect()).toBe('window-end-1')
    expect(h.last().posted.at(-1)).toEqual({ msg: { type: 'connect' }, transfer: ['node-end-1'] })

    // the node's output goes to main's log
    h.last().stderr.write('arbor sync warning: something\n')
    await h.clock.advance(0)
    expect(h.log.lines).toContainEqual({ level: 'warn', message: 'arbor sync warning: something' })
    await close(h)
  })

  it('restarts a node that stops, with growing backoff, and gives up past 5 restarts in 60 s with the reason; retry() starts afresh', async () => {
    const h = harness()
    await h.host.ready()
    h.last().say({ type: 'ready', device: 'd1' })
    const delays: number[] = []
    for (let i = 0; i < 5; i++) {
      const crashed = h.last()
      if (i === 0) crashed.say({ type: 'failed', message: 'the disk holding /data/arbor is full' })
      crashed.exit(1)
      await h.clock.advance(0)
      const down = h.events.at(-1) as { type: string; message: string; restartInMs: number }
      expect(down.type).toBe('down')
      expect(down.message).toBe(`the node stopped unexpectedly (${i === 0 ? 'the disk holding /data/arbor is full' : 'exit code 1'}); restarting it`)
      delays.push(down.restartInMs)
      expect(h.host.state).toBe('restarting')
      expect(h.host.connect()).toBeNull()
      await h.clock.advance(down.restartInMs - 1)
      expect(h.nodes).toHaveLength(i + 1) // not a millisecond early
      await h.clock.advance(1)
      expect(h.nodes).toHaveLength(i + 2)
      expect(h.last().types()).toEqual(['start'])
    }
    expect(delays).toEqual([500, 1000, 2000, 4000, 8000])

    h.last().exit(3) // the sixth stop within a minute
    await h.clock.advance(0)
    expect(h.events.at(-1)).toEqual({ type: 'failed', message: 'the node stopped 6 times within 60 s and is not restarted again; the last time: exit code 3' })
    expect(h.host.state).toBe('failed')
    await h.clock.advance(120_000)
    expect(h.nodes).toHaveLength(6) // given up: nothing more is forked

    await h.host.retry()
    expect(h.nodes).toHaveLength(7)
    h.last().say({ type: 'ready', device: 'd1' })
    expect(h.host.state).toBe('up')
    h.last().exit(1)
    await h.clock.advance(0)
    expect(h.events.at(-1)).toMatchObject({ type: 'down', restartInMs: 500 }) // a fresh budget
    await h.clock.advance(500)
    await close(h)
  })

  it('a node that ran for a while starts its backoff over', async () => {
    const h = harness()
    await h.host.ready()
    for (const wait of [0, 0, 60_000]) {
      await h.clock.advance(wait)
      h.last().exit(1)
      await h.clock.advance(0)
      await h.clock.advance((h.events.at(-1) as { restartInMs: number }).restartInMs)
    }
    expect(h.events.map(e => e.restartInMs)).toEqual([500, 1000, 500])
    await close(h)
  })

  it('stores the secrets the node hands over, and tells it when main could not', async () => {
    const h = harness()
    await h.host.ready()
    h.last().say({ type: 'secret-set', id: 1, name: 'apiKey', value: 'sk-new' })
    await h.clock.advance(0)
    expect(h.secrets.values.get('apiKey')).toBe('sk-new')
    expect(h.last().posted.at(-1)?.msg).toEqual({ type: 'secret-saved', id: 1 })
    h.secrets.refuse = 'the keychain is locked'
    h.last().say({ type: 'secret-set', id: 2, name: 'apiKey', value: null })
    await h.clock.advance(0)
    expect(h.last().posted.at(-1)?.msg).toEqual({ type: 'secret-saved', id: 2, error: 'the keychain is locked' })
    expect(h.secrets.values.get('apiKey')).toBe('sk-new')
    h.secrets.refuse = undefined
    h.last().say({ type: 'secret-set', id: 3, name: 'apiKey', value: null })
    await h.clock.advance(0)
    expect(h.secrets.values.has('apiKey')).toBe(false)
    // the next start gets what main holds now
    h.last().exit(1)
    await h.clock.advance(10_000)
    expect(h.last().posted[0]?.msg).toMatchObject({ type: 'start', secrets: {} })
    await close(h)
  })

  it('close() asks the node to shut down and waits for it; no restart follows', async () => {
    const h = harness()
    await h.host.ready()
    h.last().say({ type: 'ready', device: 'd1' })
    let closed = false
    const closing = h.host.close().then(() => { closed = true })
    await h.clock.advance(0)
    expect(h.last().types()).toEqual(['start', 'shutdown'])
    await h.clock.advance(9_000)
    expect(closed).toBe(false) // still waiting for the clean close
    h.last().exit(0)
    await closing
    expect(h.host.state).toBe('stopped')
    expect(h.last().kills).toBe(0)
    await h.clock.advance(60_000)
    expect(h.nodes).toHaveLength(1)
    expect(h.events.filter(e => e.type !== 'up')).toEqual([])
  })

  it('close() kills a node that does not stop within 10 s, and SIGKILLs one that does not even answer SIGTERM', async () => {
    const h = harness()
    await h.host.ready()
    const node = h.last()
    let closed = false
    const closing = h.host.close().then(() => { closed = true })
    await h.clock.advance(9_999)
    expect(node.kills).toBe(0)
    await h.clock.advance(1)
    expect(node.kills).toBe(1)
    expect(h.forceKilled).toEqual([])
    await h.clock.advance(3_000)
    expect(h.forceKilled).toEqual([node.pid])
    expect(closed).toBe(false)
    node.exit(137)
    await closing
    expect(h.nodes).toHaveLength(1)
  })
})

async function close (h: ReturnType<typeof harness>): Promise<void> {
  const closing = h.host.close()
  await h.clock.advance(0)
  for (const n of h.nodes) if (!n.exited) n.exit(0)
  await closing
}
