/**
 * Can this machine run the bash sandbox? Checked once per process (per bwrap path): bwrap
 * exists, reports its version, and can create the namespaces and mounts the bash tool uses.
 * On failure the message says what to install or which setting blocks it, so the user can
 * act on it (notes/sandbox.md, "Pitfalls").
 */
import fs from 'node:fs'
import { baseMountArgs, isolationArgs } from './bwrap-args'
import { probeLimitEnforcement, type CallCgroup, type CgroupBase } from './resource-cgroups'
import { defaultResourceLimits, enforcementWarnings, tmpfsSizes, type LimitEnforcement } from './resource-limits'
import { sandboxSeccomp } from './seccomp/seccomp'
import { SECCOMP_FD, spawnSandbox } from './spawn-sandbox'

export const MIN_SAFE_BWRAP_VERSION = '0.12.0'
/** --disable-userns appeared in 0.8.0 */
const DISABLE_USERNS_SINCE = '0.8.0'

export type SandboxProbeFailure = 'missing' | 'userns-blocked' | 'container' | 'timeout' | 'failed'

export type SandboxProbe =
  | {
    ok: true
    bwrapPath: string
    version: string | undefined
    disableUserns: boolean
    warnings: string[]
    /** the seccomp program to hand bwrap on fd 3, or undefined (no table for this processor, or bwrap refused it) */
    seccomp: Buffer | undefined
    /** bwrap accepted --size for its tmpfs mounts */
    tmpfsSizes: boolean
    limits: LimitEnforcement
    /** where the per-call cgroups go, if anywhere */
    cgroupBase?: CgroupBase
  }
  | { ok: false; bwrapPath: string; version: string | undefined; reason: SandboxProbeFailure; message: string; detail?: string }

export interface ProbeOptions {
  /** the bwrap executable (default 'bwrap', looked up on env.PATH) */
  bwrapPath?: string
  /** environment for looking bwrap up (default process.env) */
  env?: Record<string, string | undefined>
  timeoutMs?: number
  /** facts about the host, for tests (default: read from /proc) */
  facts?: HostFacts
  /** make a cgroup per call where the machine allows (default true); false: rlimits only */
  cgroups?: boolean
}

/** What explains a namespace failure. */
export interface HostFacts {
  /** /proc/sys/kernel/apparmor_restrict_unprivileged_userns (Ubuntu 23.10+) */
  apparmorRestrictsUserns?: boolean
  /** /proc/sys/kernel/unprivileged_userns_clone = 0 (older Debian kernels) */
  usernsCloneDisabled?: boolean
  /** /proc/sys/user/max_user_namespaces = 0 */
  maxUserNamespacesZero?: boolean
  /** /.dockerenv, /run/.containerenv or a container cgroup */
  container?: string
  /** CAP_SYS_ADMIN in this process's effective set */
  capSysAdmin?: boolean
  uid?: number
}

export function parseBwrapVersion (out: string): string | undefined {
  return /(\d+\.\d+(?:\.\d+)?)/.exec(out)?.[1]
}

/** -1, 0, 1 like a comparator; missing parts count as 0 */
export function compareVersions (a: string, b: string): number {
  const pa = a.split('.').map(Number)
  const pb = b.split('.').map(Number)
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0)
    if (d !== 0) return d < 0 ? -1 : 1
  }
  return 0
}

export function installMessage (bwrapPath: string): string {
  const where = bwrapPath.includes('/') ? ` at ${bwrapPath}` : ' on PATH'
  return `The bash tool runs commands in a bubblewrap sandbox, but bwrap was not found${where}. ` +
    'Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap), ' +
    'or turn the sandbox off for this conversation.'
}

function readTrim (file: string): string | undefined {
  try { return fs.readFileSync(file, 'utf8').trim() } catch { return undefined }
}

export function readHostFacts (): HostFacts {
  const facts: HostFacts = { uid: process.getuid?.() }
  facts.apparmorRestrictsUserns = readTrim('/proc/sys/kernel/apparmor_restrict_unprivileged_userns') === '1'
  facts.usernsCloneDisabled = readTrim('/proc/sys/kernel/unprivileged_userns_clone') === '0'
  facts.maxUserNamespacesZero = readTrim('/proc/sys/user/max_user_namespaces') === '0'
  if (fs.existsSync('/.dockerenv')) facts.container = 'docker'
  else if (fs.existsSync('/run/.containerenv')) facts.container = 'podman'
  else {
    const cg = readTrim('/proc/1/cgroup') ?? ''
    const m = /(docker|kubepods|containerd|lxc|libpod)/.exec(cg)
    if (m !== null) facts.container = m[1]
  }
  const capEff = /CapEff:\s*([0-9a-f]+)/.exec(readTrim('/proc/self/status') ?? '')?.[1]
  if (capEff !== undefined) facts.capSysAdmin = (BigInt('0x' + capEff) & (1n << 21n)) !== 0n
  return facts
}

