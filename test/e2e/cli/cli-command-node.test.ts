// With no node running, a CLI command is a client of an ArborNode opened for it alone, without
// the network (issue 14, "One API"). That node is a real one (its placement reads what the last
// node left in runtime/agents.json), so it must not act for the device's own node: an agent a
// crash cut short is continued by the next `arbor serve` (or the desktop app), never by `arbor
// show` — and the record of it must survive the command, or no node ever continues it.
import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { ArborNode } from '../../../src/main/node'
import { ServedNode } from '../../../src/main/api/served-node'
import { memoryLogger } from '../../../src/shared/logger'
import { capturedCli, type CliRun } from '../../helpers/captured-cli'
import type { Entry } from '../../../src/shared/entry/entry'
import { perTest } from '../../helpers/per-test'

const { dirs, defer } = perTest('arbor-cli-command-node-')

const arbor = (dir: string, ...args: string[]): Promise<CliRun> => capturedCli(args, { ARBOR_DATA: dir, HOME: dir }, dir)

const stateFile = (dir: string): string => path.join(dir, 'runtime', 'agents.json')

/** A conversation with a message its agent never answered, and the state file of a node killed while that agent ran. */
async function cutShort (dir: string): Promise<string> {
  const served = new ServedNode(new ArborNode({ dataDir: dir, swarm: false, log: memoryLogger(), env: { HOME: dir } }), { socket: false })
  await served.ready()
  const { node } = served
  const { id } = await served.api.request('conversation.create', { title: 'cut short' })
  // a message, and the start of the turn answering it: what the history holds when the node dies mid-turn
  const [user] = await node.history.append(id, [{ kind: 'user', body: { text: 'answer me' }, parents: [id] }])
  await node.history.append(id, [{ kind: 'agent.started', body: { epoch: 0, reason: 'user' }, parents: [(user as Entry).id], agent: 'agent#0' }])
  await served.close()
  fs.mkdirSync(path.dirname(stateFile(dir)), { recursive: true })
  fs.writeFileSync(stateFile(dir), JSON.stringify({ running: [id], waiting: {} }))
  fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ provider: 'fake' }))
  return id
}

const started = async (dir: string, id: string): Promise<Entry[]> => {
  const r = await arbor(dir, 'export', id, '--format', 'json')
  expect(r.code, r.err).toBe(0)
  return (JSON.parse(r.out) as { entries: Entry[] }).entries.filter(e => e.kind === 'agent.started')
}

describe('a command run while no node runs', () => {
  it('continues no agent a crash cut short, and leaves it recorded for the device\'s node', async () => {
    const dir = await dirs.make()
    const id = await cutShort(dir)
    for (const argv of [['show', id], ['status', id], ['tree', id], ['ls']]) {
      const r = await arbor(dir, ...argv)
      expect(r.code, `${argv.join(' ')}: ${r.err}`).toBe(0)
    }
    expect(await started(dir, id)).toHaveLength(1) // the turn the crash cut short, not continued
    expect(JSON.parse(fs.readFileSync(stateFile(dir), 'utf8'))).toMatchObject({ running: [id] })

    // a chat in another conversation runs its own agent there, and the cut-short one stays recorded
    const chat = await arbor(dir, 'chat', '--new', 'hello', '--no-sandbox')
    expect(chat.code, chat.err).toBe(0)
    expect(chat.out).toMatch(/^conversation [0-9a-f]{64}\n/)
    expect(await started(dir, id)).toHaveLength(1)
    expect(JSON.parse(fs.readFileSync(stateFile(dir), 'utf8'))).toMatchObject({ running: [id] })

    // the device's own node continues it
    const node = new ArborNode({ dataDir: dir, swarm: false, log: memoryLogger(), env: { HOME: dir } })
    await node.ready()
    defer(() => node.close())
    const deadline = Date.now() + 15_000
    while (![...(await node.history.open(id)).entries()].some(e => e.kind === 'agent.stopped') && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 50))
    const restarts = [...(await node.history.open(id)).entries()].filter(e => e.kind === 'agent.started' && e.body.reason === 'restart')
    expect(restarts.map(e => e.author.device)).toEqual([node.device])
  }, 60_000)
})

describe('arbor chat --cwd on a conversation that exists', () => {
  it('moves where this device\'s agent works from then on, and a peer\'s setting of it counts for nothing here', async () => {
    const dir = await dirs.make()
    const first = await dirs.make()
    const second = await dirs.make()
    const script = path.join(dir, 'script.json')
    fs.writeFileSync(script, JSON.stringify({ rules: [{ match: 'where', reply: [{ toolCalls: [{ name: 'bash', args: { command: 'pwd' } }] }, { text: 'in {{lastToolOutput}}' }] }], default: { text: 'ok' } }))
    const made = await arbor(dir, 'chat', '--new', 'where are you?', '--provider', 'fake', '--script', script, '--no-sandbox', '--cwd', first)
    expect(made.code, made.err).toBe(0)
    const id = (/^conversation ([0-9a-f]{64})/.exec(made.out) as RegExpExecArray)[1] as string
    expect(made.out).toContain(`  ${first}\n`) // bash's pwd, as the tool card prints it
    const moved = await arbor(dir, 'chat', id, 'where now?', '--cwd', second)
    expect(moved.code, moved.err).toBe(0)
    expect(moved.out).toContain(`  ${second}\n`)
    const kept = await arbor(dir, 'chat', id, 'and where now?')
    expect(kept.out).toContain(`  ${second}\n`) // kept, not for one turn only

    // a `cwd` setting another device wrote into the conversation is not where this device works
    const node = new ArborNode({ dataDir: dir, swarm: false, log: memoryLogger(), env: { HOME: dir } })
    await node.ready()
    const dag = await node.history.open(id)
    const peer = 'e'.repeat(64)
    expect(dag.cwdOf(peer)).toBeUndefined()
    expect(dag.cwdOf(node.device)).toBe(second)
    await node.close()
  }, 60_000)
})
