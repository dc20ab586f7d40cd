/**
 * The `bash` tool: `bash -c COMMAND` inside a bubblewrap sandbox (sandbox/bwrap-args.ts):
 * writes confined to the working directory, no network, hidden credentials, own PID
 * namespace. Output streams to ctx.onOutput and comes back through the output limit.
 * Cancel or timeout kills the whole sandbox: SIGKILL to bwrap's process group, and
 * --die-with-parent plus the PID namespace take everything started inside with it.
 * Every sandboxed call runs under the seccomp filter (sandbox/seccomp.ts) and the resource
 * limits (sandbox/resource-limits.ts: its own cgroup where possible, rlimits, sized tmpfs);
 * a limit the call ran into is said in its result. After a call, the next one's sandbox is
 * set up ahead (sandbox/spare-sandbox.ts) and used only if that call's own plan matches it.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Readable } from 'node:stream'
import { StringDecoder } from 'node:string_decoder'
import { OutputAccumulator, type OutputLimits } from './output-limit'
import { isSecretEnvName, planSandbox, SandboxPolicyError, sandboxEnv, type BwrapArgsInput } from './sandbox/bwrap-args'
import { GitScanner, guardReportText, type GuardReport } from './sandbox/git-scan'
import { CallCgroup } from './sandbox/resource-cgroups'
import { cpuLimitReason, cpuTimeMsFor, limitNotes, resolveResourceLimits, tmpfsSizes, ulimitPrefix, type ResourceLimits } from './sandbox/resource-limits'
import { sandboxProbe, type ProbeOptions, type SandboxProbe } from './sandbox/sandbox-probe'
import { SECCOMP_FD, spawnSandbox } from './sandbox/spawn-sandbox'
import { SPARE_WAITER, spareCanRun, spareKey, spareSandboxes, type Spare } from './sandbox/spare-sandbox'
import { abortWords, argsObject, effectiveTimeout, timeoutReason, validateArgs } from './tool-args'
import type { Tool, ToolContext, ToolResult } from './tool'

export interface BashToolOptions {
  /** the bwrap executable (default 'bwrap' on PATH) */
  bwrapPath?: string
  /** home for the default hidden set and HOME inside (default os.homedir()) */
  home?: string
  /** Arbor's data directory, hidden */
  dataDir?: string
  /** the machine's accounts, whose homes the working directory must not reach (default /etc/passwd) */
  passwdFile?: string
  /** environment to take PATH, LANG, ... from (default process.env) */
  env?: Record<string, string | undefined>
  limits?: OutputLimits
  /** default 120 s; a call may ask for up to maxTimeoutMs (default 10 min) */
  timeoutMs?: number
  maxTimeoutMs?: number
  /** the sandbox check (default: sandboxProbe, once per process) */
  probe?: (opts: ProbeOptions) => Promise<SandboxProbe>
  /** processes, memory, CPU time and tmpfs sizes of one call (sandbox/resource-limits.ts for the defaults) */
  resourceLimits?: Partial<ResourceLimits>
  /** a cgroup per call where the machine allows (default true); false: rlimits and tmpfs sizes only */
  cgroups?: boolean
  /** set up the next call's sandbox after each call (sandbox/spare-sandbox.ts; default true) */
  spares?: boolean
}

export const UNSANDBOXED_WARNING = '[warning: the sandbox is off for this conversation; this command ran without it, with all of your user\'s access]'

/** After the command exits, how long to wait for stragglers holding its output open (no sandbox). */
const CLOSE_GRACE_MS = 200

function killGroup (pid: number | undefined): void {
  if (pid === undefined) return
  try { process.kill(-pid, 'SIGKILL') } catch { /* already gone */ }
}

/**
 * A git repository in the working directory gets a hooks directory (as `git init` makes),
 * so the sandbox can mount it read-only: otherwise a command could create it and plant a
 * hook that runs on the host at the next commit.
 */
function ensureGitHooksDir (cwd: string): void {
  try {
    if (fs.lstatSync(path.join(cwd, '.git')).isDirectory()) fs.mkdirSync(path.join(cwd, '.git', 'hooks'), { recursive: true })
  } catch { /* no repository, or not ours to fix: nothing to protect then */ }
}