const USERNS_ERRORS = /uid map|gid map|setgroups|No permissions to creat|RTM_NEWADDR|user namespace|unprivileged/i
const NAMESPACE_ERRORS = /Creating new namespace failed|Can't mount proc|make \/ slave|Operation not permitted|Permission denied|mount/i

/** Turns bwrap's complaint into what to do about it. Pure. */
export function classifyBwrapFailure (stderr: string, facts: HostFacts): { reason: SandboxProbeFailure; message: string } {
  const said = stderr.trim().split('\n').slice(-3).join(' ').trim()
  const quote = said === '' ? '' : ` (bwrap said: "${said}")`
  const off = 'Until then the bash tool refuses to run, unless you turn the sandbox off for this conversation.'
  if (facts.container !== undefined && (NAMESPACE_ERRORS.test(stderr) || USERNS_ERRORS.test(stderr))) {
    const cap = facts.capSysAdmin === false ? ' This process has no CAP_SYS_ADMIN, and the' : ' The'
    return {
      reason: 'container',
      message: `bwrap cannot create its namespaces: Arbor runs in a container (${facts.container}).${cap} container's seccomp/AppArmor profile ` +
        `likely blocks user namespaces or mounting /proc${quote}. Run the container with --security-opt seccomp=unconfined ` +
        '--security-opt apparmor=unconfined (or --privileged), or run Arbor outside the container. ' + off
    }
  }
  if (USERNS_ERRORS.test(stderr) || NAMESPACE_ERRORS.test(stderr)) {
    const fixes: string[] = []
    if (facts.apparmorRestrictsUserns === true) {
      fixes.push('AppArmor restricts unprivileged user namespaces (Ubuntu 23.10+): add a profile for bwrap, ' +
        'e.g. /etc/apparmor.d/bwrap with `abi <abi/4.0>, include <tunables/global> profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }` ' +
        'then `sudo apparmor_parser -r /etc/apparmor.d/bwrap`; or `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` ' +
        '(persist it in /etc/sysctl.d/)')
    }
    if (facts.usernsCloneDisabled === true) fixes.push('unprivileged user namespaces are off: `sudo sysctl -w kernel.unprivileged_userns_clone=1`')
    if (facts.maxUserNamespacesZero === true) fixes.push('user namespaces are limited to 0: `sudo sysctl -w user.max_user_namespaces=15000`')
    if (fixes.length === 0) {
      fixes.push('check kernel.apparmor_restrict_unprivileged_userns (set 0, or give bwrap an AppArmor profile with `userns,`), ' +
        'kernel.unprivileged_userns_clone (set 1) and user.max_user_namespaces (above 0)')
    }
    return { reason: 'userns-blocked', message: `bwrap cannot create a user namespace${quote}: ${fixes.join('; ')}. ${off}` }
  }
  return { reason: 'failed', message: `bwrap failed to start a sandbox${quote}. ${off}` }
}

interface RunResult { code: number | null; stdout: string; stderr: string; error?: NodeJS.ErrnoException; timedOut: boolean }

function run (file: string, args: string[], env: Record<string, string | undefined>, timeoutMs: number, seccomp?: Buffer, cgroup?: CallCgroup): Promise<RunResult> {
  return new Promise(resolve => {
    let stdout = ''
    let stderr = ''
    let timedOut = false
    let settled = false
    const done = (r: RunResult): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(r)
    }
    const child = spawnSandbox({
      file, args, stdio: ['ignore', 'pipe', 'pipe'], options: { env: { PATH: env.PATH ?? process.env.PATH } },
      ...(seccomp !== undefined ? { seccomp } : {}), ...(cgroup !== undefined ? { cgroup } : {})
    })
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL') }, timeoutMs)
    child.stdout?.on('data', (b: Buffer) => { stdout += b.toString() })
    child.stderr?.on('data', (b: Buffer) => { stderr += b.toString() })
    child.on('error', error => done({ code: null, stdout, stderr, error, timedOut }))
    child.on('close', code => done({ code, stdout, stderr, timedOut }))
  })
}

