/**
 * A cgroup per sandboxed bash call (resource-limits.ts says why): found, made, read and
 * removed here. Two ways to get a place to make them:
 * - cgroup v1 (this build machine, older or container setups): child cgroups of our own
 *   cgroup in the pids, memory and cpuacct hierarchies, where those are writable (root);
 * - cgroup v2 (Debian 12, Ubuntu ≥ 21.10, Fedora ≥ 31): a systemd user scope with
 *   Delegate=yes, made once per process with `systemd-run --user --scope`, kept by a tiny
 *   keeper process that exits when we do. Its directory is ours: the keeper moves into a
 *   leaf, the controllers are enabled below, and each call gets a sibling cgroup.
 * The bash tool's launcher (`/bin/sh`, before exec'ing bwrap) writes its own pid into the
 * call's cgroup.procs files, so bwrap and everything under it start inside; the sandbox
 * sees /sys/fs/cgroup read-only and cannot move out. After the call, leftovers are killed
 * and the cgroup is removed.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { defaultResourceLimits, parseProcLimits, type LimitEnforcement, type LimitEvents, type ResourceLimits } from './resource-limits'

export interface CgroupMount { mountPoint: string; root: string; fstype: 'cgroup' | 'cgroup2'; options: string[] }
export interface ProcCgroup { id: string; controllers: string[]; path: string }

/** cgroup mounts from /proc/self/mountinfo. Pure. */
export function parseCgroupMounts (mountinfo: string): CgroupMount[] {
  const out: CgroupMount[] = []
  for (const line of mountinfo.split('\n')) {
    const [pre, post] = line.split(' - ')
    if (pre === undefined || post === undefined) continue
    const f = pre.split(' ')
    const [fstype, , superOpts] = post.split(' ')
    if (fstype !== 'cgroup' && fstype !== 'cgroup2') continue
    const unescape = (s: string): string => s.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)))
    out.push({ mountPoint: unescape(f[4] ?? ''), root: unescape(f[3] ?? '/'), fstype, options: (superOpts ?? '').split(',') })
  }
  return out
}

/** /proc/self/cgroup: `id:controllers:path` per hierarchy. Pure. */
export function parseProcCgroup (text: string): ProcCgroup[] {
  return text.split('\n').filter(l => l !== '').map(l => {
    const a = l.indexOf(':')
    const b = l.indexOf(':', a + 1)
    return { id: l.slice(0, a), controllers: l.slice(a + 1, b).split(',').filter(c => c !== ''), path: l.slice(b + 1) }
  })
}

/** Our own cgroup directory for a v1 controller, or undefined. Pure. */
export function v1Dir (controller: string, mounts: CgroupMount[], own: ProcCgroup[]): string | undefined {
  const m = mounts.find(x => x.fstype === 'cgroup' && x.options.includes(controller))
  const p = own.find(x => x.controllers.includes(controller))
  if (m === undefined || p === undefined) return undefined
  if (!(p.path === m.root || p.path.startsWith(m.root === '/' ? '/' : m.root + '/'))) return undefined // outside what this mount shows
  return path.normalize(path.join(m.mountPoint, m.root === '/' ? p.path : p.path.slice(m.root.length))).replace(/(.)\/$/, '$1')
}

export type CgroupBase =
  | { version: 1; pids?: string; memory?: string; cpuacct?: string }
  | { version: 2; dir: string; controllers: string[] }

export interface CgroupFound { base?: CgroupBase; problem?: string }

const read = (f: string): string | undefined => { try { return fs.readFileSync(f, 'utf8') } catch { return undefined } }
const errText = (e: unknown): string => (e instanceof Error ? e.message : String(e))

