// A slow device is not a dead one (issue 13; DESIGN.md "Placement", guarantees 4 and 5):
// three `arbor serve` nodes on a HyperDHT testnet on loopback. The node running an
// auto-revival agent is frozen with SIGSTOP and woken with SIGCONT: (b) in the middle of a
// bash call for less than the detection window, nothing happens and the turn ends there; (a)
// for longer, a peer revives the agent, and the woken node gives way before it takes another
// step (its result is not written, the next step is not run twice); (c) the node stops itself
// (ARBOR_TEST_SIGSTOP) as the bash call starts, just after its intent was written: the step
// started only once a peer held the intent, so the reviver records it unknown instead of
// running it again.
import { beforeAll, describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs/promises'
import path from 'node:path'
import type { Entry, EntryOf } from '../../../src/shared/entry/entry'
import { markerRuns, processCluster } from '../../helpers/arbor-processes'
import { until } from '../../helpers/temp-dir'

const haveBwrap = spawnSync('bwrap', ['--version']).status === 0
if (!haveBwrap && process.env.CI !== undefined) throw new Error('bwrap is missing on CI: install bubblewrap')

process.env.ARBOR_TEST_SIGSTOP = '1' // (c): a node stops itself at the step boundary its data directory names
const NAMES = ['laptop', 'server', 'cloud'] as const
const cluster = processCluster()
const device = cluster.keys
let work = ''

const started = (es: Entry[]): Array<EntryOf<'agent.started'>> => es.filter((e): e is EntryOf<'agent.started'> => e.kind === 'agent.started')
const stopped = (es: Entry[]): Array<EntryOf<'agent.stopped'>> => es.filter((e): e is EntryOf<'agent.stopped'> => e.kind === 'agent.stopped')
const sleep = async (ms: number): Promise<void> => { await new Promise(resolve => setTimeout(resolve, ms)) }
const lines = (file: string): Promise<number> => markerRuns(path.join(work, file))
/** A revived agent works in its own device's workspace (the laptop's directory is not there): runs counted everywhere. */
const runsEverywhere = async (file: string): Promise<number> => {
  let n = await lines(file)
  for (const dev of cluster.devices.values()) {
    for (const f of await fs.readdir(dev.workspaces, { recursive: true })) {
      if (path.basename(f) === file) n += await markerRuns(path.join(dev.workspaces, f))
    }
  }
  return n
}
const entries = (n: string, conv: string): Promise<Entry[]> => cluster.entries(n, conv)
const nameOf = (key: string): string => cluster.nameOf(key)

beforeAll(async () => {
  await cluster.startPaired(NAMES, 30_000)
  // Each call appends to a marker file: its line count is how often the step ran.
  ;({ work } = await cluster.fakeModel('arbor-pause-', {
    rules: [
      { match: '^short', reply: [{ toolCalls: [{ name: 'bash', args: { command: 'echo ran >> short.txt; sleep 2' } }] }, { text: 'short done' }] },
      { match: '^intent', reply: [{ toolCalls: [{ name: 'bash', args: { command: 'echo ran >> first.txt; sleep 1' } }] }, { toolCalls: [{ name: 'bash', args: { command: 'echo ran >> intent.txt' } }] }, { text: 'intent done' }] },
      { match: '^long', reply: [{ toolCalls: [{ name: 'bash', args: { command: 'echo ran >> long.txt; sleep 2' } }] }, { toolCalls: [{ name: 'bash', args: { command: 'echo ran >> next.txt' } }] }, { text: 'long done' }] }
    ],
    default: { text: 'You said: {{lastUser}}' }
  }))
}, 60_000)

/**
 * Posts on the laptop, waits until its bash call runs (the marker file: cheap to poll, so the
 * pause that follows comes early in the call even on a loaded machine) and freezes it.
 */
async function startAndPause (title: string, message: string, marker: string): Promise<string> {
  const conv = (await cluster.ok('laptop', 'new', '--title', title, '--auto-revival', '--cwd', work)).trim()
  cluster.spawnArbor('laptop', 'chat', conv, message)
  await until(async () => (await lines(marker)) === 1, 'the call to run', 30_000, 10)
  cluster.pause('laptop', true)
  return conv
}

/** The call started only once a peer held its intent: server and cloud have it with the laptop frozen (from each other). */
async function heldIntent (conv: string): Promise<EntryOf<'tool.intent'>> {
  const intentOn = async (n: string): Promise<EntryOf<'tool.intent'> | undefined> => (await entries(n, conv)).find((e): e is EntryOf<'tool.intent'> => e.kind === 'tool.intent')
  await until(async () => (await intentOn('server')) !== undefined && (await intentOn('cloud')) !== undefined, 'server and cloud to hold the intent', 10_000, 100)
  const intent = await intentOn('server') as EntryOf<'tool.intent'>
  expect(intent.author.device).toBe(device.get('laptop'))
  return intent
}

describe.skipIf(!haveBwrap)('SIGSTOP/SIGCONT of the node running an auto-revival agent', () => {
  it('(b) paused for less than the window: no revival, the turn ends normally on the laptop', async () => {
    const conv = await startAndPause('short pause', 'short pause', 'short.txt')
    await sleep(1500)
    cluster.pause('laptop', false)
    const done = async (n: string): Promise<boolean> => stopped(await entries(n, conv)).some(e => e.body.reason === 'done')
    await until(async () => (await done('laptop')) && (await done('server')) && (await done('cloud')), 'the turn to end, known everywhere', 20_000, 200)
    const history = await entries('server', conv)
    expect(started(history).map(e => [nameOf(e.author.device), e.body.reason])).toEqual([['laptop', 'user']])
    expect(stopped(history).map(e => [nameOf(e.author.device), e.body.reason])).toEqual([['laptop', 'done']])
    expect(history.filter(e => e.kind === 'tool.result').map(e => (e as EntryOf<'tool.result'>).body.status)).toEqual(['ok'])
    expect(history.some(e => e.kind === 'assistant' && e.body.text === 'short done')).toBe(true)
    expect(await lines('short.txt')).toBe(1)
  }, 40_000)

  it('(a) paused past the window while its call finishes: revived once elsewhere; on SIGCONT the laptop gives way before any further step', async () => {
    const conv = await startAndPause('long pause', 'long pause', 'long.txt')
    const pausedAt = Date.now()
    const intent = await heldIntent(conv)
    const revivals = async (): Promise<Array<EntryOf<'agent.started'>>> => [...(await entries('server', conv)), ...(await entries('cloud', conv))].filter((e): e is EntryOf<'agent.started'> => e.kind === 'agent.started' && e.body.reason === 'revival')
    await until(async () => (await revivals()).length > 0, 'server or cloud to revive the agent', 20_000, 200)
    const revival = (await revivals())[0] as EntryOf<'agent.started'>
    const reviver = nameOf(revival.author.device)
    console.log(`revived on ${reviver} ${revival.ts - pausedAt} ms after the SIGSTOP`)
    await sleep(500) // the call (2 s) has long finished; the revived agent is at work
    cluster.pause('laptop', false)

    // the laptop's agent ended, however (today it may end its turn as done instead of giving way)
    const gaveWay = async (n: string): Promise<boolean> => stopped(await entries(n, conv)).some(e => e.author.device === device.get('laptop'))
    const turnOver = async (n: string): Promise<boolean> => stopped(await entries(n, conv)).some(e => e.author.device === revival.author.device && e.body.reason === 'done')
    let all: Entry[][] = []
    await until(async () => {
      if (!(await gaveWay('laptop')) || !(await turnOver('laptop'))) return false
      all = await Promise.all(NAMES.map(n => entries(n, conv)))
      const ids = all.map(es => es.map(e => e.id).sort().join())
      return ids.every(x => x === ids[0])
    }, 'the laptop\'s agent to end, the revived turn to end, the same history on all three', 30_000, 250)
    const history = all[0] as Entry[]
    // The laptop wrote nothing after its intent but its giving way: no result, no model call, no next step.
    const laptops = history.filter(e => e.author.device === device.get('laptop'))
    const afterIntent = laptops.slice(laptops.findIndex(e => e.id === intent.id) + 1)
    expect(afterIntent.map(e => e.kind === 'agent.stopped' ? `stopped:${e.body.reason}` : e.kind)).toEqual(['stopped:superseded'])
    expect((afterIntent[0] as EntryOf<'agent.stopped'>).body.by).toEqual({ device: revival.author.device, epoch: 1 })
    // One agent: one revival, and each step ran once.
    expect(started(history).map(e => [nameOf(e.author.device), e.body.reason])).toEqual([['laptop', 'user'], [reviver, 'revival']])
    expect(history.filter(e => e.kind === 'tool.result' && e.body.callId === intent.body.callId).map(e => (e as EntryOf<'tool.result'>).body.status)).toEqual(['unknown'])
    expect(await runsEverywhere('long.txt')).toBe(1)
    expect(await lines('next.txt')).toBe(0) // the laptop never ran the next step
    expect(await runsEverywhere('next.txt')).toBe(1) // the reviver ran it, once
    for (const n of NAMES) {
      const s = await cluster.ok(n, 'status', conv)
      expect(s, n).toContain(`agent: ${n === reviver ? 'this device' : reviver} (epoch 1)`)
      expect(s, n).not.toMatch(/working now|also running/)
    }
  }, 50_000)

  it('(c) frozen as its step starts, just after the intent is written: a peer held the intent, so the reviver does not run the step again; on SIGCONT the laptop gives way', async () => {
    const conv = (await cluster.ok('laptop', 'new', '--title', 'intent pause', '--auto-revival', '--cwd', work)).trim()
    const stopAt = path.join(cluster.devices.get('laptop')?.dir as string, 'test-sigstop-at')
    cluster.spawnArbor('laptop', 'chat', conv, 'intent pause')
    // the first call runs (its start and the agent's are everywhere by now); at the start of the second the node stops itself
    await until(async () => (await lines('first.txt')) === 1, 'the first call to run', 30_000, 10)
    await fs.writeFile(stopAt, 'before-tool')
    // the node deletes the file as it stops itself
    await until(async () => !(await fs.access(stopAt).then(() => true, () => false)), 'the laptop to stop itself as the call starts', 30_000, 20)
    const pausedAt = Date.now()
    const revivals = async (): Promise<Array<EntryOf<'agent.started'>>> => [...(await entries('server', conv)), ...(await entries('cloud', conv))].filter((e): e is EntryOf<'agent.started'> => e.kind === 'agent.started' && e.body.reason === 'revival')
    await until(async () => (await revivals()).length > 0, 'server or cloud to revive the agent', 20_000, 200)
    const revival = (await revivals())[0] as EntryOf<'agent.started'>
    const reviver = nameOf(revival.author.device)
    console.log(`(c) revived on ${reviver} ${revival.ts - pausedAt} ms after the laptop stopped`)
    const turnOver = async (n: string): Promise<boolean> => stopped(await entries(n, conv)).some(e => e.author.device === revival.author.device && e.body.reason === 'done')
    await until(async () => turnOver(reviver), 'the revived turn to end', 20_000, 200)
    // the reviver held the call's intent: it recorded the outcome as unknown instead of running it
    expect(await runsEverywhere('intent.txt')).toBe(0)
    cluster.pause('laptop', false)

    let all: Entry[][] = []
    await until(async () => {
      if (!stopped(await entries('laptop', conv)).some(e => e.author.device === device.get('laptop') && e.body.reason !== 'done')) return false
      all = await Promise.all(NAMES.map(n => entries(n, conv)))
      const ids = all.map(es => es.map(e => e.id).sort().join())
      return ids.every(x => x === ids[0])
    }, 'the laptop\'s agent to give way, the same history on all three', 30_000, 250).catch(async (err: Error) => {
      // what each device holds, to tell a slow machine from a laptop that did not give way
      for (const n of NAMES) console.log(`${n} holds`, (await entries(n, conv)).map(e => `${e.kind}${e.kind === 'agent.stopped' ? ':' + e.body.reason : ''}@${nameOf(e.author.device)}`).join(' '))
      console.log('laptop log', cluster.devices.get('laptop')?.log.slice(-2500))
      throw err
    })
    const history = all[0] as Entry[]
    const intent = history.filter((e): e is EntryOf<'tool.intent'> => e.kind === 'tool.intent').find(e => JSON.stringify(e.body.args).includes('intent.txt')) as EntryOf<'tool.intent'>
    expect(intent.author.device).toBe(device.get('laptop'))
    expect(started(history).map(e => [nameOf(e.author.device), e.body.reason])).toEqual([['laptop', 'user'], [reviver, 'revival']])
    expect(history.filter(e => e.kind === 'tool.result' && e.body.callId === intent.body.callId).map(e => (e as EntryOf<'tool.result'>).body.status)).toEqual(['unknown'])
    // woken mid-call (past its last check), the laptop finishes that one call, writes no result and gives way
    const laptops = history.filter(e => e.author.device === device.get('laptop'))
    const afterIntent = laptops.slice(laptops.findIndex(e => e.id === intent.id) + 1)
    expect(afterIntent.map(e => e.kind === 'agent.stopped' ? `stopped:${e.body.reason}` : e.kind)).toEqual(['stopped:superseded'])
    expect(await runsEverywhere('intent.txt')).toBe(1) // the step ran once: the laptop's call
    expect(await runsEverywhere('first.txt')).toBe(1)
    expect(history.some(e => e.kind === 'assistant' && e.body.text === 'intent done' && e.author.device === revival.author.device)).toBe(true)
  }, 50_000)
})
