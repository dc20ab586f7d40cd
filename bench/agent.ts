// Benchmarks of the agent runtime (DESIGN.md, "Agents") and of the bash tool's sandbox,
// each beside a baseline measured in the same run. Prints one JSON line per measurement;
// see bench/README.md.
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { HistoryStore } from '../src/main/history/history-store'
import { FakeProvider, type FakeTurn } from '../src/main/llm/fake-provider'
import type { LlmProvider } from '../src/main/llm/provider'
import { AgentHost, type AgentConfig } from '../src/main/runtime/agent/agent-host'
import { planCompaction } from '../src/main/runtime/agent/compaction'
import { summarise } from '../src/main/runtime/agent/compaction-step'
import { createBashTool } from '../src/main/tools/bash-tool'
import { buildBwrapArgs, planSandbox } from '../src/main/tools/sandbox/bwrap-args'
import { GitScanner } from '../src/main/tools/sandbox/git-scan'
import { CallCgroup, launcherArgv } from '../src/main/tools/sandbox/resource-cgroups'
import { resolveResourceLimits, tmpfsSizes, ulimitPrefix } from '../src/main/tools/sandbox/resource-limits'
import { sandboxProbe } from '../src/main/tools/sandbox/sandbox-probe'
import { spawnSandbox } from '../src/main/tools/sandbox/spawn-sandbox'
import { closeSpareSandboxes, spareSandboxes } from '../src/main/tools/sandbox/spare-sandbox'
import type { SandboxPolicy } from '../src/main/tools/sandbox-policy'
import type { Tool, ToolContext } from '../src/main/tools/tool'
import type { Entry } from '../src/shared/entry/entry'
import type { Logger } from '../src/shared/logger'
import { emit, median, percentile, round } from './lib/util'

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'arbor-bench-agent-'))
let dirs = 0
const freshDir = async (name: string): Promise<string> => {
  const dir = path.join(tmp, `${name}-${dirs++}`)
  await fs.mkdir(dir, { recursive: true })
  return dir
}
const log: Logger = {
  info: () => undefined,
  warn: m => process.stderr.write(`bench agent warning: ${m}\n`),
  error: m => process.stderr.write(`bench agent error: ${m}\n`)
}
const openStore = (dir: string): HistoryStore => new HistoryStore({ dir, watchPeers: false, log })

/** Accumulates the wall time spent inside an async function (calls must not overlap). */
class Meter {
  ms = 0
  calls = 0
  wrap<A extends unknown[], R> (fn: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
    return async (...args: A): Promise<R> => {
      const t0 = performance.now()
      try {
        return await fn(...args)
      } finally {
        this.ms += performance.now() - t0
        this.calls++
      }
    }
  }
}

/** CPU time of the whole process (every thread) since `c0`, in ms. */
function cpuMsSince (c0: NodeJS.CpuUsage): number {
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / 1000
}

// ---------------------------------------------------------------- a. per-step overhead

const TOOL_TURNS = 200

interface StepRun {
  totalMs: number
  cpuMs: number
  steps: number
  entries: number
  provider: Meter
  tool: Meter
  enqueue: Meter
  open: Meter
  appendOneMs: number
}

/**
 * One long turn: TOOL_TURNS model calls each calling the no-op tool, then a final answer.
 * `effect` is the tool's class: a read step runs while its intent is being written, a
 * workspace step only once it is stored.
 */