/** Runs the checks (no caching). */
export async function probeSandbox (opts: ProbeOptions = {}): Promise<SandboxProbe> {
  const bwrapPath = opts.bwrapPath ?? 'bwrap'
  const env = opts.env ?? process.env
  const timeoutMs = opts.timeoutMs ?? 5000
  const v = await run(bwrapPath, ['--version'], env, timeoutMs)
  if (v.error !== undefined) {
    if (v.error.code === 'ENOENT' || v.error.code === 'EACCES') {
      return { ok: false, bwrapPath, version: undefined, reason: 'missing', message: installMessage(bwrapPath), detail: v.error.message }
    }
    return { ok: false, bwrapPath, version: undefined, reason: 'failed', message: `bwrap could not be started: ${v.error.message}` }
  }
  const version = parseBwrapVersion(v.stdout + v.stderr)
  const disableUserns = version !== undefined && compareVersions(version, DISABLE_USERNS_SINCE) >= 0

  // The sandbox as the bash tool makes it: tmpfs sizes and the seccomp filter included.
  const filter = sandboxSeccomp()
  const trial = (seccomp: Buffer | undefined, sized: boolean): Promise<RunResult> => run(bwrapPath, [
    ...isolationArgs(disableUserns), ...baseMountArgs(sized ? tmpfsSizes(defaultResourceLimits()) : undefined),
    ...(seccomp === undefined ? [] : ['--add-seccomp-fd', String(SECCOMP_FD)]), '--', 'true'
  ], env, timeoutMs, seccomp)
  const failed = (r: RunResult): boolean => r.timedOut || r.code !== 0 || r.error !== undefined
  const program = filter.ok ? filter.program : undefined
  const warnings: string[] = []
  let seccomp = program
  let sized = true
  let t = await trial(seccomp, sized)
  if (failed(t) && !t.timedOut) {
    // Which extra refused? Plain first: if that fails too, the sandbox itself cannot run.
    const plain = await trial(undefined, false)
    if (!failed(plain)) {
      const said = (r: RunResult): string => r.stderr.trim().split('\n').slice(-1)[0] ?? `exit ${r.code}`
      const withFilter = program === undefined ? undefined : await trial(program, false)
      if (withFilter !== undefined && failed(withFilter)) {
        warnings.push(`bwrap refused the seccomp filter (${said(withFilter)}); the bash sandbox runs without it, so commands can use the calls it blocks (TIOCSTI, keyctl, Unix sockets, ...).`)
        seccomp = undefined
      }
      const withSizes = await trial(seccomp, true)
      if (failed(withSizes)) {
        warnings.push(`bwrap refused sizes for its tmpfs mounts (${said(withSizes)}; a setuid bwrap does); /tmp, /dev/shm and /run are unsized, bounded only by memory limits.`)
        sized = false
      }
      t = await trial(seccomp, sized)
    } else t = plain
  }
  if (t.timedOut) {
    return { ok: false, bwrapPath, version, reason: 'timeout', message: `bwrap did not start a trivial sandbox within ${timeoutMs} ms; the bash tool refuses to run until it does.` }
  }
  if (t.code !== 0 || t.error !== undefined) {
    const { reason, message } = classifyBwrapFailure(t.stderr + (t.error?.message ?? ''), opts.facts ?? readHostFacts())
    return { ok: false, bwrapPath, version, reason, message, detail: t.stderr.trim() }
  }
  if (!filter.ok) warnings.push(filter.warning)
  if (version === undefined || compareVersions(version, MIN_SAFE_BWRAP_VERSION) < 0) {
    warnings.push(`bubblewrap ${version ?? '(unknown version)'} is older than ${MIN_SAFE_BWRAP_VERSION}: earlier versions have a flaw ` +
      'that can let a sandboxed command write to the host through a symlink (GHSA-pxhw-h44j-8pfx). Upgrade bubblewrap when your distribution offers 0.12 or later.')
  }
  // Placement checked the way the bash tool will place its calls, seen from inside (no
  // cgroup namespace for this one run, so the path shows).
  const placed = async (cg: CallCgroup): Promise<{ code: number | null; out: string }> => {
    const r = await run(bwrapPath, [
      ...isolationArgs(disableUserns).filter(a => a !== '--unshare-cgroup-try'), ...baseMountArgs(),
      ...(seccomp === undefined ? [] : ['--add-seccomp-fd', String(SECCOMP_FD)]), '--', 'cat', '/proc/self/cgroup'
    ], env, timeoutMs, seccomp, cg)
    return { code: r.code, out: r.stdout + r.stderr }
  }
  const limits = await probeLimitEnforcement({ cgroups: opts.cgroups, timeoutMs, placed })
  warnings.push(...enforcementWarnings(limits.enforcement, (opts.facts ?? readHostFacts()).uid))
  return {
    ok: true,
    bwrapPath,
    version,
    disableUserns,
    warnings,
    seccomp,
    tmpfsSizes: sized,
    limits: limits.enforcement,
    ...(limits.base !== undefined ? { cgroupBase: limits.base } : {})
  }
}

const cache = new Map<string, Promise<SandboxProbe>>()

/** The probe, run once per process for each bwrap path and PATH. */
export function sandboxProbe (opts: ProbeOptions = {}): Promise<SandboxProbe> {
  const key = `${opts.bwrapPath ?? 'bwrap'}\0${(opts.env ?? process.env).PATH ?? ''}\0${opts.cgroups === false ? 'no-cgroups' : ''}`
  let p = cache.get(key)
  if (p === undefined) {
    p = probeSandbox(opts)
    cache.set(key, p)
    // a slow start may be passing load: ask again next time
    void p.then(r => { if (!r.ok && r.reason === 'timeout') cache.delete(key) })
  }
  return p
}

/** For tests. */
export function clearSandboxProbeCache (): void {
  cache.clear()
}