function tryMkdir (parent: string): string | undefined {
  const probe = path.join(parent, `arbor-probe-${process.pid}`)
  try {
    fs.mkdirSync(probe)
    fs.rmdirSync(probe)
    return undefined
  } catch (e) {
    return errText(e)
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Empty call cgroups of Arbor processes that died mid-call (rmdir fails on a busy one). */
function removeStale (dir: string): void {
  let names: string[]
  try { names = fs.readdirSync(dir) } catch { return }
  for (const n of names) {
    const m = /^arbor-(?:probe-)?(\d+)(?:-\d+)?$/.exec(n)
    if (m === null || Number(m[1]) === process.pid || alive(Number(m[1]))) continue
    try { fs.rmdirSync(path.join(dir, n)) } catch { /* still busy, or not ours to remove */ }
  }
}

/** v1 hierarchies we may make children in. */
function findV1 (mounts: CgroupMount[], own: ProcCgroup[]): CgroupFound {
  const base: CgroupBase = { version: 1 }
  const problems: string[] = []
  for (const c of ['pids', 'memory', 'cpuacct'] as const) {
    const dir = v1Dir(c, mounts, own)
    if (dir === undefined) continue
    const bad = tryMkdir(dir)
    if (bad === undefined) {
      base[c] = dir
      removeStale(dir)
    } else problems.push(`${c}: ${bad}`)
  }
  if (base.pids === undefined && base.memory === undefined) return { problem: `cgroup v1: ${problems.length > 0 ? problems.join('; ') : 'no pids or memory hierarchy'}` }
  return { base, ...(problems.length > 0 ? { problem: problems.join('; ') } : {}) }
}

let keeper: ChildProcess | undefined

/** A delegated systemd user scope for this process's calls (cgroup v2). */
async function findV2 (mount: CgroupMount, timeoutMs: number): Promise<CgroupFound> {
  const unit = `arbor-sandbox-${process.pid}-${Date.now().toString(36)}`
  // The keeper exits when its stdin closes, i.e. when this process is gone; systemd then
  // removes the scope and our cgroups under it.
  const child = spawn('systemd-run', ['--user', '--scope', '--quiet', '--collect', '-p', 'Delegate=yes', `--unit=${unit}`, '--', '/bin/sh', '-c', 'read _ ; exit 0'],
    { stdio: ['pipe', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr?.on('data', (b: Buffer) => { stderr += b.toString() })
  const failed = new Promise<string>(resolve => {
    child.on('error', e => resolve(errText(e)))
    child.on('exit', code => resolve(`systemd-run exited with ${code}${stderr.trim() === '' ? '' : `: ${stderr.trim()}`}`))
  })
  const deadline = Date.now() + timeoutMs
  let scopePath: string | undefined
  while (Date.now() < deadline && scopePath === undefined) {
    const why = await Promise.race([failed, new Promise<undefined>(resolve => setTimeout(resolve, 10))])
    if (why !== undefined) return { problem: `cgroup v2: could not get a delegated systemd scope (${why})` }
    const own = child.pid === undefined ? undefined : read(`/proc/${child.pid}/cgroup`)
    const p = own === undefined ? undefined : parseProcCgroup(own).find(x => x.id === '0')?.path
    if (p?.endsWith(`/${unit}.scope`) === true) scopePath = p
  }
  if (scopePath === undefined) {
    child.kill('SIGKILL')
    return { problem: `cgroup v2: systemd-run did not start a scope within ${timeoutMs} ms` }
  }
  const dir = path.join(mount.mountPoint, mount.root === '/' ? scopePath : scopePath.slice(mount.root.length))
  try {
    // "no internal processes": the keeper leaves the scope's top so controllers can be enabled below it
    fs.mkdirSync(path.join(dir, 'keeper'))
    fs.writeFileSync(path.join(dir, 'keeper', 'cgroup.procs'), String(child.pid))
    const available = (read(path.join(dir, 'cgroup.controllers')) ?? '').trim().split(/\s+/)
    const want = ['pids', 'memory', 'cpu'].filter(c => available.includes(c))
    if (want.length > 0) fs.writeFileSync(path.join(dir, 'cgroup.subtree_control'), want.map(c => `+${c}`).join(' '))
    child.unref()
    ;(child.stdin as unknown as { unref?: () => void } | null)?.unref?.()
    keeper = child
    return { base: { version: 2, dir, controllers: want } }
  } catch (e) {
    child.kill('SIGKILL')
    return { problem: `cgroup v2: the delegated scope ${dir} could not be set up (${errText(e)})` }
  }
}

/** Where this process can make per-call cgroups, or why it cannot. */
export async function findCgroupBase (opts: { timeoutMs?: number } = {}): Promise<CgroupFound> {
  const mounts = parseCgroupMounts(read('/proc/self/mountinfo') ?? '')
  const own = parseProcCgroup(read('/proc/self/cgroup') ?? '')
  if (mounts.length === 0) return { problem: 'no cgroup file system is mounted' }
  const v1 = mounts.some(m => m.fstype === 'cgroup' && (m.options.includes('pids') || m.options.includes('memory')))
  if (v1) return findV1(mounts, own)
  const v2 = mounts.find(m => m.fstype === 'cgroup2')
  if (v2 === undefined) return { problem: 'no pids or memory cgroup controller is mounted' }
  if (keeper !== undefined && keeper.exitCode === null) keeper.kill('SIGKILL')
  return findV2(v2, opts.timeoutMs ?? 3000)
}

let calls = 0

function writeFile (f: string, v: string): void {
  fs.writeFileSync(f, v)
}

function counter (text: string | undefined, key: string): number | undefined {
  if (text === undefined) return undefined
  const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(text)
  return m === null ? undefined : Number(m[1])
}

/** One call's cgroup(s): made before the spawn, read and removed after. */
export class CallCgroup {
  /** the files another process writes a pid to (cgroup.procs) */
  readonly procsFiles: string[]
  /**
   * The files the launcher writes "0" to, moving itself: v1's `tasks` (one thread moving
   * itself skips the global threadgroup lock, whose RCU grace period costs 10+ ms per call;
   * kernel/cgroup/cgroup.c cgroup_procs_write_start), v2's cgroup.procs (no such shortcut).
   */
  readonly selfJoinFiles: string[]
  private readonly dirs: string[]

  private constructor (readonly base: CgroupBase, dirs: string[], private readonly files: { pids?: string; memory?: string; cpu?: string }) {
    this.dirs = dirs
    this.procsFiles = dirs.map(d => path.join(d, 'cgroup.procs'))
    this.selfJoinFiles = dirs.map(d => path.join(d, base.version === 1 ? 'tasks' : 'cgroup.procs'))
  }

  /** Whether a launcher joining by itself is the cheaper way in (v1), or moving bwrap from outside (v2). */
  get joinsBySelf (): boolean { return this.base.version === 1 }

  /** Makes the cgroup with the limits set; on failure removes what it made and throws. */
  static create (base: CgroupBase, l: ResourceLimits): CallCgroup {
    const name = `arbor-${process.pid}-${++calls}`
    const made: string[] = []
    try {
      if (base.version === 2) {
        const dir = path.join(base.dir, name)
        fs.mkdirSync(dir)
        made.push(dir)
        if (base.controllers.includes('pids')) writeFile(path.join(dir, 'pids.max'), String(l.processes))
        if (base.controllers.includes('memory')) {
          writeFile(path.join(dir, 'memory.max'), String(l.memoryBytes))
          // no swapping: the limit is the whole footprint, and a hog does not thrash the desktop's swap
          if (fs.existsSync(path.join(dir, 'memory.swap.max'))) writeFile(path.join(dir, 'memory.swap.max'), '0')
        }
        return new CallCgroup(base, made, {
          ...(base.controllers.includes('pids') ? { pids: dir } : {}),
          ...(base.controllers.includes('memory') ? { memory: dir } : {}),
          cpu: dir
        })
      }
      const files: { pids?: string; memory?: string; cpu?: string } = {}
      if (base.pids !== undefined) {
        const dir = path.join(base.pids, name)
        fs.mkdirSync(dir)
        made.push(dir)
        writeFile(path.join(dir, 'pids.max'), String(l.processes))
        files.pids = dir
      }
      if (base.memory !== undefined) {
        const dir = path.join(base.memory, name)
        fs.mkdirSync(dir)
        made.push(dir)
        writeFile(path.join(dir, 'memory.limit_in_bytes'), String(l.memoryBytes))
        const memsw = path.join(dir, 'memory.memsw.limit_in_bytes')
        if (fs.existsSync(memsw)) writeFile(memsw, String(l.memoryBytes))
        files.memory = dir
      }
      if (base.cpuacct !== undefined) {
        const dir = path.join(base.cpuacct, name)
        fs.mkdirSync(dir)
        made.push(dir)
        files.cpu = dir
      }
      return new CallCgroup(base, made, files)
    } catch (e) {
      for (const d of made.reverse()) { try { fs.rmdirSync(d) } catch { /* reported below */ } }
      throw new Error(`could not make the call's cgroup: ${errText(e)}`, { cause: e })
    }
  }

  get paths (): readonly string[] { return this.dirs }

  /**
   * Moves a process in, before it has forked: a bwrap still reading its seccomp program
   * from fd 3 (it reads it while parsing arguments, before any clone). Throws why not.
   */
  async joinAsync (pid: number): Promise<void> {
    try {
      for (const f of this.procsFiles) await fs.promises.writeFile(f, String(pid))
    } catch (e) {
      throw new Error(`could not place the command in its cgroup: ${errText(e)}`, { cause: e })
    }
  }

  /** CPU time used by all of the call's processes so far, or undefined without accounting. */
  cpuUsageMs (): number | undefined {
    const d = this.files.cpu
    if (d === undefined) return undefined
    if (this.base.version === 2) {
      const us = counter(read(path.join(d, 'cpu.stat')), 'usage_usec')
      return us === undefined ? undefined : us / 1000
    }
    const ns = read(path.join(d, 'cpuacct.usage'))
    return ns === undefined ? undefined : Number(ns.trim()) / 1e6
  }

  events (): LimitEvents {
    const ev: LimitEvents = {}
    if (this.files.pids !== undefined) {
      const n = counter(read(path.join(this.files.pids, 'pids.events')), 'max')
      if (n !== undefined) ev.pidsMax = n
    }
    if (this.files.memory !== undefined) {
      const m = this.files.memory
      const text = this.base.version === 2 ? read(path.join(m, 'memory.events')) : read(path.join(m, 'memory.oom_control'))
      const kills = counter(text, 'oom_kill')
      if (kills !== undefined) ev.oomKills = kills
      const max = this.base.version === 2 ? counter(text, 'max') : Number(read(path.join(m, 'memory.failcnt'))?.trim() ?? NaN)
      if (max !== undefined && !Number.isNaN(max)) ev.memoryMax = max
    }
    return ev
  }

  /** Pids still in the call's cgroup. */
  members (): number[] {
    const d = this.dirs[0]
    if (d === undefined) return []
    return (read(path.join(d, 'cgroup.procs')) ?? '').split('\n').filter(s => s !== '').map(Number)
  }

  /**
   * Kills whatever is left (a process that made bwrap's init outlive it would be), then
   * removes the cgroup; waits, bounded, for the last exits. Throws if it could not.
   */
  async remove (timeoutMs = 3000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    const kill = this.dirs[0] === undefined ? undefined : path.join(this.dirs[0], 'cgroup.kill')
    let pending = [...this.dirs]
    let delay = 1
    for (;;) {
      const left = this.members()
      if (left.length > 0) {
        if (this.base.version === 2 && kill !== undefined && fs.existsSync(kill)) { try { writeFile(kill, '1') } catch { /* fall back to signals */ } }
        for (const pid of left) { try { process.kill(pid, 'SIGKILL') } catch { /* gone already */ } }
      }
      pending = pending.filter(d => {
        try {
          fs.rmdirSync(d)
          return false
        } catch (e) {
          return (e as NodeJS.ErrnoException).code !== 'ENOENT'
        }
      })
      if (pending.length === 0) return
      if (Date.now() >= deadline) throw new Error(`the call's cgroup ${pending.join(', ')} could not be removed within ${timeoutMs} ms (still in it: ${this.members().join(' ') || 'nothing listed'})`)
      await new Promise(resolve => setTimeout(resolve, delay))
      delay = Math.min(delay * 2, 50)
    }
  }
}

/**
 * The launcher: `/bin/sh -c SCRIPT arbor-sandbox FILE... -- bwrap ARGS...` moves itself
 * into every cgroup (writing "0": itself), then becomes bwrap, so nothing of the call starts outside.
 */
export const LAUNCHER_SCRIPT = 'for f do [ "$f" = -- ] && break; echo 0 > "$f" || { echo "arbor: could not place the command in its cgroup $f" >&2; exit 125; }; shift; done; shift; exec "$@"'

export function launcherArgv (procsFiles: readonly string[], file: string, args: readonly string[]): { file: string; args: string[] } {
  return { file: '/bin/sh', args: ['-c', LAUNCHER_SCRIPT, 'arbor-sandbox', ...procsFiles, '--', file, ...args] }
}

/** Linux ≥ 5.14 counts RLIMIT_NPROC per user namespace (ucounts), i.e. per sandbox. Pure. */
export function kernelCountsNprocPerNamespace (release: string): boolean {
  const m = /^(\d+)\.(\d+)/.exec(release)
  if (m === null) return false
  const [maj, min] = [Number(m[1]), Number(m[2])]
  return maj > 5 || (maj === 5 && min >= 14)
}

function runCapture (file: string, args: string[], timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise(resolve => {
    let out = ''
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.stdout.on('data', (b: Buffer) => { out += b.toString() })
    child.stderr.on('data', (b: Buffer) => { out += b.toString() })
    child.on('error', e => { clearTimeout(timer); resolve({ code: null, out: errText(e) }) })
    child.on('close', code => { clearTimeout(timer); resolve({ code, out }) })
  })
}

export interface LimitProbe { enforcement: LimitEnforcement; base?: CgroupBase }

/**
 * What this machine can enforce: a per-call cgroup (made, joined by the launcher for real,
 * removed), RLIMIT_NPROC per sandbox (not root, Linux ≥ 5.14), and the inherited hard limits.
 */
export async function probeLimitEnforcement (opts: {
  cgroups?: boolean
  uid?: number
  release?: string
  timeoutMs?: number
  /** runs a process placed in `cg` that prints its /proc/self/cgroup (default: the launcher running cat) */
  placed?: (cg: CallCgroup) => Promise<{ code: number | null; out: string }>
} = {}): Promise<LimitProbe> {
  const uid = opts.uid ?? process.getuid?.()
  const enforcement: LimitEnforcement = {
    nprocRlimit: uid !== 0 && kernelCountsNprocPerNamespace(opts.release ?? os.release()),
    inherited: parseProcLimits(read('/proc/self/limits') ?? '')
  }
  if (opts.cgroups === false) return { enforcement: { ...enforcement, cgroupProblem: 'cgroups are turned off in the bash tool\'s options' } }
  const found = await findCgroupBase({ timeoutMs: opts.timeoutMs })
  const base = found.base
  if (base === undefined) return { enforcement: { ...enforcement, cgroupProblem: found.problem ?? 'none found' } }
  // Join one for real, as the bash tool will.
  let cg: CallCgroup
  try {
    cg = CallCgroup.create(base, defaultResourceLimits())
  } catch (e) {
    return { enforcement: { ...enforcement, cgroupProblem: errText(e) } }
  }
  const l = launcherArgv(cg.selfJoinFiles, '/bin/cat', ['/proc/self/cgroup'])
  const r = await (opts.placed ?? (() => runCapture(l.file, l.args, opts.timeoutMs ?? 3000)))(cg)
  const name = path.basename(cg.paths[0] ?? '')
  try {
    await cg.remove()
  } catch (e) {
    return { enforcement: { ...enforcement, cgroupProblem: errText(e) } }
  }
  // every hierarchy we made one in must show it (a process left outside any would escape that limit)
  const shown = parseProcCgroup(r.out).filter(x => x.path.endsWith(`/${name}`)).flatMap(x => x.controllers)
  const wanted = base.version === 2 ? [] : (['pids', 'memory', 'cpuacct'] as const).filter(c => base[c] !== undefined)
  const inV2 = base.version === 2 && parseProcCgroup(r.out).some(x => x.id === '0' && x.path.endsWith(`/${name}`))
  if (r.code !== 0 || (base.version === 2 ? !inV2 : wanted.some(c => !shown.includes(c)))) {
    return { enforcement: { ...enforcement, cgroupProblem: `a process could not join the call's cgroup (${r.out.trim().split('\n').slice(-1)[0] ?? `exit ${r.code}`})` } }
  }
  const cgroup = base.version === 2
    ? { version: 2 as const, pids: base.controllers.includes('pids'), memory: base.controllers.includes('memory'), cpuAccounting: true }
    : { version: 1 as const, pids: base.pids !== undefined, memory: base.memory !== undefined, cpuAccounting: base.cpuacct !== undefined }
  return { enforcement: { ...enforcement, cgroup, ...(found.problem !== undefined ? { cgroupProblem: found.problem } : {}) }, base }
}
