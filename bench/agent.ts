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
import { createBashTool } from '../src/main/tools/bash-tool'
import { buildBwrapArgs } from '../src/main/tools/sandbox/bwrap-args'
import { CallCgroup } from '../src/main/tools/sandbox/resource-cgroups'
import { resolveResourceLimits, tmpfsSizes, ulimitPrefix } from '../src/main/tools/sandbox/resource-limits'
import { sandboxProbe } from '../src/main/tools/sandbox/sandbox-probe'
import { spawnSandbox } from '../src/main/tools/sandbox/spawn-sandbox'
import type { SandboxPolicy } from '../src/main/tools/sandbox-policy'
import type { Tool } from '../src/main/tools/tool'
import type { Entry } from '../src/shared/entry'
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

// ---------------------------------------------------------------- a. per-step overhead

const TOOL_TURNS = 200

interface StepRun {
  totalMs: number
  steps: number
  entries: number
  provider: Meter
  tool: Meter
  append: Meter
  open: Meter
  appendOneMs: number
}

/** One long turn: TOOL_TURNS model calls each calling the no-op tool, then a final answer. */
async function stepRun (): Promise<StepRun> {
  const history = openStore(await freshDir('agent'))
  await history.ready()
  const provider = new Meter()
  const tool = new Meter()
  const append = new Meter()
  const open = new Meter()

  const noop: Tool = {
    name: 'noop',
    description: 'does nothing',
    parameters: { type: 'object', properties: {} },
    effect: 'read',
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
  // Time the store's own work during the turn (the agent is the only caller then).
  history.append = append.wrap(history.append.bind(history))
  history.open = open.wrap(history.open.bind(history))

  const t0 = performance.now()
  await host.start(root.id, { leaf: (user as Entry).id })
  const end = await host.wait(root.id)
  const totalMs = performance.now() - t0
  if (end !== 'done') throw new Error(`the agent ended with ${end}, expected done`)
  if (provider.calls !== TOOL_TURNS + 1 || tool.calls !== TOOL_TURNS) throw new Error(`expected ${TOOL_TURNS + 1} model and ${TOOL_TURNS} tool calls, saw ${provider.calls} and ${tool.calls}`)
  const entries = append.calls

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
  return { totalMs, steps: provider.calls + tool.calls, entries, provider, tool, append, open, appendOneMs: median(one.slice(5)) }
}

async function stepOverhead (): Promise<void> {
  const RUNS = 5
  await stepRun() // warm-up
  const runs: StepRun[] = []
  for (let i = 0; i < RUNS; i++) runs.push(await stepRun())
  const perStep = (r: StepRun, ms: number): number => ms / r.steps
  const overhead = runs.map(r => perStep(r, r.totalMs - r.provider.ms - r.tool.ms))
  const value = median(overhead)
  const appendOne = median(runs.map(r => r.appendOneMs))
  const appendPerStep = median(runs.map(r => perStep(r, r.append.ms)))
  const openPerStep = median(runs.map(r => perStep(r, r.open.ms)))
  const restPerStep = median(runs.map(r => perStep(r, r.totalMs - r.provider.ms - r.tool.ms - r.append.ms - r.open.ms)))
  const r0 = runs[0] as StepRun
  const parts: Array<[string, number]> = [
    ['history.append (journaling)', appendPerStep],
    ['history.open (each step re-opens the DAG)', openPerStep],
    ['the rest of the loop (planNext, pathTo, toIrMessages, runTool, supervisor)', restPerStep]
  ]
  const top = [...parts].sort((a, b) => b[1] - a[1])[0] as [string, number]
  emit({
    name: 'agent.step.overhead',
    value: round(value, 3),
    unit: 'ms/step',
    baseline: round(appendOne, 3),
    baselineName: 'HistoryStore.append of one entry (median of 45 sequential appends, same store)',
    ratio: round(value / appendOne),
    target: 1,
    ok: value < 1,
    steps: r0.steps,
    entriesPerStep: round(r0.entries / r0.steps),
    totalMs: round(median(runs.map(r => r.totalMs)), 1),
    providerMsPerModelStep: round(median(runs.map(r => r.provider.ms / r.provider.calls)), 3),
    toolMsPerToolStep: round(median(runs.map(r => r.tool.ms / r.tool.calls)), 4),
    appendMsPerStep: round(appendPerStep, 3),
    appendMsPerEntryInTurn: round(median(runs.map(r => r.append.ms / r.entries)), 3),
    openMsPerStep: round(openPerStep, 3),
    restMsPerStep: round(restPerStep, 3),
    dominatedBy: `${top[0]}: ${round(top[1], 3)} of ${round(value, 3)} ms/step`,
    runs: overhead.map(x => round(x, 3))
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

async function bwrapOverhead (): Promise<void> {
  const name = 'agent.bash.bwrap-overhead'
  const probe = await sandboxProbe()
  if (!probe.ok) {
    process.stdout.write(JSON.stringify({ name, skipped: probe.reason === 'missing' ? 'bwrap not installed' : `the sandbox cannot run here: ${probe.message}` }) + '\n')
    return
  }
  const RUNS = Number(process.env.ARBOR_BENCH_BWRAP_RUNS ?? 60)
  const cwd = await freshDir('bash')
  const policy: SandboxPolicy = { enabled: true, cwd, hidden: [] }
  const home = os.homedir()
  const limits = resolveResourceLimits()
  const command = ulimitPrefix(limits, 120_000, probe.limits) + 'true'
  const buildArgs = (seccomp: boolean): string[] => buildBwrapArgs({
    policy, command, env: process.env, home, disableUserns: probe.disableUserns,
    ...(probe.tmpfsSizes ? { tmpfsSizes: tmpfsSizes(limits) } : {}), ...(seccomp && probe.seccomp !== undefined ? { seccompFd: 3 } : {})
  })
  const bargs = buildArgs(false)
  const sargs = buildArgs(true)
  const bash = createBashTool({ home })

  const plain = (): Promise<number> => spawnUntilExit('bash', ['-c', 'true'], cwd)
  const bwrap = (): Promise<number> => spawnUntilExit(probe.bwrapPath, bargs, cwd)
  const seccomp = (): Promise<number> => spawnUntilExit(probe.bwrapPath, sargs, cwd, probe.seccomp)
  // everything the tool does around bwrap: make the call's cgroup, join it through the
  // launcher, the filter on fd 3, remove the cgroup after
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
  const tool = async (): Promise<number> => {
    const t0 = performance.now()
    const res = await bash.run({ command: 'true' }, { cwd, signal: new AbortController().signal, idemKey: 'bench', sandbox: policy })
    if (res.status !== 'ok') throw new Error(`the bash tool failed: ${res.output}`)
    return performance.now() - t0
  }
  const args = (): Promise<number> => {
    const t0 = performance.now()
    buildArgs(true)
    return Promise.resolve(performance.now() - t0)
  }
  const fns = [plain, bwrap, seccomp, full, tool, args]
  for (const fn of fns) await fn() // warm-up
  const out: number[][] = fns.map(() => [])
  for (let i = 0; i < RUNS; i++) for (const [j, fn] of fns.entries()) (out[j] as number[]).push(await fn())
  const [a, b, sc, f, c, build] = out.map(median) as [number, number, number, number, number, number]
  const p90 = out.map(xs => percentile(xs, 90)) as [number, number, number, number, number, number]
  const extra = f - a
  const target = 5
  emit({
    name,
    value: round(extra),
    unit: 'ms',
    baseline: round(a),
    baselineName: "spawn('bash', ['-c', 'true']) until exit",
    ratio: round(f / a),
    target,
    ok: extra <= target,
    fullMs: round(f),
    fullP90Ms: round(p90[3]),
    fullName: 'cgroup made + joined (v1: the launcher moves itself; v2: bwrap moved while it reads its filter) + bwrap (sized tmpfs, read-only /dev, --add-seccomp-fd 3 on a pipe) of the ulimit line and true + cgroup removed',
    bwrapMs: round(b),
    bwrapP90Ms: round(p90[1]),
    bwrapName: 'bwrap alone: buildBwrapArgs(...) without the filter, no cgroup',
    seccompMs: round(sc),
    seccompP90Ms: round(p90[2]),
    seccompName: 'bwrap + the seccomp filter written to fd 3',
    breakdownMs: { bwrap: round(b - a), seccomp: round(sc - b), cgroup: round(f - sc), cgroupRemoveWait: round(median(removeMs.slice(1))) },
    baselineP90Ms: round(p90[0]),
    toolMs: round(c),
    toolP90Ms: round(p90[4]),
    toolName: 'bash tool run() with the sandbox enabled (probe cached, args built, cgroup, output collected)',
    buildArgsMs: round(build, 3),
    bwrapVersion: probe.version,
    cgroup: probe.limits.cgroup ?? 'none',
    seccompProgram: probe.seccomp === undefined ? 'none' : `${probe.seccomp.length / 8} instructions`,
    loadAverage: os.loadavg().map(x => round(x)),
    runs: RUNS
  })
}

try {
  // ARBOR_BENCH_AGENT=bwrap (or step) runs one part only
  const only = process.env.ARBOR_BENCH_AGENT
  if (only === undefined || only === 'step') await stepOverhead()
  if (only === undefined || only === 'bwrap') await bwrapOverhead()
} finally {
  await fs.rm(tmp, { recursive: true, force: true })
}
