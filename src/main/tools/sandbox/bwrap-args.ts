/**
 * The bubblewrap command line for one bash run (/work/shared/notes/sandbox.md): the whole
 * file system read-only, the working directory writable, private /tmp, no network (a
 * private loopback), no capabilities, own PID/IPC/UTS/cgroup namespaces, hidden paths
 * masked, environment reduced to an allowlist. No side effects: the file system is only
 * looked at (through an injectable probe) to resolve symlinks and skip missing paths.
 */
import path from 'node:path'
import type { SandboxPolicy } from '../sandbox-policy'
import { defaultRegistryDir, registeredDataDirs } from './data-dir-registry'
import { planGitProtection, type GitPlan } from './git-guard'
import { canonicalPath, defaultHiddenPaths, hiddenContaining, hiddenForms, isInside, memoProbe, nodeFsProbe, type FsProbe } from './hidden-paths'
import type { TmpfsSizes } from './resource-limits'
import { hostHomes, resolveStartupDirs, startupRefusal, startupRefusalMessage, type HostHomes } from './startup-dirs'

export { defaultHiddenPaths } from './hidden-paths'

export interface BwrapArgsInput {
  policy: SandboxPolicy
  command: string
  /** the environment to filter (usually process.env) */
  env: Record<string, string | undefined>
  home: string
  /** Arbor's data directory; hidden along with the defaults */
  dataDir?: string
  /** where the command starts; policy.cwd by default, must be inside it */
  chdir?: string
  /** the shell run with -c (default 'bash', looked up on the sandbox's PATH) */
  shell?: string
  /** add --disable-userns (bwrap ≥ 0.8.0): no nested user namespaces (default true) */
  disableUserns?: boolean
  /** what keeps the host's git safe (default: planned here with planGitProtection) */
  git?: GitPlan
  /** sizes of /tmp, /dev/shm and /run (resource-limits.ts); unsized without */
  tmpfsSizes?: TmpfsSizes
  /** the fd the seccomp program is read from (--add-seccomp-fd: read before bwrap forks, spawn-sandbox.ts), if any */
  seccompFd?: number
  /** the machine's accounts, whose homes the working directory must not reach (default /etc/passwd) */
  passwdFile?: string
  fs?: FsProbe
}

/** The policy cannot be enforced as asked (the working directory is hidden, missing, or /). */
export class SandboxPolicyError extends Error {
  override name = 'SandboxPolicyError'
}

/** Namespaces and privileges: everything unshared, the network included; no capabilities. */
export function isolationArgs (disableUserns = true): string[] {
  return [
    '--die-with-parent', '--new-session',
    '--unshare-user', ...(disableUserns ? ['--disable-userns'] : []),
    '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--unshare-net',
    '--cap-drop', 'ALL'
  ]
}

/**
 * The base file system: host read-only, fresh /tmp, /dev, /proc, /dev/shm, /run. The
 * writable tmpfs mounts get a size (bwrap --size, ≥ 0.5) so filling them cannot eat the
 * machine's memory; /dev itself (an unsized tmpfs from --dev) is read-only, its device
 * nodes still work. /proc/1/mem is masked: pid 1 is bwrap's init, and writing into it
 * could make it outlive bwrap (see seccomp.ts, ptrace).
 */
export function baseMountArgs (sizes?: TmpfsSizes): string[] {
  const sized = (bytes: number | undefined): string[] => (bytes === undefined ? [] : ['--size', String(bytes)])
  return [
    '--ro-bind', '/', '/',
    ...sized(sizes?.tmp), '--tmpfs', '/tmp',
    '--dev', '/dev',
    '--proc', '/proc',
    '--ro-bind', '/dev/null', '/proc/1/mem',
    '--ro-bind', '/dev/null', '/proc/1/task/1/mem',
    ...sized(sizes?.shm), '--tmpfs', '/dev/shm',
    '--remount-ro', '/dev',
    ...sized(sizes?.run), '--tmpfs', '/run'
  ]
}

export const BASE_MOUNT_ARGS: readonly string[] = baseMountArgs()

/** Covered by a fresh mount above: a hidden path below these is already invisible. */
const FRESH_ROOTS = ['/tmp', '/dev', '/proc', '/run']

/**
 * Files in the working directory that the host runs later (shell start-up files, should the
 * working directory be used as a home): read-only inside, so a command cannot plant code
 * that runs outside the sandbox. Git's files are planned by git-guard.ts.
 */
