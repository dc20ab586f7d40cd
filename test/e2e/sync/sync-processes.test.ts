import { describe, expect, it } from 'vitest'
import { processCluster } from '../../helpers/arbor-processes'
import { until } from '../../helpers/temp-dir'

const cluster = processCluster(2000)
const arbor = cluster.arbor.bind(cluster)
const serve = async (name: string): Promise<void> => { await cluster.serve(name, [], 20_000) }

const list = async (name: string): Promise<Array<{ id: string; size: number; title: string }>> => JSON.parse((await arbor(name, 'ls', '--json')).out) as Array<{ id: string; size: number; title: string }>
const sizeOf = async (name: string, conv: string): Promise<number> => (await list(name)).find(c => c.id === conv)?.size ?? 0

describe('three devices in separate processes on a HyperDHT testnet', () => {
  it('pair, sync, partition, write on both sides, heal, converge; an unpaired device is refused', async () => {
    for (const n of ['laptop', 'server', 'cloud', 'stranger']) await serve(n)

    // pairing: two one-time codes from the laptop
    for (const joiner of ['server', 'cloud']) {
      const code = (await arbor('laptop', 'invite')).out.trim()
      expect(code).toMatch(/^[a-z0-9]{40,}$/)
      const t0 = Date.now()
      const joined = (await arbor(joiner, 'join', code))
      expect(joined.code, joined.err + joined.out).toBe(0)
      console.log(`${joiner} paired in ${Date.now() - t0} ms`)
    }
    expect((await arbor('stranger', 'join', 'not-a-code')).err).toMatch(/not an Arbor invite code/)

    // sync: a conversation written on the laptop reaches both
    const conv = (await arbor('laptop', 'new', '--title', 'trip')).out.trim()
    await arbor('laptop', 'post', conv, 'where to?')
    await until(async () => (await sizeOf('server', conv)) === 2 && (await sizeOf('cloud', conv)) === 2, 'server and cloud to hold the conversation', 30_000)
    await until(async () => { const d = (await arbor('laptop', 'devices')).out; return /server\s+online/.test(d) && /cloud\s+online/.test(d) }, 'the laptop to see both online', 60_000)

    // partition: the cloud goes offline; both sides keep writing
    expect((await arbor('cloud', 'net', 'off')).code).toBe(0)
    await until(async () => /cloud\s+(offline|suspected)/.test((await arbor('laptop', 'devices')).out), 'the laptop to notice the cloud left', 20_000)
    await arbor('laptop', 'post', conv, 'the mountains')
    await arbor('cloud', 'post', conv, 'the sea', '--parent', conv.slice(0, 8))
    await until(async () => (await sizeOf('server', conv)) === 3, 'the server to get the laptop\'s message')
    expect((await sizeOf('cloud', conv))).toBe(3) // its own, not the laptop's
    expect((await sizeOf('laptop', conv))).toBe(3)

    // heal: every device holds the union (4 entries), the same tree
    expect((await arbor('cloud', 'net', 'on')).code).toBe(0)
    await until(async () => (await Promise.all(['laptop', 'server', 'cloud'].map(n => sizeOf(n, conv)))).every(n => n === 4), 'the union everywhere', 30_000)
    const trees = await Promise.all(['laptop', 'server', 'cloud'].map(async n => JSON.parse((await arbor(n, 'export', conv, '--format', 'json')).out) as { entries: Array<{ id: string }>; heads: string[] }))
    for (const t of trees.slice(1)) {
      expect(t.entries.map(e => e.id).sort()).toEqual(trees[0]?.entries.map(e => e.id).sort())
      expect([...t.heads].sort()).toEqual([...(trees[0]?.heads ?? [])].sort())
    }

    // any device holding the conversation can use it: the server's agent continues it, the laptop sees it
    const chat = await arbor('server', 'chat', conv, 'summarize please', '--provider', 'fake')
    expect(chat.code, chat.err).toBe(0)
    expect(chat.out).toContain('You said: summarize please')
    await until(async () => (await sizeOf('laptop', conv)) === 9, 'the laptop to see the server\'s turn (meta, user, started, assistant, stopped)', 30_000)
    expect((await arbor('laptop', 'tree', conv)).out).toMatch(/assistant +You said: summarize please @/) // tagged as another device's

    // forgetting a device: it is no longer accepted, and the others learn it too
    expect((await arbor('laptop', 'forget', 'cloud')).out).toMatch(/forgot cloud/)
    await until(async () => !(await arbor('server', 'devices')).out.includes('cloud'), 'the server to learn that cloud was forgotten', 20_000)
    await arbor('cloud', 'post', conv, 'am I still here?', '--parent', conv.slice(0, 8))
    await new Promise(resolve => setTimeout(resolve, 1500))
    expect(await sizeOf('laptop', conv)).toBe(9)
    expect(await sizeOf('server', conv)).toBe(9)

    // the stranger was never paired: it holds nothing and nobody lists it
    expect(await list('stranger')).toEqual([])
    expect((await arbor('laptop', 'devices')).out).not.toContain('stranger')
  }, 240_000)
})
