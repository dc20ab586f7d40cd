// Failover after a SIGKILL (DESIGN.md, "Placement"; notes/runtime.md §4): three real `arbor
// serve` processes on a HyperDHT testnet on loopback, at default settings (heartbeat 1 s,
// suspicion after 4 s of silence). Each run SIGKILLs the node running an auto-revival agent
// in the middle of a bash call and measures, from the kill, when the survivors' failure
// detectors suspected it (their own record: `arbor devices --json` suspectedSince) and when
// the revival was written (the agent.started{revival} entry's time). Before that, with every
// node up, it measures what acknowledged intents cost: the time from a bash call's intent
// being written to the call starting, in an auto-revival conversation (the step waits until
// a peer holds its intent) against one without (the baseline), interleaved. JSON lines on
// stdout; see bench/README.md.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import fs from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Entry, EntryOf } from '../src/shared/entry/entry'
import { ProcessCluster } from '../test/helpers/arbor-processes'
import { until } from '../test/helpers/temp-dir'
import { emit, median, percentile, round } from './lib/util'
import { DEFAULT_SUSPECT_AFTER_MS } from '../src/main/sync/sync-node'
import { leaseMargin } from '../src/main/sync/peers/lease'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const RUNS = Number(process.env.ARBOR_BENCH_FAILOVER_RUNS ?? 10)
/** turns of ACK_CALLS bash calls each, per conversation, for the acknowledged-intent latency */
const ACK_TURNS = Number(process.env.ARBOR_BENCH_FAILOVER_ACK_TURNS ?? 3)
const ACK_CALLS = 10
const NAMES = ['laptop', 'server', 'cloud'] as const
/** The failure detector's window at default settings (SyncNode suspectAfterMs). */
const WINDOW_MS = DEFAULT_SUSPECT_AFTER_MS
const TARGET_MS = 5000
/** Erlang distribution's default detection of a silent node: net_ticktime 60 s, 45 s < T < 75 s. */
const ERLANG_MS: [number, number] = [45_000, 75_000]
const note = (m: string): void => { process.stderr.write(`bench failover: ${m}\n`) }

if (spawnSync('bwrap', ['--version']).status !== 0) {
  // The agent is killed in the middle of a sandboxed bash call (the sandbox dies with its node).
  for (const name of ['failover.lease', 'failover.intent.acked', 'failover.detect', 'failover.revive', 'failover.act']) emit({ name, value: 0, unit: 'ms', skipped: 'bwrap not installed' })
  process.exit(0)
}
if (!existsSync(path.join(ROOT, 'out', 'main', 'cli.js'))) {
  note('out/main/cli.js is missing; building')
  const b = spawnSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'], shell: process.platform === 'win32' })
  if (b.status !== 0) throw new Error('the build failed')
}

