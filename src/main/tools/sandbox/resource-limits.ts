/**
 * Resource limits of one sandboxed bash call, and how each is enforced on this machine:
 * the defaults, the tmpfs sizes bwrap mounts with, the `ulimit` line the sandboxed shell
 * runs first, what the cgroup probe could and could not enforce (in words, for the bash
 * tool's first-call warnings), and the words for a limit the call ran into. Pure; the
 * cgroup I/O lives in resource-cgroups.ts.
 *
 * Mechanisms, strongest first:
 * - a cgroup per call (v2 through a systemd-delegated scope, or v1 where the pids and
 *   memory hierarchies are writable): tasks and memory (tmpfs pages included) of the whole
 *   call, CPU time summed over its processes (polled by the bash tool);
 * - rlimits set inside the sandbox: RLIMIT_NPROC (counted per user namespace since Linux
 *   5.14, so per call; ignored by the kernel for the real root user), RLIMIT_CPU per process,
 *   and RLIMIT_DATA per process when no memory cgroup exists;
 * - tmpfs sizes (bwrap --size) for /tmp, /dev/shm and /run; /dev itself is read-only.
 */
import os from 'node:os'

export const MiB = 1024 * 1024
export const GiB = 1024 * MiB

export interface ResourceLimits {
  /** tasks (processes and threads) of one call at once */
  processes: number
  /** memory of one call: its processes and what they keep in its tmpfs mounts */
  memoryBytes: number
  /** CPU time of one call, all of its processes together; unset: the call's time limit */
  cpuTimeMs?: number
  /** sizes of the sandbox's private tmpfs mounts */
  tmpBytes: number
  shmBytes: number
  runBytes: number
}

/**
 * Defaults a user should not notice in normal work but that keep a runaway command from
 * taking the machine down:
 * - 512 tasks: a parallel build or a JVM uses tens to a couple of hundred; a fork bomb
 *   stops there;
 * - memory: 4 GiB, or half of the machine's memory if that is less: enough for compilers
 *   and test runners, and the rest of the desktop (and the node) keeps room;
 * - CPU time: the call's own time limit, i.e. one core busy for the whole call; a parallel
 *   build that needs more asks for a longer timeoutMs;
 * - /tmp 1 GiB, /dev/shm 256 MiB (browsers and multiprocessing need more than Docker's
 *   64 MiB), /run 16 MiB (only small runtime files go there).
 */
export function defaultResourceLimits (totalMemoryBytes: number = os.totalmem()): ResourceLimits {
  return {
    processes: 512,
    memoryBytes: Math.min(4 * GiB, Math.floor(totalMemoryBytes / 2)),
    tmpBytes: 1 * GiB,
    shmBytes: 256 * MiB,
    runBytes: 16 * MiB
  }
}

export class ResourceLimitsError extends Error {
  override name = 'ResourceLimitsError'
}

/** The defaults with `over` applied; a bad value is refused with what was wrong. */
export function resolveResourceLimits (over: Partial<ResourceLimits> = {}, totalMemoryBytes?: number): ResourceLimits {
  const out: ResourceLimits = { ...defaultResourceLimits(totalMemoryBytes) }
  for (const [k, v] of Object.entries(over) as Array<[keyof ResourceLimits, unknown]>) {
    if (v === undefined) continue
    if (!(k in out) && k !== 'cpuTimeMs') throw new ResourceLimitsError(`unknown resource limit ${k}`)
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) throw new ResourceLimitsError(`resource limit ${k} must be a positive whole number, not ${String(v)}`)
    out[k] = v
  }
  if (out.processes < 8) throw new ResourceLimitsError(`resource limit processes must be at least 8 (the sandbox itself needs a few), not ${out.processes}`)
  if (out.memoryBytes < 32 * MiB) throw new ResourceLimitsError(`resource limit memoryBytes must be at least 32 MiB, not ${out.memoryBytes}`)
  return out
}

/** bwrap's sizes for its tmpfs mounts (bwrap-args.ts). */
export interface TmpfsSizes { tmp: number; shm: number; run: number }
export const tmpfsSizes = (l: ResourceLimits): TmpfsSizes => ({ tmp: l.tmpBytes, shm: l.shmBytes, run: l.runBytes })

/** What the probe found this machine can enforce. */
export interface LimitEnforcement {
  /** the per-call cgroup, if one can be made: which controllers it has */
  cgroup?: { version: 1 | 2; pids: boolean; memory: boolean; cpuAccounting: boolean }
  /** RLIMIT_NPROC counts the sandbox's own tasks (not root, Linux ≥ 5.14) */
  nprocRlimit: boolean
  /** why no cgroup: what was tried, for the warning */
  cgroupProblem?: string
  /** hard limits the sandbox inherits from this process: ours cannot go above them */
  inherited?: InheritedLimits
}

export interface InheritedLimits { processes?: number; cpuSeconds?: number; dataBytes?: number }

/** The hard limits in /proc/self/limits (absent: unlimited). Pure. */
export function parseProcLimits (text: string): InheritedLimits {
  const hard = (label: string): number | undefined => {
    const m = new RegExp(`^${label}\\s+\\S+\\s+(\\S+)`, 'm').exec(text)
    return m === null || m[1] === 'unlimited' ? undefined : Number(m[1])
  }
  const out: InheritedLimits = {}
  const p = hard('Max processes')
  const c = hard('Max cpu time')
  const d = hard('Max data size')
  if (p !== undefined) out.processes = p
  if (c !== undefined) out.cpuSeconds = c
  if (d !== undefined) out.dataBytes = d
  return out
}