interface Spawned {
  file: string
  args: string[]
  env: Record<string, string>
  cwd: string
  sandboxed: boolean
  /** the seccomp program bwrap reads on fd 3 */
  seccomp?: Buffer
  /** the call's cgroup, joined before bwrap forks, removed after the call */
  cgroup?: CallCgroup
  limits?: { resources: ResourceLimits; cpuTimeMs: number }
  /** a sandbox set up ahead for this plan: it gets the command (the last of args) instead of a spawn */
  spare?: Spare
}

/** One walk cache per home for the whole process: every agent's calls in a directory share it. */
const scanners = new Map<string, GitScanner>()
function scannerFor (home: string): GitScanner {
  let s = scanners.get(home)
  if (s === undefined) scanners.set(home, s = new GitScanner({ home }))
  return s
}

export function createBashTool (opts: BashToolOptions = {}): Tool {
  const env = opts.env ?? process.env
  const home = opts.home ?? os.homedir()
  const probe = opts.probe ?? sandboxProbe
  const resources = resolveResourceLimits(opts.resourceLimits)
  const useSpares = opts.spares !== false
  const tool: Tool = {
    name: 'bash',
    description: 'Run a bash command in the working directory, in a sandbox: it can write only inside the working directory ' +
      '(and a private /tmp), has no network access, and cannot see credentials. Returns the combined stdout and stderr and the exit code. ' +
      'Background processes are killed when the command ends.',
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'the bash command line' },
        timeoutMs: { type: 'integer', minimum: 1, description: `time limit in milliseconds (default ${opts.timeoutMs ?? 120_000}, at most ${opts.maxTimeoutMs ?? 600_000})` }
      },
      required: ['command'],
      additionalProperties: false
    },
    effect: 'workspace',
    timeoutMs: opts.timeoutMs ?? 120_000,
    maxTimeoutMs: opts.maxTimeoutMs ?? 600_000,
    async run (args, ctx) {
      const bad = validateArgs(tool.parameters, args)
      if (bad !== undefined) return { status: 'error', output: bad }
      const command = argsObject(args).command as string
      if (ctx.signal.aborted) return { status: 'error', output: `[${abortWords(ctx.signal)}; the command did not run]` }

      let spec: Spawned
      let warning: string | undefined
      if (!ctx.sandbox.enabled) {
        warning = UNSANDBOXED_WARNING
        const plainEnv: Record<string, string> = {}
        for (const [k, v] of Object.entries(env)) if (v !== undefined && !isSecretEnvName(k)) plainEnv[k] = v
        spec = { file: 'bash', args: ['-c', command], env: plainEnv, cwd: ctx.cwd, sandboxed: false }
      } else {
        const p = await probe({ bwrapPath: opts.bwrapPath, env, ...(opts.cgroups === false ? { cgroups: false } : {}) })
        if (!p.ok) return { status: 'error', output: `The command did not run: ${p.message}` }
        ensureGitHooksDir(ctx.sandbox.cwd)
        const cpuTimeMs = cpuTimeMsFor(resources, effectiveTimeout(tool, args))
        let guard: { finish: () => Promise<GuardReport> }
        let gitProblems: string[]
        const input = (cmd: string): BwrapArgsInput => ({
          policy: ctx.sandbox,
          command: cmd,
          env,
          home,
          dataDir: opts.dataDir,
          passwdFile: opts.passwdFile,
          chdir: ctx.cwd,
          disableUserns: p.disableUserns,
          ...(p.tmpfsSizes ? { tmpfsSizes: tmpfsSizes(resources) } : {}),
          ...(p.seccomp !== undefined ? { seccompFd: SECCOMP_FD } : {})
        })
        // the limits a spare's cgroup was made with are part of what it must match
        const limitsKey = { cgroup: p.cgroupBase !== undefined, processes: resources.processes, memoryBytes: resources.memoryBytes }
        let slot: string
        let mounted: string[]
        let sandboxCwd: string
        try {
          const plan = planSandbox(input(ulimitPrefix(resources, cpuTimeMs, p.limits) + command))
          spec = { file: p.bwrapPath, args: plan.args, env: sandboxEnv(env, home), cwd: '/', sandboxed: true, limits: { resources, cpuTimeMs } }
          if (p.seccomp !== undefined) spec.seccomp = p.seccomp
          gitProblems = plan.git.problems
          slot = `${p.bwrapPath}\0${plan.cwd}`
          mounted = plan.mounted
          sandboxCwd = plan.cwd
          guard = await scannerFor(home).begin(plan.cwd, plan.git, plan.hidden)
        } catch (e) {
          if (e instanceof SandboxPolicyError) return { status: 'error', output: `The command did not run: ${e.message}` }
          throw e
        }
        // a command that cannot be an argument (a NUL, too long) fails as a fresh spawn does
        const spare = useSpares && spareCanRun(spec.args[spec.args.length - 1] as string) ? spareSandboxes.take(slot, spareKey(spec.file, spec.args, spec.env, limitsKey), mounted) : undefined
        // from here until the check after the call, this directory's spares are out of date
        const left = spareSandboxes.enter(sandboxCwd)
        if (spare !== undefined) {
          spec.spare = spare
          if (spare.cgroup !== undefined) spec.cgroup = spare.cgroup
        } else if (p.cgroupBase !== undefined) {
          try {
            spec.cgroup = CallCgroup.create(p.cgroupBase, resources)
          } catch (e) {
            await guard.finish() // nothing ran: the walk only closes its books
            left()
            return { status: 'error', output: `The command did not run: ${(e as Error).message}` }
          }
        }
        let result: ToolResult
        let said: string
        try {
          result = await runSpawned(spec, effectiveTimeout(tool, args), ctx, opts.limits, warning)
          // after the sandbox is gone: what it left for the host's git to run is moved aside, and said
          said = [guardReportText(await guard.finish()), ...gitProblems.map(pr => `[git guard: ${pr}; settings there are not protected]`)].filter(t => t !== '').join('\n')
        } finally {
          left()
        }
        // the next call's sandbox, planned from what this call left
        if (useSpares && !ctx.signal.aborted) {
          const base = p.cgroupBase
          const spareEnv = sandboxEnv(env, home)
          spareSandboxes.prepareSoon(sandboxCwd, () => {
            ensureGitHooksDir(ctx.sandbox.cwd)
            const next = planSandbox(input(SPARE_WAITER))
            return {
              slot,
              cwd: next.cwd,
              key: spareKey(p.bwrapPath, next.args, spareEnv, limitsKey),
              mounted: next.mounted,
              file: p.bwrapPath,
              args: next.args,
              env: spareEnv,
              ...(p.seccomp !== undefined ? { seccomp: p.seccomp } : {}),
              ...(base !== undefined ? { cgroup: () => CallCgroup.create(base, resources) } : {})
            }
          })
        }
        if (said === '') return result
        ctx.onOutput?.(said + '\n')
        return { ...result, output: `${result.output}\n${said}` }
      }
      return runSpawned(spec, effectiveTimeout(tool, args), ctx, opts.limits, warning)
    }
  }
  return tool
}