const cluster = new ProcessCluster()
try {
  await cluster.ready()
  await cluster.startPaired(NAMES, 120_000)
  const key = cluster.keys
  // each call's first act writes the time it started (ms since the epoch, the clock the intent's ts is on)
  const stamp = { toolCalls: [{ name: 'bash', args: { command: 'date +%s%3N >> started.txt' } }] }
  // Every node runs the scripted model by its own settings: a reviver never takes a model from a
  // peer's entries (the conversation's `llm` setting names a file on the device that wrote it).
  const { script, work } = await cluster.fakeModel('arbor-bench-failover-', {
    rules: [
      { match: '^crash', reply: [{ toolCalls: [{ name: 'bash', args: { command: 'sleep 300', timeoutMs: 400_000 } }] }, { text: 'revived: {{lastToolOutput}}' }] },
      { match: '^stamp', reply: [...Array.from({ length: ACK_CALLS }, () => stamp), { text: 'stamped' }] }
    ]
  })

  const ackConvs: Array<{ conv: string; dir: string; into: number[] }> = []
  // Acknowledged intents: intent written → call started, with auto-revival (the step waits
  // for a peer to hold its intent) and without (the baseline), turns interleaved.
  const acked: number[] = []
  const plain: number[] = []
  for (const [revival, into] of [[true, acked], [false, plain]] as const) {
    const dir = path.join(work, revival ? 'acked' : 'plain')
    await fs.mkdir(dir)
    const conv = (await cluster.ok('laptop', 'new', '--title', `intents ${revival ? 'acked' : 'plain'}`, ...(revival ? ['--auto-revival'] : []), '--cwd', dir)).trim()
    ackConvs.push({ conv, dir, into })
  }
  for (let turn = 0; turn < ACK_TURNS; turn++) {
    for (const { conv } of ackConvs) await cluster.ok('laptop', 'chat', conv, `stamp ${turn}`, '--provider', 'fake', '--script', script)
  }
  for (const { conv, dir, into } of ackConvs) {
    const { entries } = JSON.parse(await cluster.ok('laptop', 'export', conv, '--format', 'json')) as { entries: Entry[] }
    const intents = entries.filter(e => e.kind === 'tool.intent').map(e => e.ts).sort((a, b) => a - b)
    const starts = (await fs.readFile(path.join(dir, 'started.txt'), 'utf8')).split('\n').filter(Boolean).map(Number)
    if (intents.length !== starts.length) throw new Error(`${intents.length} intents but ${starts.length} calls started in ${dir}`)
    intents.forEach((t, i) => into.push((starts[i] as number) - t))
  }
  const margin = leaseMargin(WINDOW_MS)
  emit({ name: 'failover.lease', value: margin, unit: 'ms', windowMs: WINDOW_MS, durationMs: WINDOW_MS - margin, note: 'an auto-revival agent acts only while every peer it owes the lease to (speaking leases, not soundly suspected) echoed one of its heartbeats less than durationMs ago, on both the monotonic and the wall clock' })
  emit({
    name: 'failover.intent.acked',
    value: round(median(acked)),
    unit: 'ms',
    p90: round(percentile(acked, 90)),
    n: acked.length,
    baseline: round(median(plain)),
    baselineP90: round(percentile(plain, 90)),
    baselineIs: 'the same bash calls in a conversation without auto-revival (no acknowledgement)',
    extraMs: round(median(acked) - median(plain)),
    extraP90Ms: round(percentile(acked, 90) - percentile(plain, 90)),
    ratio: round(median(acked) / median(plain), 3)
  })

  const detect: number[] = []
  const revive: number[] = []
  const act: number[] = []
  for (let run = 0; run < RUNS; run++) {
    const victim = NAMES[run % NAMES.length] as string
    const survivors = NAMES.filter(n => n !== victim)
    if (run === 0) await cluster.waitConnected(NAMES, 'every pair of devices to connect', 120_000)
    const conv = (await cluster.ok(victim, 'new', '--title', `failover ${run}`, '--auto-revival', '--cwd', work)).trim()
    const entries = (n: string): Promise<Entry[]> => cluster.entries(n, conv)
    cluster.spawnArbor(victim, 'chat', conv, 'crash now', '--provider', 'fake', '--script', script)
    // killed once every survivor holds the intent of the running call (a step cut short)
    await until(async () => {
      for (const n of survivors) if (!(await entries(n)).some(e => e.kind === 'tool.intent')) return false
      return true
    }, 'the survivors to hold the bash call\'s intent', 60_000, 100)

    const killedAt = Date.now()
    await cluster.kill(victim, 'SIGKILL')
    let revival: EntryOf<'agent.started'> | undefined
    await until(async () => {
      for (const n of survivors) {
        revival = (await entries(n)).find((e): e is EntryOf<'agent.started'> => e.kind === 'agent.started' && e.body.reason === 'revival')
        if (revival !== undefined) return true
      }
      return false
    }, 'a revival', 60_000, 100)
    const r = revival as EntryOf<'agent.started'>
    const since: number[] = []
    for (const n of survivors) {
      const s = (await cluster.devicesOf(n)).find(d => d.device === key.get(victim))?.suspectedSince
      if (s === undefined) throw new Error(`${n} does not suspect ${victim} after the revival`)
      since.push(s - killedAt)
    }
    detect.push(...since)
    revive.push(r.ts - killedAt)
    const reviver = [...key].find(([, k]) => k === r.author.device)?.[0] ?? '?'
    // the revived agent's first act (the cut-short call's unknown outcome), under the lease: its
    // dead owner is owed it until silent a full window since last heard — timed before the victim comes back
    let acted: Entry | undefined
    await until(async () => {
      acted = (await entries(reviver)).find(e => e.author.device === r.author.device && e.ts >= r.ts && e.kind !== 'agent.started' && e.kind !== 'note')
      return acted !== undefined
    }, 'the revived agent to act', 60_000, 100)
    act.push((acted as Entry).ts - killedAt)
    note(`run ${run + 1}/${RUNS}: killed ${victim}; suspected after ${since.map(ms => `${ms} ms`).join(' and ')}; revived on ${reviver} after ${r.ts - killedAt} ms; it acted after ${(acted as Entry).ts - killedAt} ms`)
    // back online: it continues (and finishes) its own cut-short turn, and rejoins
    const restartAt = Date.now()
    await cluster.serve(victim)
    await cluster.waitConnected(NAMES, `${victim} to rejoin`, 120_000)
    note(`${victim} restarted and heard by every device ${Date.now() - restartAt} ms after its restart`)
  }

  const line = (name: string, xs: number[], extra: Record<string, unknown>): void => {
    const value = median(xs)
    emit({ name, value: round(value), unit: 'ms', p90: round(percentile(xs, 90)), min: Math.min(...xs), max: Math.max(...xs), n: xs.length, ...extra })
  }
  const detectMedian = median(detect)
  // detection: against the window it is set to (4 s), beside Erlang's default window
  line('failover.detect', detect, {
    baseline: WINDOW_MS,
    baselineIs: 'the configured detection window (suspectAfterMs)',
    ratio: round(detectMedian / WINDOW_MS, 3),
    reference: ERLANG_MS,
    referenceIs: 'Erlang net_ticktime 60 s default: a silent node is noticed after 45-75 s',
    referenceRatio: round(detectMedian / ERLANG_MS[0], 3)
  })
  const reviveMedian = median(revive)
  line('failover.revive', revive, {
    baseline: round(detectMedian),
    baselineIs: 'failover.detect (the rest is deciding, writing the note and starting the agent)',
    ratio: round(reviveMedian / detectMedian, 3),
    reference: ERLANG_MS,
    referenceRatio: round(reviveMedian / ERLANG_MS[0], 3),
    target: TARGET_MS,
    ok: reviveMedian <= TARGET_MS,
    p90ok: percentile(revive, 90) <= TARGET_MS
  })
  line('failover.act', act, {
    baseline: round(reviveMedian),
    baselineIs: 'failover.revive (the rest is the lease: the dead owner is owed it until silent a full window since last heard)',
    ratio: round(median(act) / reviveMedian, 3)
  })
} finally {
  await cluster.close()
}