async function stepRun (effect: Tool['effect']): Promise<StepRun> {
  const history = openStore(await freshDir('agent'))
  await history.ready()
  const provider = new Meter()
  const tool = new Meter()
  const enqueue = new Meter()
  const open = new Meter()

  const noop: Tool = {
    name: 'noop',
    description: 'does nothing',
    parameters: { type: 'object', properties: {} },
    effect,
    timeoutMs: 5000,
    run: tool.wrap(async () => ({ status: 'ok' as const, output: '' }))
  }
  const reply: FakeTurn[] = [...Array.from({ length: TOOL_TURNS }, (): FakeTurn => ({ toolCalls: [{ name: 'noop' }] })), { text: 'done' }]
  const fake = new FakeProvider({ rules: [{ match: 'go', reply }] })
  const timedProvider: LlmProvider = { name: fake.name, chat: provider.wrap(req => fake.chat(req)) }
  const config: AgentConfig = {
    provider: timedProvider,
    model: 'fake-1',
    tools: new Map([[noop.name, noop]]),
    sandbox: { enabled: true, cwd: tmp, hidden: [] },
    system: 'You are a benchmark agent.'
  }
  const host = new AgentHost({ history, configFor: async () => config })
  await host.ready()

  const root = await history.createConversation({ title: 'step overhead' })
  const [user] = await history.append(root.id, [{ kind: 'user', body: { text: 'go' }, parents: [root.id] }])
  // Time the store's own work during the turn (the agent is the only caller then): building
  // and queueing its entries; the writes go on behind it, and waits for them are the rest.
  history.enqueue = enqueue.wrap(history.enqueue.bind(history))
  history.open = open.wrap(history.open.bind(history))

  const t0 = performance.now()
  const c0 = process.cpuUsage()
  await host.start(root.id, { leaf: (user as Entry).id })
  const end = await host.wait(root.id)
  const totalMs = performance.now() - t0
  const cpuMs = cpuMsSince(c0)
  if (end !== 'done') throw new Error(`the agent ended with ${end}, expected done`)
  if (provider.calls !== TOOL_TURNS + 1 || tool.calls !== TOOL_TURNS) throw new Error(`expected ${TOOL_TURNS + 1} model and ${TOOL_TURNS} tool calls, saw ${provider.calls} and ${tool.calls}`)
  const entries = enqueue.calls

  // Baseline in the same store: a bare append of one entry to another conversation.
  const other = await history.createConversation({ title: 'append baseline' })
  let parent = other.id
  const one: number[] = []
  for (let i = 0; i < 50; i++) {
    const t = performance.now()
    const [e] = await history.append(other.id, [{ kind: 'user', body: { text: `message ${i}` }, parents: [parent] }])
    one.push(performance.now() - t)
    parent = (e as Entry).id
  }
  await host.close()
  await history.close()
  return { totalMs, cpuMs, steps: provider.calls + tool.calls, entries, provider, tool, enqueue, open, appendOneMs: median(one.slice(5)) }
}

async function stepOverhead (): Promise<void> {
  const RUNS = 5
  const TARGET = 0.5
  await stepRun('read') // warm-up
  const runs: StepRun[] = []
  const workspace: StepRun[] = []
  // interleaved, so both see the same background load
  for (let i = 0; i < RUNS; i++) {
    runs.push(await stepRun('read'))
    workspace.push(await stepRun('workspace'))
  }
  const perStep = (r: StepRun, ms: number): number => ms / r.steps
  const overheadOf = (r: StepRun): number => perStep(r, r.totalMs - r.provider.ms - r.tool.ms)
  // the whole process's CPU during the turn, the fake provider's included: steadier than wall time on a busy machine
  const cpuOf = (r: StepRun): number => perStep(r, r.cpuMs)
  const overhead = runs.map(overheadOf)
  const value = median(overhead)
  const appendOne = median(runs.map(r => r.appendOneMs))
  const enqueuePerStep = median(runs.map(r => perStep(r, r.enqueue.ms)))
  const openPerStep = median(runs.map(r => perStep(r, r.open.ms)))
  const restPerStep = median(runs.map(r => perStep(r, r.totalMs - r.provider.ms - r.tool.ms - r.enqueue.ms - r.open.ms)))
  const r0 = runs[0] as StepRun
  const parts: Array<[string, number]> = [
    ['history.enqueue (building and queueing the journal\'s entries)', enqueuePerStep],
    ['history.open (once a run)', openPerStep],
    ['the rest of the loop (waits for writes, planNext, toIrMessages, runTool, supervisor)', restPerStep]
  ]
  const top = [...parts].sort((a, b) => b[1] - a[1])[0] as [string, number]
  const ws = median(workspace.map(overheadOf))
  emit({
    name: 'agent.step.overhead',
    value: round(value, 3),
    unit: 'ms/step',
    baseline: round(appendOne, 3),
    baselineName: 'HistoryStore.append of one entry (median of 45 sequential appends, same store)',
    ratio: round(value / appendOne),
    target: TARGET,
    ok: value < TARGET,
    cpuMsPerStep: round(median(runs.map(cpuOf)), 3),
    steps: r0.steps,
    entriesPerStep: round(r0.entries / r0.steps),
    totalMs: round(median(runs.map(r => r.totalMs)), 1),
    providerMsPerModelStep: round(median(runs.map(r => r.provider.ms / r.provider.calls)), 3),
    toolMsPerToolStep: round(median(runs.map(r => r.tool.ms / r.tool.calls)), 4),
    enqueueMsPerStep: round(enqueuePerStep, 3),
    openMsPerStep: round(openPerStep, 3),
    restMsPerStep: round(restPerStep, 3),
    dominatedBy: `${top[0]}: ${round(top[1], 3)} of ${round(value, 3)} ms/step`,
    runs: overhead.map(x => round(x, 3)),
    workspace: {
      name: 'the same turn with the tool declared workspace: each tool step waits until its intent is stored',
      value: round(ws, 3),
      cpuMsPerStep: round(median(workspace.map(cpuOf)), 3),
      ratio: round(ws / appendOne),
      runs: workspace.map(r => round(overheadOf(r), 3))
    },
    loadAverage: os.loadavg().map(x => round(x))
  })
}