export const PROTECTED_IN_CWD = [
  '.bashrc', '.bash_profile', '.bash_login', '.bash_logout', '.profile',
  '.zshrc', '.zprofile', '.zshenv', '.zlogin', '.gitconfig'
] as const

export const ENV_ALLOWLIST = ['PATH', 'HOME', 'LANG', 'TERM', 'USER'] as const
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

/** Always unset, set or not (the allowlist already drops them; this is a second lock). */
export const SECRET_ENV_NAMES = ['SSH_AUTH_SOCK', 'DBUS_SESSION_BUS_ADDRESS', 'GOOGLE_APPLICATION_CREDENTIALS'] as const
const SECRET_ENV_PATTERNS = [/_KEY$/, /_TOKEN$/, /_SECRET$/, /_PASSWORD$/, /^AWS_/, /^OPENAI_/, /^ANTHROPIC_/, /^AZURE_/, /^ARBOR_/]

export function isSecretEnvName (name: string): boolean {
  return (SECRET_ENV_NAMES as readonly string[]).includes(name) || SECRET_ENV_PATTERNS.some(re => re.test(name))
}

/** The environment inside the sandbox: the allowlist only, HOME set to `home`. */
export function sandboxEnv (env: Record<string, string | undefined>, home: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of ENV_ALLOWLIST) {
    const v = env[name]
    if (v !== undefined && !isSecretEnvName(name)) out[name] = v
  }
  out.PATH ??= DEFAULT_PATH
  out.HOME = home
  return out
}

/** A hidden path as it will be masked: canonical, and whether it is a directory. */
export interface HiddenMount { path: string; kind: 'dir' | 'file' }

/**
 * The hidden paths that get a mask. Skipped, on purpose:
 * - paths that do not exist: there is nothing to hide, and mounting there would make bwrap
 *   create an empty stub on the host (left behind in a writable directory) or fail outright
 *   ("Can't mkdir … Read-only file system") when the parent is read-only;
 * - paths under /tmp, /dev, /proc, /run outside the working directory: the fresh mounts
 *   there already hide the host's.
 * Symlinks are resolved first: bwrap refuses to mount onto a symlink, and the target is
 * what must be hidden.
 */
