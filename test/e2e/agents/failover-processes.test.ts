// Agents across devices with real processes (DESIGN.md, "Placement", guarantees 2, 4, 5):
// three `arbor serve` nodes on a HyperDHT testnet on loopback, driven by the CLI. The node
// running an auto-revival agent is SIGKILLed in the middle of a bash call; another node
// revives the agent without running the call again; the killed node restarts with its
// network off and continues its own cut-short turn; both sides work; the network comes
// back; the history converges and the lower agent gives way.
import { describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs/promises'
import path from 'node:path'
import type { Entry, EntryOf } from '../../../src/shared/entry/entry'
import { markerRuns, processCluster } from '../../helpers/arbor-processes'
import { until } from '../../helpers/temp-dir'

const haveBwrap = spawnSync('bwrap', ['--version']).status === 0
if (!haveBwrap && process.env.CI !== undefined) throw new Error('bwrap is missing on CI: install bubblewrap')

const NAMES = ['laptop', 'server', 'cloud'] as const
const cluster = processCluster()

const started = (es: Entry[]): Array<EntryOf<'agent.started'>> => es.filter((e): e is EntryOf<'agent.started'> => e.kind === 'agent.started')
const stopped = (es: Entry[]): Array<EntryOf<'agent.stopped'>> => es.filter((e): e is EntryOf<'agent.stopped'> => e.kind === 'agent.stopped')

describe.skipIf(!haveBwrap)('failover between `arbor serve` processes', () => {
  it('SIGKILL mid-tool: revived once elsewhere, the step not re-run; the node restarts offline, both sides work, and after `net on` one agent remains', async () => {
    await cluster.startPaired(NAMES, 60_000)
    const device = cluster.keys
    const nameOf = (key: string): string => cluster.nameOf(key)

    // The model every node runs (each its own setting: a device never takes its model from a
    // peer's entries): "crash" starts a bash call that outlives the node; "offline" one that
    // waits for the test's go.
    const { script, work } = await cluster.fakeModel('arbor-failover-', {
      rules: [
        { match: '^crash', reply: [{ toolCalls: [{ name: 'bash', args: { command: 'echo ran >> crash.txt; sleep 300', timeoutMs: 400_000 } }] }, { text: 'after the crash: {{lastToolOutput}}' }] },
        { match: '^offline', reply: [{ toolCalls: [{ name: 'bash', args: { command: 'echo ran >> offline.txt; while [ ! -e go ]; do sleep 0.1; done' } }] }, { text: 'offline work done' }] }
      ],
      default: { text: 'You said: {{lastUser}}' }
    })
    const lines = (file: string): Promise<number> => markerRuns(path.join(work, file))

    const conv = (await cluster.ok('laptop', 'new', '--title', 'failover', '--auto-revival', '--cwd', work)).trim()
    const entries = (n: string): Promise<Entry[]> => cluster.entries(n, conv)
    const crashChat = cluster.spawnArbor('laptop', 'chat', conv, 'crash now', '--provider', 'fake', '--script', script)
    await until(async () => (await entries('server')).some(e => e.kind === 'tool.intent') && (await entries('cloud')).some(e => e.kind === 'tool.intent'), 'server and cloud to hold the bash call\'s intent', 60_000, 200)
    expect(await lines('crash.txt')).toBe(1)
    const intent = (await entries('server')).find((e): e is EntryOf<'tool.intent'> => e.kind === 'tool.intent') as EntryOf<'tool.intent'>
    expect(intent.author.device).toBe(device.get('laptop'))

    // --- the laptop dies in the middle of the call
    const killedAt = Date.now()
    await cluster.kill('laptop', 'SIGKILL')
    const revivals = async (): Promise<Array<EntryOf<'agent.started'>>> => [...(await entries('server')), ...(await entries('cloud'))].filter((e): e is EntryOf<'agent.started'> => e.kind === 'agent.started' && e.body.reason === 'revival')
    await until(async () => (await revivals()).length > 0, 'server or cloud to revive the agent', 30_000, 200)
    const revival = (await revivals())[0] as EntryOf<'agent.started'>
    const reviver = nameOf(revival.author.device)
    const other = reviver === 'server' ? 'cloud' : 'server'
    console.log(`revived on ${reviver} ${revival.ts - killedAt} ms after the SIGKILL`)
    expect(['server', 'cloud']).toContain(reviver)
    expect(revival.body).toEqual({ epoch: 1, reason: 'revival', previous: { device: device.get('laptop'), epoch: 0 } })
    // the revived agent finishes the turn: the bash step's outcome is unknown, it is not run again
    const turnOver = async (n: string): Promise<boolean> => stopped(await entries(n)).some(e => e.author.device === revival.author.device && e.body.epoch === 1 && e.body.reason === 'done')
    await until(async () => (await turnOver('server')) && (await turnOver('cloud')), 'the revived turn to end, on both', 30_000, 200)
    const afterRevival = await entries(reviver)
    const note = afterRevival.find(e => e.kind === 'note' && e.author.device === revival.author.device) as EntryOf<'note'> | undefined
    expect(note?.body.text).toContain(`revived on ${reviver} because laptop`)
    const unknown = afterRevival.filter(e => e.kind === 'tool.result' && e.body.callId === intent.body.callId)
    expect(unknown.map(e => [nameOf(e.author.device), (e as EntryOf<'tool.result'>).body.status])).toEqual([[reviver, 'unknown']])
    expect(afterRevival.filter(e => e.kind === 'tool.intent')).toHaveLength(1)
    expect(await lines('crash.txt')).toBe(1)
    const status = await cluster.ok(other, 'status', conv)
    expect(status).toContain(`agent: ${reviver} (epoch 1)`)
    expect(status).toMatch(new RegExp(`revived on ${reviver} from laptop \\(epoch 0\\), epoch 1`))
    expect(crashChat.proc.exitCode ?? crashChat.proc.signalCode).not.toBeNull() // the chat's node is gone
    expect(crashChat.output()).toContain('⏵ bash echo ran >> crash.txt')

    // --- the laptop comes back with its network off: it continues its own turn, the kill cut short
    const laptop = await cluster.serve('laptop', ['--offline'])
    const restartLog = laptop.log.length
    const laptopTurns = async (): Promise<Entry[]> => (await entries('laptop')).filter(e => e.author.device === device.get('laptop'))
    await until(async () => stopped(await laptopTurns()).some(e => e.body.epoch === 0 && e.body.reason === 'done'), 'the laptop to finish its cut-short turn', 30_000, 200)
    const restarted = started(await laptopTurns()).filter(e => e.body.reason === 'restart')
    expect(restarted.map(e => e.body.epoch)).toEqual([0])
    const onLaptop = await entries('laptop')
    expect(onLaptop.filter(e => e.kind === 'tool.result' && e.body.callId === intent.body.callId).map(e => (e as EntryOf<'tool.result'>).body.status)).toEqual(['unknown'])
    expect(onLaptop.some(e => e.author.device !== device.get('laptop'))).toBe(false) // it heard nothing of the revival
    expect(await lines('crash.txt')).toBe(1)

    // --- both sides work: the laptop runs a step offline; a message posted on the other side goes to the reviver
    const offlineChat = cluster.spawnArbor('laptop', 'chat', conv, 'offline work')
    await until(async () => (await laptopTurns()).filter(e => e.kind === 'tool.intent').length === 2, 'the laptop\'s offline step to start', 30_000, 200)
    const posted = await cluster.arbor(other, 'chat', conv, 'hello from the online side')
    expect(posted.err).toContain(`runs on ${reviver}`)
    const answered = async (n: string): Promise<boolean> => (await entries(n)).some(e => e.kind === 'assistant' && e.body.text === 'You said: hello from the online side' && e.author.device === revival.author.device)
    await until(async () => (await answered('server')) && (await answered('cloud')), `${reviver} to answer the message posted on ${other}`, 30_000, 200)
    expect(laptop.log.slice(restartLog)).not.toMatch(/ connected\n/) // offline means offline

    // --- the network comes back: the laptop learns of the higher agent and gives way at its next step boundary
    await cluster.ok('laptop', 'net', 'on')
    await until(async () => started(await entries('laptop')).some(e => e.body.reason === 'revival'), 'the laptop to hold the revival', 30_000, 200)
    await fs.writeFile(path.join(work, 'go'), '')
    const gaveWay = async (n: string): Promise<boolean> => stopped(await entries(n)).some(e => e.body.reason === 'superseded')
    await until(async () => (await gaveWay('laptop')) && (await gaveWay(reviver)) && (await gaveWay(other)), 'the laptop\'s agent to give way, known everywhere', 30_000, 200)
    await new Promise(resolve => setTimeout(resolve, 300))
    offlineChat.proc.kill()

    // the history converges: the same entries on all three
    let all: Entry[][] = []
    await until(async () => {
      all = await Promise.all(NAMES.map(n => entries(n)))
      const ids = all.map(es => es.map(e => e.id).sort().join())
      return ids.every(x => x === ids[0])
    }, 'the same history on all three', 30_000, 250)
    const history = all[0] as Entry[]
    const superseded = stopped(history).filter(e => e.body.reason === 'superseded')
    expect(superseded.map(e => [nameOf(e.author.device), e.body.epoch, e.body.by])).toEqual([['laptop', 0, { device: revival.author.device, epoch: 1 }]])
    expect(started(history).filter(e => e.body.reason === 'revival')).toHaveLength(1)
    // every bash step ran once: the crashed one never again, the offline one to its end
    expect(history.filter(e => e.kind === 'tool.intent')).toHaveLength(2)
    expect(history.filter(e => e.kind === 'tool.result' && e.body.callId === intent.body.callId).map(e => (e as EntryOf<'tool.result'>).body.status)).toEqual(['unknown', 'unknown'])
    expect(await lines('crash.txt')).toBe(1)
    expect(await lines('offline.txt')).toBe(1)
    // one agent remains, the same everywhere, and none is left running
    for (const n of NAMES) {
      const s = await cluster.ok(n, 'status', conv)
      expect(s, n).toContain(`agent: ${n === reviver ? 'this device' : reviver} (epoch 1)`)
      expect(s, n).not.toMatch(/working now|also running/)
      expect(s, n).toContain('laptop (epoch 0) gave way')
    }
  }, 180_000)
})