// ---------------------------------------------------------------- c. compaction on turns that fit

const FIT_TURNS = 30
const FIT_STEPS = 4 // tool steps per turn, then the answer

interface FitRun { callsPerTurn: number[]; stepMs: number; compactions: number; branch: Entry[]; config: AgentConfig }

/**
 * FIT_TURNS turns of FIT_STEPS calls of a read tool (~500 characters each) and an answer, one
 * after the other in one conversation; `window`: the model's window (a before-step check per
 * model step), or none (compaction off: only a refusal would compact).
 */
async function fitRun (window: number | undefined): Promise<FitRun> {
  const history = openStore(await freshDir('compaction'))
  await history.ready()
  const calls = new Meter()
  const output = 'lorem ipsum '.repeat(40)
  const read: Tool = {
    name: 'peek',
    description: 'reads something',
    parameters: { type: 'object', properties: {} },
    effect: 'read',
    timeoutMs: 5000,
    run: async () => ({ status: 'ok' as const, output })
  }
  const reply: FakeTurn[] = [...Array.from({ length: FIT_STEPS }, (): FakeTurn => ({ toolCalls: [{ name: 'peek' }] })), { text: 'an answer of a few words' }]
  const fake = new FakeProvider({ rules: [{ match: 'turn', reply }] })
  const config: AgentConfig = {
    provider: { name: fake.name, chat: calls.wrap(req => fake.chat(req)) },
    model: 'fake-1',
    tools: new Map([[read.name, read]]),
    sandbox: { enabled: true, cwd: tmp, hidden: [] },
    system: 'You are a benchmark agent.',
    ...(window !== undefined ? { contextWindow: { get: async () => window, learn: () => undefined } } : {})
  }
  const host = new AgentHost({ history, configFor: async () => config })
  await host.ready()
  const root = await history.createConversation({ title: 'turns that fit' })
  let tip = root.id
  const callsPerTurn: number[] = []
  let ms = 0
  for (let t = 1; t <= FIT_TURNS; t++) {
    const [user] = await history.append(root.id, [{ kind: 'user', body: { text: `turn ${t}` }, parents: [tip] }])
    const before = calls.calls
    const t0 = performance.now()
    await host.start(root.id, { leaf: (user as Entry).id })
    const end = await host.wait(root.id)
    ms += performance.now() - t0
    if (end !== 'done') throw new Error(`turn ${t} ended with ${end}, expected done`)
    callsPerTurn.push(calls.calls - before)
    tip = ((await history.open(root.id)).branch((user as Entry).id).at(-1) as Entry).id
  }
  const branch = (await history.open(root.id)).branch(tip)
  await host.close()
  await history.close()
  return { callsPerTurn, stepMs: ms / (FIT_TURNS * (2 * FIT_STEPS + 1)), compactions: branch.filter(e => e.kind === 'compaction').length, branch, config }
}

