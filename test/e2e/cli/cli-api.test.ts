// The CLI as a client of the node's typed API: the local socket carries the API's frames
// (requests, results, events) to an authenticated client, and the commands ported to the
// API (invite, forget, net) reach the running node through them.
import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { ArborNode } from '../../../src/main/node'
import { ServedNode } from '../../../src/main/api/served-node'
import { memoryLogger } from '../../../src/shared/logger'
import { capturedCli, type CliRun } from '../../helpers/captured-cli'
import { perTest } from '../../helpers/per-test'

const { dirs, defer } = perTest('arbor-cli-api-')

async function startNode (): Promise<{ node: ArborNode; dir: string }> {
  const dir = await dirs.make()
  const log = memoryLogger()
  // with its local socket, as `arbor serve` runs it
  const served = new ServedNode(new ArborNode({ dataDir: dir, swarm: false, log, env: { HOME: dir } }), { log })
  await served.ready()
  defer(() => served.close())
  return { node: served.node, dir }
}

const arbor = (dir: string, ...args: string[]): Promise<CliRun> => capturedCli(args, { ARBOR_DATA: dir }, dir)

/** Writes `frames` on the socket and collects the lines the node answers until `done` says so (5 s at most). */
function exchange (sock: string, frames: unknown[], done: (lines: Array<Record<string, unknown>>) => boolean): Promise<Array<Record<string, unknown>>> {
  return new Promise(resolve => {
    const conn = net.connect(sock)
    const lines: Array<Record<string, unknown>> = []
    let buf = ''
    const finish = (): void => { clearTimeout(timer); conn.destroy(); resolve(lines) }
    const timer = setTimeout(finish, 5000)
    conn.setEncoding('utf8')
    conn.on('data', (d: string) => {
      buf += d
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        lines.push(JSON.parse(buf.slice(0, i)) as Record<string, unknown>)
        buf = buf.slice(i + 1)
      }
      if (done(lines)) finish()
    })
    conn.on('error', finish)
    for (const f of frames) conn.write(JSON.stringify(f) + '\n')
  })
}

describe('the CLI speaks the node\'s API', () => {
  it('the socket serves API requests and events to a client with the token', async () => {
    const { node, dir } = await startNode()
    const token = fs.readFileSync(path.join(dir, 'arbor.sock.token'), 'utf8').trim()
    const lines = await exchange(path.join(dir, 'arbor.sock'), [
      { token },
      { id: 1, method: 'hello', params: {} },
      { id: 2, method: 'conversation.create', params: { title: 'over the socket' } },
      { id: 3, method: 'no.such.method', params: {} }
    ], ls => ls.some(l => l.id === 3) && ls.some(l => 'event' in l))
    expect(lines.find(l => l.id === 1)).toEqual({ id: 1, result: { device: node.device, name: node.cluster.name, version: expect.any(String) } })
    expect(lines.find(l => l.id === 2)).toEqual({ id: 2, result: { id: expect.stringMatching(/^[0-9a-f]{64}$/) } })
    expect(lines.find(l => l.id === 3)).toMatchObject({ error: { message: expect.stringMatching(/unknown method "no.such.method"/) } })
    // the new conversation's root arrived as an event, as the UI hears it
    expect(lines.some(l => (l.event as { type?: string } | undefined)?.type === 'entries')).toBe(true)
    expect(node.history.list().map(c => c.title)).toEqual(['over the socket'])
  })

  it('the socket runs no CLI code: a caller with the token cannot have the node run an argv with its environment', async () => {
    const { node, dir } = await startNode()
    const token = fs.readFileSync(path.join(dir, 'arbor.sock.token'), 'utf8').trim()
    // what the transitional `cli` method ran inside the node: any command, with the caller's cwd and environment
    const argv = ['chat', '--new', 'hi', '--provider', 'fake', '--no-sandbox']
    const lines = await exchange(path.join(dir, 'arbor.sock'), [
      { token },
      { id: 1, method: 'cli', params: { argv, cwd: dir, env: { ARBOR_DATA: dir, OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' } } },
      { id: 2, method: 'cancel' }
    ], ls => ls.some(l => l.id === 1) && ls.some(l => l.id === 2))
    expect(lines.find(l => l.id === 1)).toMatchObject({ error: { message: expect.stringMatching(/^unknown method "cli"/) } })
    expect(lines.find(l => l.id === 2)).toMatchObject({ error: { message: expect.stringMatching(/^unknown method "cancel"/) } })
    expect(node.history.list()).toEqual([])
  })

  it('net, forget and invite reach the running node through the API, in the words they always had', async () => {
    const { node, dir } = await startNode()
    expect(await arbor(dir, 'net', 'off')).toEqual({ code: 0, out: 'network off: this device works alone until `arbor net on`\n', err: '' })
    expect(node.sync.isOnline).toBe(false)
    expect((await arbor(dir, 'net', 'on')).code).toBe(0)
    expect(node.sync.isOnline).toBe(true)
    expect(await arbor(dir, 'forget', 'nobody')).toEqual({ code: 1, out: '', err: 'arbor forget: no paired device matches "nobody"; `arbor devices` lists them\n' })
    node.cluster.trust('c'.repeat(64), 'phone')
    const forgot = await arbor(dir, 'forget', 'phone')
    expect(forgot.code).toBe(0)
    expect(forgot.out).toMatch(/phone/)
    expect(node.cluster.isTrusted('c'.repeat(64))).toBe(false)
    const inv = await arbor(dir, 'invite')
    expect(inv.code).toBe(0)
    expect(inv.out.trim()).toMatch(/^[a-z0-9]{40,}$/)
    expect(node.cluster.invites().filter(i => i.usedBy === undefined)).toHaveLength(1) // made by the running node
  })

  it('a client whose token is not the node\'s hears why, and nothing runs', async () => {
    const { node, dir } = await startNode()
    fs.writeFileSync(path.join(dir, 'arbor.sock.token'), 'f'.repeat(64) + '\n', { mode: 0o600 })
    const r = await arbor(dir, 'net', 'off')
    expect(r.code).toBe(1)
    expect(r.err).toMatch(/^arbor: the running node failed: this is not your Arbor node's token: /)
    expect(node.sync.isOnline).toBe(true)
  })
})