export function hiddenMounts (hidden: readonly string[], cwd: string, probe: FsProbe = nodeFsProbe): HiddenMount[] {
  const out = new Map<string, HiddenMount>()
  for (const h of hidden) {
    const real = probe.realpath(path.resolve(h))
    if (real === undefined) continue
    if (FRESH_ROOTS.some(r => isInside(real, r)) && !isInside(real, cwd)) continue
    const kind = probe.kind(real)
    if (kind === undefined) continue
    out.set(real, { path: real, kind: kind === 'dir' ? 'dir' : 'file' })
  }
  // A mask inside a masked directory is moot (and could not be mounted in the empty,
  // read-only tmpfs). The rest in a stable order.
  const all = [...out.values()]
  return all
    .filter(m => !all.some(d => d.kind === 'dir' && d.path !== m.path && isInside(m.path, d.path)))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/**
 * The canonical working directory, refusing what cannot be sandboxed. `homes` (default: from
 * `home`, the node's environment and /etc/passwd) are the homes whose start-up files the
 * working directory must not reach (startup-dirs.ts); without either, none are checked.
 */
export function sandboxCwd (policy: SandboxPolicy, hidden: readonly string[], probe: FsProbe = nodeFsProbe, home?: string, homes?: HostHomes): string {
  const real = probe.realpath(path.resolve(policy.cwd))
  if (real === undefined || probe.kind(real) !== 'dir') throw new SandboxPolicyError(`the working directory ${policy.cwd} does not exist or is not a directory`)
  if (real === path.parse(real).root) throw new SandboxPolicyError('the working directory is the file system root; the sandbox needs a project directory to confine writes to')
  // A writable home, config or autostart directory (or a parent of one) would let a tool plant files the host runs later.
  const startup = homes ?? (home === undefined ? undefined : hostHomes(home, [process.env]))
  const reached = startup === undefined ? undefined : startupRefusal(real, resolveStartupDirs(startup, probe))
  if (reached !== undefined) throw new SandboxPolicyError(startupRefusalMessage(policy.cwd, reached))
  const h = hiddenContaining(real, hiddenForms(hidden, probe))
  if (h !== undefined) {
    throw new SandboxPolicyError(`the working directory ${policy.cwd} is inside ${h}, which is hidden from tools (credentials or Arbor's data); choose a project directory elsewhere`)
  }
  return real
}

/**
 * All hidden paths for a policy: its own list plus the defaults, the data directories of the
 * other Arbor nodes of this user (their registry under `home`) and that registry itself.
 */
export function allHidden (policy: SandboxPolicy, home: string, dataDir?: string, probe: FsProbe = nodeFsProbe): string[] {
  const registry = defaultRegistryDir(home)
  return [...new Set([...policy.hidden, ...defaultHiddenPaths(home, dataDir, registeredDataDirs(registry, probe)), registry])]
}

/**
 * Directories inside the working directory that hold a hidden path (between the two): bound
 * onto themselves, so a command cannot rename one and reach the hidden path at a new name
 * in a later call (a mount point cannot be renamed).
 */
export function hiddenAncestors (masks: readonly HiddenMount[], cwd: string): string[] {
  const out = new Set<string>()
  for (const m of masks) {
    if (!isInside(m.path, cwd) || m.path === cwd) continue
    for (let d = path.dirname(m.path); d !== cwd && isInside(d, cwd); d = path.dirname(d)) out.add(d)
  }
  return [...out]
}

/** bwrap's argv (without the bwrap executable itself), ending in `-- bash -c COMMAND`. */
export function buildBwrapArgs (input: BwrapArgsInput): string[] {
  return planSandbox(input).args
}

/** A planned sandbox: bwrap's argv and what it was built from. */
export interface SandboxPlan {
  args: string[]
  /** the canonical working directory */
  cwd: string
  git: GitPlan
  /** the host paths the arguments bind or mask, beyond the base mounts (what a spare sandbox checks is still there, spare-sandbox.ts) */
  mounted: string[]
  /** the hidden set (allHidden): what the host never reads for the call either */
  hidden: string[]
}

/** bwrap's argv, and what it was built from: the canonical working directory and the git plan. */
export function planSandbox (input: BwrapArgsInput): SandboxPlan {
  const probe = memoProbe(input.fs ?? nodeFsProbe)
  const hidden = allHidden(input.policy, input.home, input.dataDir, probe)
  const cwd = sandboxCwd(input.policy, hidden, probe, input.home, hostHomes(input.home, [input.env, process.env], input.passwdFile))
  let chdir = cwd
  if (input.chdir !== undefined) {
    chdir = canonicalPath(input.chdir, probe)
    if (!isInside(chdir, cwd)) throw new SandboxPolicyError(`the tool's directory ${input.chdir} is outside the sandbox's working directory ${input.policy.cwd}`)
  }

  const args = [...isolationArgs(input.disableUserns ?? true), ...baseMountArgs(input.tmpfsSizes)]
  // After --tmpfs /tmp, so a working directory under /tmp is the host's, not the fresh one.
  args.push('--bind', cwd, cwd)
  const masks = hiddenMounts(hidden, cwd, probe)
  const git = input.git ?? planGitProtection(cwd, { home: input.home, env: input.env, probe })
  // Pins before what is mounted inside them, parents before children (sorted).
  const pins = [...new Set([...git.pin, ...hiddenAncestors(masks, cwd)])].sort()
  for (const d of pins) args.push('--bind', d, d)
  const readOnly = new Set(git.readOnly.filter(p => isInside(p, cwd) && p !== cwd))
  for (const rel of PROTECTED_IN_CWD) {
    const real = probe.realpath(path.join(cwd, rel))
    // a protected name that is a symlink out of the cwd is read-only there anyway
    if (real !== undefined && isInside(real, cwd)) readOnly.add(real)
  }
  for (const p of [...readOnly].sort()) args.push('--ro-bind', p, p)
  // Masks last: they must cover anything bound above (a hidden dir inside the cwd).
  for (const m of masks) {
    if (m.kind === 'dir') args.push('--tmpfs', m.path, '--remount-ro', m.path)
    else args.push('--ro-bind', '/dev/null', m.path)
  }
  args.push('--chdir', chdir)

  args.push('--clearenv')
  for (const [k, v] of Object.entries(sandboxEnv(input.env, input.home))) args.push('--setenv', k, v)
  const unset = new Set<string>(SECRET_ENV_NAMES)
  for (const k of Object.keys(input.env)) if (isSecretEnvName(k)) unset.add(k)
  for (const k of [...unset].sort()) args.push('--unsetenv', k)

  if (input.seccompFd !== undefined) args.push('--add-seccomp-fd', String(input.seccompFd))
  args.push('--', input.shell ?? 'bash', '-c', input.command)
  const mounted = [...new Set([cwd, chdir, ...pins, ...readOnly, ...masks.map(m => m.path)])].sort()
  return { args, cwd, git, mounted, hidden }
}