async function compactionSteps (): Promise<void> {
  const WINDOW = 1_000_000 // every turn fits
  await fitRun(WINDOW) // warm-up
  const on = await fitRun(WINDOW)
  const off = await fitRun(undefined)
  const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0)
  const ratio = sum(on.callsPerTurn) / sum(off.callsPerTurn)
  // The before-step check alone (what the loop runs before each model step: plan, estimate, 'fits'),
  // timed on the branch as it stood before each of the run's model steps.
  const tools = [...on.config.tools.values()].map(t => ({ name: t.name, description: t.description, parameters: t.parameters }))
  const prefixes = on.branch.flatMap((e, i) => e.kind === 'assistant' ? [on.branch.slice(0, i)] : [])
  const signal = new AbortController().signal
  const us: number[] = []
  for (let rep = 0; rep < 5; rep++) {
    for (const branch of prefixes) {
      const t0 = performance.now()
      const made = await summarise({ provider: on.config.provider, model: 'fake-1', system: on.config.system, tools, branch, window: WINDOW, signal })
      us.push((performance.now() - t0) * 1000)
      if (made.kind !== 'fits') throw new Error(`a turn that fits was planned as ${made.kind}`)
    }
  }
  // and without usage reported: the estimate sums the whole view (what a model without usage costs)
  const bare = on.branch.map(e => e.kind === 'assistant' && e.body.usage !== undefined ? { ...e, body: { ...e.body, usage: undefined } } as Entry : e)
  const bareUs: number[] = []
  for (let rep = 0; rep < 5; rep++) {
    const t0 = performance.now()
    planCompaction(bare, { window: WINDOW, reserve: 4096, overhead: 100 })
    bareUs.push((performance.now() - t0) * 1000)
  }
  emit({
    name: 'agent.compaction.steps',
    value: round(ratio, 3),
    unit: 'provider calls, compaction on / off',
    valueName: `provider calls per turn with the before-step compaction check on (a ${WINDOW}-token window), over the same turns with it off; ${FIT_TURNS} turns of ${FIT_STEPS} tool steps and an answer that fit`,
    target: 1,
    ok: ratio === 1 && on.compactions === 0,
    callsPerTurnOn: median(on.callsPerTurn),
    callsPerTurnOff: median(off.callsPerTurn),
    compactions: on.compactions,
    estimateUsPerStep: round(median(us), 1),
    estimateP90UsPerStep: round(percentile(us, 90), 1),
    estimateName: 'summarise() before a model step that fits (requestOverhead, planCompaction, estimateContext from the last usage), median over the run\'s model steps',
    estimateNoUsageUs: round(median(bareUs), 1),
    estimateNoUsageName: `planCompaction of the whole final branch (${on.branch.length} entries) with no usage reported: the estimate sums every entry`,
    stepMsOn: round(on.stepMs, 3),
    stepMsOff: round(off.stepMs, 3),
    stepName: 'wall ms per step (model or tool) of the turns, on and off (one run each: noisy under load)',
    loadAverage: os.loadavg().map(x => round(x))
  })
}

// ---------------------------------------------------------------- b. bwrap overhead

/** Spawns (through the bash tool's spawnSandbox) until exit. */
function spawnUntilExit (file: string, args: string[], cwd: string, seccomp?: Buffer, cgroup?: CallCgroup): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const child = spawnSandbox({
      file, args, stdio: ['ignore', 'ignore', 'ignore'], options: { cwd },
      ...(seccomp !== undefined ? { seccomp } : {}), ...(cgroup !== undefined ? { cgroup } : {})
    })
    child.on('error', reject)
    child.on('exit', code => {
      if (code !== 0) reject(new Error(`${file} exited with ${code}`))
      else resolve(performance.now() - t0)
    })
  })
}

/** `args` without the first run of `seq` (undefined when it has none). */
function without (args: readonly string[], ...seqs: string[][]): string[] | undefined {
  let out = [...args]
  for (const seq of seqs) {
    const at = out.findIndex((_, i) => seq.every((x, k) => out[i + k] === x))
    if (at < 0) return undefined
    out = [...out.slice(0, at), ...out.slice(at + seq.length)]
  }
  return out
}

/** The mask arguments (hidden paths) of a plan: `--tmpfs P --remount-ro P` and `--ro-bind /dev/null P` outside /proc. */
function maskRuns (args: readonly string[]): string[][] {
  const end = args.indexOf('--')
  const out: string[][] = []
  for (let i = 0; i < end; i++) {
    if (args[i] === '--tmpfs' && args[i + 2] === '--remount-ro' && args[i + 3] === args[i + 1]) out.push(args.slice(i, i + 4))
    else if (args[i] === '--ro-bind' && args[i + 1] === '/dev/null' && !(args[i + 2] ?? '').startsWith('/proc/')) out.push(args.slice(i, i + 3))
  }
  return out
}

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