export const cpuTimeMsFor = (l: ResourceLimits, callTimeoutMs: number): number => l.cpuTimeMs ?? callTimeoutMs

/**
 * The first line of the sandboxed shell: limits no command can raise again (hard limits
 * need CAP_SYS_RESOURCE, which the sandbox has not). Set inside the sandbox, after bwrap
 * made the user namespace, so RLIMIT_NPROC counts the call's tasks only. RLIMIT_CPU: the
 * soft limit sends SIGXCPU, the hard one a second later SIGKILL.
 */
export function ulimitPrefix (l: ResourceLimits, cpuTimeMs: number, e: LimitEnforcement): string {
  const inh = e.inherited ?? {}
  const atMost = (v: number, cap: number | undefined): number => (cap === undefined ? v : Math.min(v, cap))
  const cpuHard = atMost(Math.max(1, Math.ceil(cpuTimeMs / 1000)) + 1, inh.cpuSeconds)
  const cpuS = Math.max(1, cpuHard - 1)
  const hard = [`-u ${atMost(l.processes, inh.processes)}`, `-t ${cpuHard}`]
  if (e.cgroup?.memory !== true) hard.push(`-d ${Math.floor(atMost(l.memoryBytes, inh.dataBytes) / 1024)}`)
  // one line, so the command's own line numbers stay what they were
  return `ulimit ${hard.join(' ')} && ulimit -S -t ${cpuS} || exit 125; `
}

export function formatBytes (n: number): string {
  if (n >= GiB && n % (GiB / 4) === 0) return `${n / GiB} GiB`
  if (n >= MiB) return `${Math.round(n / MiB * 10) / 10} MiB`
  return `${n} bytes`
}

export function formatSeconds (ms: number): string {
  return `${Math.round(ms / 100) / 10} s`
}

/** What was said up front about limits this machine cannot enforce. */
export function enforcementWarnings (e: LimitEnforcement, uid: number | undefined): string[] {
  const out: string[] = []
  const why = e.cgroupProblem === undefined ? '' : ` (${e.cgroupProblem})`
  const how = uid === 0
    ? 'mount the cgroup v1 pids and memory controllers writable, or run Arbor on a cgroup v2 system with systemd'
    : 'run Arbor in a systemd user session with cgroup delegation (the default on Debian 12, Ubuntu and Fedora: `systemd-run --user` must work)'
  if (e.cgroup?.pids !== true && !e.nprocRlimit) {
    out.push('The bash sandbox cannot limit the number of processes here: ' +
      (uid === 0 ? 'Arbor runs as root, for whom the kernel does not enforce RLIMIT_NPROC, ' : 'this kernel counts RLIMIT_NPROC per user, not per sandbox (Linux before 5.14), ') +
      `and no process cgroup could be made${why}. A fork bomb is stopped only by the call's time limit. To fix it, ${how}.`)
  }
  if (e.cgroup?.memory !== true) {
    out.push(`The bash sandbox limits memory per process only (RLIMIT_DATA), not for the whole call, and tmpfs files count only against their mount's size: no memory cgroup could be made${why}. To fix it, ${how}.`)
  }
  if (e.cgroup?.cpuAccounting !== true) {
    out.push('The bash sandbox limits CPU time per process (RLIMIT_CPU), not summed over the call\'s processes: no cgroup with CPU accounting could be made.')
  }
  return out
}

/** Counters read from the call's cgroup after it ended. */
export interface LimitEvents {
  /** forks refused at the process limit */
  pidsMax?: number
  /** processes the kernel killed at the memory limit */
  oomKills?: number
  /** memory usage hit the limit (v1 failcnt, v2 events max) */
  memoryMax?: number
}

/** Lines for the tool result about limits the call ran into. */
export function limitNotes (l: ResourceLimits, ev: LimitEvents, exitCode: number | undefined, cpuTimeMs: number): string[] {
  const out: string[] = []
  if ((ev.pidsMax ?? 0) > 0) {
    out.push(`[the command reached its limit of ${l.processes} processes: ${ev.pidsMax} process creations were refused (a fork bomb, or too much parallelism)]`)
  }
  if ((ev.oomKills ?? 0) > 0) {
    out.push(`[${ev.oomKills === 1 ? 'a process was' : `${ev.oomKills} processes were`} killed for exceeding the command's memory limit of ${formatBytes(l.memoryBytes)}]`)
  }
  // 128 + SIGXCPU: the shell itself ran out of CPU time (RLIMIT_CPU counts whole seconds)
  if (exitCode === 152) out.push(`[the command's shell ran out of CPU time: SIGXCPU at the per-process limit of ${Math.max(1, Math.ceil(cpuTimeMs / 1000))} s]`)
  return out
}

export const cpuLimitReason = (cpuTimeMs: number): string =>
  `the command used up its CPU time limit of ${formatSeconds(cpuTimeMs)} (the CPU time of all its processes; a longer timeoutMs gives more)`