function runSpawned (spec: Spawned, timeoutMs: number, ctx: ToolContext, limits: OutputLimits | undefined, warning: string | undefined): Promise<ToolResult> {
  return new Promise(resolve => {
    const out = new OutputAccumulator(limits)
    const emit = (s: string): void => {
      if (s === '') return
      out.push(s)
      ctx.onOutput?.(s)
    }
    if (warning !== undefined) ctx.onOutput?.(warning + '\n')

    const child = spec.spare !== undefined
      ? spec.spare.claim()
      : spawnSandbox({
        file: spec.file,
        args: spec.args,
        stdio: ['ignore', 'pipe', 'pipe'],
        options: { cwd: spec.cwd, env: spec.env, detached: true },
        ...(spec.seccomp !== undefined ? { seccomp: spec.seccomp } : {}),
        ...(spec.cgroup !== undefined ? { cgroup: spec.cgroup } : {})
      })
    const stdout = child.stdout as Readable
    const stderr = child.stderr as Readable
    const decoders = [new StringDecoder('utf8'), new StringDecoder('utf8')] as const
    stdout.on('data', (b: Buffer) => emit(decoders[0].write(b)))
    stderr.on('data', (b: Buffer) => emit(decoders[1].write(b)))
    spec.spare?.send(spec.args[spec.args.length - 1] as string)

    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined
    let stopped: string | undefined // why we killed it
    const stop = (why: string): void => {
      if (stopped !== undefined || exit !== undefined) return
      stopped = why
      killGroup(child.pid)
    }
    const onAbort = (): void => stop(abortWords(ctx.signal))
    ctx.signal.addEventListener('abort', onAbort, { once: true })
    const timer = setTimeout(() => stop(timeoutReason(timeoutMs).message), timeoutMs)
    // CPU time of the whole call, from its cgroup: checked when it could first have run out
    let cpuTimer: ReturnType<typeof setTimeout> | undefined
    const cg = spec.cgroup
    const cpuLimit = spec.limits?.cpuTimeMs
    if (cg !== undefined && cpuLimit !== undefined && cg.cpuUsageMs() !== undefined) {
      const cores = Math.max(1, os.availableParallelism())
      const before = cg.cpuUsageMs() ?? 0 // a spare's own start-up is not the command's
      const check = (): void => {
        const used = (cg.cpuUsageMs() ?? 0) - before
        if (used >= cpuLimit) return stop(cpuLimitReason(cpuLimit))
        cpuTimer = setTimeout(check, Math.max(100, (cpuLimit - used) / cores))
      }
      cpuTimer = setTimeout(check, Math.max(100, cpuLimit / cores))
    }

    let spawnError: Error | undefined
    let grace: ReturnType<typeof setTimeout> | undefined
    let settled = false
    const finish = (): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      if (cpuTimer !== undefined) clearTimeout(cpuTimer)
      if (grace !== undefined) clearTimeout(grace)
      ctx.signal.removeEventListener('abort', onAbort)
      stdout.destroy()
      stderr.destroy()
      emit(decoders[0].end())
      emit(decoders[1].end())
      const limited = out.finish()
      let trailer: string
      let exitCode: number | undefined
      if (spawnError !== undefined) trailer = `[could not start ${spec.sandboxed ? 'the sandbox' : 'bash'}: ${spawnError.message}]`
      else if (stopped !== undefined) trailer = `[${stopped}; the command and everything it started were killed]`
      else if (exit?.code !== null && exit?.code !== undefined) {
        exitCode = exit.code
        trailer = `[exit code ${exit.code}]`
      } else trailer = `[killed by ${exit?.signal ?? 'a signal'}]`
      const notes = spec.limits === undefined ? [] : limitNotes(spec.limits.resources, cg?.events() ?? {}, exitCode, spec.limits.cpuTimeMs)
      const done = (more: string[]): void => {
        const parts = [warning, limited.text === '' ? undefined : limited.text.replace(/\n$/, ''), ...notes, ...more, trailer]
        const result: ToolResult = { status: exitCode === 0 ? 'ok' : 'error', output: parts.filter(p => p !== undefined).join('\n') }
        if (limited.truncated) result.truncated = true
        if (exitCode !== undefined) result.exitCode = exitCode
        resolve(result)
      }
      // The result waits for the cgroup's removal, so nothing of the call is left when it returns.
      if (cg === undefined) done([])
      else cg.remove().then(() => done([]), (e: Error) => done([`[${e.message}]`]))
    }

    child.on('error', e => {
      spawnError = e
      finish()
    })
    child.on('exit', (code, signal) => {
      exit = { code, signal }
      // In the sandbox, everything dies with bwrap's PID namespace. Without it, background
      // jobs are in bwrap's (bash's) group: kill them too, so nothing outlives the command.
      if (!spec.sandboxed) killGroup(child.pid)
      grace = setTimeout(finish, spec.sandboxed ? 2000 : CLOSE_GRACE_MS)
    })
    child.on('close', finish)
  })
}