async function bwrapOverhead (): Promise<void> {
  const name = 'agent.bash.bwrap-overhead'
  const probe = await sandboxProbe()
  if (!probe.ok) {
    process.stdout.write(JSON.stringify({ name, skipped: probe.reason === 'missing' ? 'bwrap not installed' : `the sandbox cannot run here: ${probe.message}` }) + '\n')
    return
  }
  const RUNS = Number(process.env.ARBOR_BENCH_BWRAP_RUNS ?? 60)
  const cwd = await freshDir('bash')
  const warmCwd = await freshDir('bash-warm') // its own directory: a call elsewhere in it would drop its spare
  const pairCwd = await freshDir('bash-pair')
  const coldCwd = await freshDir('bash-cold')
  const policy = (dir: string): SandboxPolicy => ({ enabled: true, cwd: dir, hidden: [] })
  const home = os.homedir()
  const limits = resolveResourceLimits()
  const command = ulimitPrefix(limits, 120_000, probe.limits) + 'true'
  const buildArgs = (seccomp: boolean): string[] => buildBwrapArgs({
    policy: policy(cwd), command, env: process.env, home, disableUserns: probe.disableUserns,
    ...(probe.tmpfsSizes ? { tmpfsSizes: tmpfsSizes(limits) } : {}), ...(seccomp && probe.seccomp !== undefined ? { seccompFd: 3 } : {})
  })
  const bargs = buildArgs(false)
  const sargs = buildArgs(true)
  const warm = createBashTool({ home })
  const cold = createBashTool({ home, spares: false })
  const ctx = (dir: string): ToolContext => ({ cwd: dir, signal: new AbortController().signal, idemKey: 'bench', sandbox: policy(dir) })
  const run = async (tool: Tool, dir: string): Promise<number> => {
    const t0 = performance.now()
    const res = await tool.run({ command: 'true' }, ctx(dir))
    if (res.status !== 'ok') throw new Error(`the bash tool failed: ${res.output}`)
    return performance.now() - t0
  }

  const plain = (): Promise<number> => spawnUntilExit('bash', ['-c', 'true'], cwd)
  const bwrap = (): Promise<number> => spawnUntilExit(probe.bwrapPath, bargs, cwd)
  const seccomp = (): Promise<number> => spawnUntilExit(probe.bwrapPath, sargs, cwd, probe.seccomp)
  const launcher = (): Promise<number> => {
    const l = launcherArgv([], probe.bwrapPath, sargs)
    return spawnUntilExit(l.file, l.args, cwd, probe.seccomp)
  }
  // everything around bwrap: make the call's cgroup, join it through the launcher, the filter on fd 3, remove the cgroup after
  const removeMs: number[] = []
  const full = async (): Promise<number> => {
    const t0 = performance.now()
    const cg = probe.cgroupBase === undefined ? undefined : CallCgroup.create(probe.cgroupBase, limits)
    await spawnUntilExit(probe.bwrapPath, sargs, cwd, probe.seccomp, cg)
    const t1 = performance.now()
    await cg?.remove()
    removeMs.push(performance.now() - t1)
    return performance.now() - t0
  }
  // the steady state of an agent's turn: a model step lies between two calls, and by the time
  // the call comes its spare is ready (how long that takes is spare.readyMs)
  const readyMs: number[] = []
  const prepareMs: number[] = []
  // the spare a call left, made and ready before the next measurement (so its setup does not run beside it)
  const settle = async (dir: string): Promise<void> => {
    await spareSandboxes.prepared()
    if (spareSandboxes.stats.lastPrepareMs !== undefined) prepareMs.push(spareSandboxes.stats.lastPrepareMs)
    for (let i = 0; i < 500 && !spareSandboxes.readyIn(dir); i++) await sleep(2)
    const r = spareSandboxes.spareIn(dir)?.readyMs
    if (r === undefined) throw new Error(`no spare became ready in ${dir} (${JSON.stringify(spareSandboxes.stats)})`)
    readyMs.push(r)
  }
  const toolWarm = async (): Promise<number> => {
    const ms = await run(warm, warmCwd)
    await settle(warmCwd)
    return ms
  }
  // no model step between two calls: the second takes the spare the first left before it is ready
  const toolBackToBack = async (): Promise<number> => {
    await run(warm, pairCwd)
    const ms = await run(warm, pairCwd)
    await settle(pairCwd)
    return ms
  }
  const toolCold = (): Promise<number> => run(cold, coldCwd)
  const toolOff = async (): Promise<number> => {
    const t0 = performance.now()
    const res = await cold.run({ command: 'true' }, { ...ctx(coldCwd), sandbox: { ...policy(coldCwd), enabled: false } })
    if (res.exitCode !== 0) throw new Error(`the bash tool (sandbox off) failed: ${res.output}`)
    return performance.now() - t0
  }
  const planOnly = (): Promise<number> => {
    const t0 = performance.now()
    buildArgs(true)
    return Promise.resolve(performance.now() - t0)
  }
  const scanner = new GitScanner({ home })
  const guardOnly = async (): Promise<number> => {
    const plan = planSandbox({ policy: policy(coldCwd), command, env: process.env, home })
    const t0 = performance.now()
    const g = await scanner.begin(plan.cwd, plan.git)
    await g.finish()
    return performance.now() - t0
  }

  // What each protection costs bwrap: the filtered sandbox with that one thing left out.
  const isolation = (flags: string[]): string[][] => flags.map(f => [f])
  const variants: Array<[string, string[] | undefined]> = [
    ['netNamespace', without(sargs, ['--unshare-net'])],
    ['userNamespace', without(sargs, ...isolation(['--unshare-user', ...(probe.disableUserns ? ['--disable-userns'] : [])]))],
    ['pidIpcUtsCgroupNamespaces', without(sargs, ...isolation(['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try']), ['--ro-bind', '/dev/null', '/proc/1/mem'], ['--ro-bind', '/dev/null', '/proc/1/task/1/mem'])],
    ['dieWithParentNewSession', without(sargs, ['--die-with-parent'], ['--new-session'])],
    ['hiddenPathMasks', maskRuns(sargs).length === 0 ? undefined : without(sargs, ...maskRuns(sargs))],
    ['proc1MemMasks', without(sargs, ['--ro-bind', '/dev/null', '/proc/1/mem'], ['--ro-bind', '/dev/null', '/proc/1/task/1/mem'])],
    ['readOnlyDev', without(sargs, ['--remount-ro', '/dev'])],
    ['tmpfsSizes', probe.tmpfsSizes ? sargs.filter((a, i) => a !== '--size' && sargs[i - 1] !== '--size') : undefined]
  ]
  const usable: Array<[string, string[]]> = []
  for (const [v, a] of variants) {
    if (a === undefined) continue
    try {
      await spawnUntilExit(probe.bwrapPath, a, cwd, probe.seccomp)
      usable.push([v, a])
    } catch { /* this machine cannot run bwrap without it (a user namespace, for a user who is not root) */ }
  }
  const leaveOut = usable.map(([v, a]): [string, () => Promise<number>] => [v, () => spawnUntilExit(probe.bwrapPath, a, cwd, probe.seccomp)])

  const fns: Array<[string, () => Promise<number>]> = [
    ['plain', plain], ['bwrap', bwrap], ['seccomp', seccomp], ['launcher', launcher], ['full', full],
    ['toolWarm', toolWarm], ['toolBackToBack', toolBackToBack], ['toolCold', toolCold], ['toolOff', toolOff],
    ['plan', planOnly], ['guard', guardOnly], ...leaveOut
  ]
  for (const [, fn] of fns) await fn() // warm-up
  readyMs.length = 0
  prepareMs.length = 0
  removeMs.length = 0
  const out = new Map<string, number[]>(fns.map(([n]) => [n, []]))
  for (let i = 0; i < RUNS; i++) for (const [n, fn] of fns) (out.get(n) as number[]).push(await fn())
  await closeSpareSandboxes()
  const med = (n: string): number => median(out.get(n) as number[])
  const p90 = (n: string): number => percentile(out.get(n) as number[], 90)
  // run by run: subject i minus the baseline measured just before it
  const diffs = (n: string): number[] => (out.get(n) as number[]).map((x, i) => x - (out.get('plain') as number[])[i]!)
  const a = med('plain')
  const value = med('toolWarm') - a
  const target = 5
  const breakdown: Record<string, number> = {}
  for (const [v] of usable) breakdown[v] = round(med('seccomp') - med(v))
  emit({
    name,
    value: round(value),
    unit: 'ms',
    valueName: 'the bash tool\'s run() of `true`, sandboxed with everything on, in the spare sandbox the previous call left, minus the baseline',
    p90: round(percentile(diffs('toolWarm'), 90)),
    baseline: round(a),
    baselineP90Ms: round(p90('plain')),
    baselineName: "spawn('bash', ['-c', 'true']) until exit",
    ratio: round(med('toolWarm') / a),
    target,
    ok: value <= target,
    toolMs: round(med('toolWarm')),
    toolP90Ms: round(p90('toolWarm')),
    toolName: 'bash tool run() with the sandbox enabled (probe cached, plan, git guard before and after, the spare\'s cgroup and bwrap, output collected, cgroup removed), the spare ready',
    cold: {
      overheadMs: round(med('toolCold') - a),
      overheadP90Ms: round(percentile(diffs('toolCold'), 90)),
      toolMs: round(med('toolCold')),
      toolP90Ms: round(p90('toolCold')),
      name: 'the same run() with no spare (spares: false; the first call in a directory, or one whose plan changed)',
      fullMs: round(med('full')),
      fullP90Ms: round(p90('full')),
      fullOverheadMs: round(med('full') - a),
      fullName: 'cgroup made + joined (v1: the launcher moves itself; v2: bwrap moved while it reads its filter) + bwrap (sized tmpfs, read-only /dev, --add-seccomp-fd 3 on a pipe) of the ulimit line and true + cgroup removed; no plan, no git guard'
    },
    backToBack: {
      overheadMs: round(med('toolBackToBack') - a),
      overheadP90Ms: round(percentile(diffs('toolBackToBack'), 90)),
      name: 'the second of two calls with nothing between them: it takes the spare the first left before that is ready'
    },
    spare: {
      readyMs: round(median(readyMs)),
      readyP90Ms: round(percentile(readyMs, 90)),
      readyName: 'from the spare\'s spawn to its shell saying it is ready (bwrap\'s setup, off the call\'s path; the bench waits for it after each call, as a model step would)',
      prepareMs: round(median(prepareMs)),
      prepareName: 'the node\'s own time making a spare after a call (plan, fingerprint, cgroup, fork of bwrap)',
      made: spareSandboxes.stats.made,
      used: spareSandboxes.stats.used,
      dropped: spareSandboxes.stats.dropped
    },
    bwrapMs: round(med('bwrap')),
    bwrapP90Ms: round(p90('bwrap')),
    bwrapName: 'bwrap alone: buildBwrapArgs(...) without the filter, no cgroup',
    seccompMs: round(med('seccomp')),
    seccompP90Ms: round(p90('seccomp')),
    seccompName: 'bwrap + the seccomp filter written to fd 3',
    breakdownMs: {
      bwrap: round(med('bwrap') - a),
      ...breakdown,
      seccomp: round(med('seccomp') - med('bwrap')),
      launcher: round(med('launcher') - med('seccomp')),
      cgroup: round(med('full') - med('launcher')),
      cgroupRemoveWait: round(median(removeMs)),
      plan: round(med('plan'), 3),
      gitGuard: round(med('guard'), 3)
    },
    breakdownName: 'bwrap: bwrap of everything without the filter minus the baseline; each of the next: what leaving that one thing out of the filtered sandbox saves; seccomp, launcher, cgroup: what each adds in turn; plan: planSandbox; gitGuard: the git check before and after a call in an empty directory',
    toolUnsandboxedMs: round(med('toolOff')),
    bwrapVersion: probe.version,
    cgroup: probe.limits.cgroup ?? 'none',
    seccompProgram: probe.seccomp === undefined ? 'none' : `${probe.seccomp.length / 8} instructions`,
    loadAverage: os.loadavg().map(x => round(x)),
    runs: RUNS
  })
}

try {
  // ARBOR_BENCH_AGENT=bwrap (or step, compaction) runs one part only
  const only = process.env.ARBOR_BENCH_AGENT
  if (only === undefined || only === 'step') await stepOverhead()
  if (only === undefined || only === 'compaction') await compactionSteps()
  if (only === undefined || only === 'bwrap') await bwrapOverhead()
} finally {
  await fs.rm(tmp, { recursive: true, force: true })
}
