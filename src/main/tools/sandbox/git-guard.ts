/**
 * What the host's git reads from a working directory, and how the sandbox keeps it from
 * being changed. Git runs code from its control files: hooks, config (core.fsmonitor,
 * core.hooksPath, filters, pagers...), config.worktree, and whatever `commondir` or a `.git`
 * file points at, in the repository git finds from the working directory and in its
 * submodules and linked worktrees. This file plans, before a call, the mounts that make the
 * existing ones unchangeable: each git directory inside the working directory bound onto
 * itself (so it cannot be renamed away and replaced), its control files read-only, and the
 * hooks directories and included config files its config names. What cannot be mounted
 * because it does not exist yet (a new repository, a commondir, a hooks directory named by
 * core.hooksPath but not made) is checked after the call (git-scan.ts).
 *
 * Pure: the file system is only looked at through the FsProbe.
 */
import path from 'node:path'
import { configValues, parseGitConfigBytes, type GitConfigEntry } from './git-config'
import { isInside, nodeFsProbe, type FsProbe } from './hidden-paths'

/** A git directory's files that make git run code or say where its code is. */
export const GIT_CONTROL_FILES = ['config', 'config.worktree', 'commondir'] as const
/** Made read-only in a protected git directory (info/: attributes and excludes, asked for by name). */
const READ_ONLY_IN_GIT_DIR = ['hooks', 'config', 'config.worktree', 'commondir', 'info'] as const
/** Inside a git directory, only these hold further git directories worth walking. */
export const GIT_DIR_CONTAINERS = ['modules', 'worktrees'] as const

const MAX_CONFIG_BYTES = 256 * 1024
const MAX_INCLUDE_DEPTH = 10
const MAX_CONFIG_FILES = 32
const MAX_MODULE_DEPTH = 6
export const MAX_PROTECTED_GIT_DIRS = 64

export type EntryKind = 'dir' | 'file' | 'symlink' | 'other'

/** What p itself is, symlinks not followed. */
export function lkind (p: string, probe: FsProbe): EntryKind | undefined {
  if (probe.readlink(p) !== undefined) return 'symlink'
  return probe.kind(p)
}

/** git's is_git_directory: HEAD, and objects + refs (or a commondir that has them). */
export function isGitDir (p: string, probe: FsProbe = nodeFsProbe): boolean {
  if (probe.kind(p) !== 'dir' || probe.kind(path.join(p, 'HEAD')) === undefined) return false
  if (probe.kind(path.join(p, 'commondir')) === 'file') return true
  return probe.kind(path.join(p, 'objects')) === 'dir' && probe.kind(path.join(p, 'refs')) === 'dir'
}

/** The same test on a directory's entry names (a walk has them without further lookups). */
export function looksLikeGitDir (names: ReadonlySet<string>): boolean {
  return names.has('HEAD') && (names.has('commondir') || (names.has('objects') && names.has('refs')))
}

/** read_gitfile: `gitdir: PATH`, relative to the file's directory; undefined if not that form. */
export function parseGitfile (text: string, file: string): string | undefined {
  if (!text.startsWith('gitdir: ')) return undefined
  const p = text.slice(8).replace(/[\r\n]+$/, '')
  if (p === '' || p.includes('\n') || p.includes('\0')) return undefined
  return path.resolve(path.dirname(file), p)
}

/** get_common_dir: the commondir file's path, relative to the git directory; or the git directory. */
export function commonDirOf (gitDir: string, probe: FsProbe = nodeFsProbe): string {
  const text = probe.readText(path.join(gitDir, 'commondir'), 4096)
  if (text === undefined) return gitDir
  const rel = text.replace(/[\r\n]+$/, '')
  return probe.realpath(path.resolve(gitDir, rel)) ?? path.resolve(gitDir, rel)
}

export interface FoundRepo {
  gitDir: string
  commonDir: string
  /** the top of the working tree; undefined for a bare repository */
  worktree?: string
  /** the `.git` file that pointed at gitDir */
  gitfile?: string
}

/** The repository git finds from `cwd` (setup_git_directory's walk up), if any. */
export function discoverRepo (cwd: string, probe: FsProbe = nodeFsProbe): FoundRepo | undefined {
  for (let d = cwd; ; d = path.dirname(d)) {
    const dotGit = path.join(d, '.git')
    const k = lkind(dotGit, probe)
    let gitDir: string | undefined
    let gitfile: string | undefined
    if (k === 'dir' || k === 'symlink') {
      const real = probe.realpath(dotGit)
      if (real !== undefined && isGitDir(real, probe)) gitDir = real
    } else if (k === 'file') {
      const target = parseGitfile(probe.readText(dotGit, 4096) ?? '', dotGit)
      const real = target === undefined ? undefined : probe.realpath(target)
      if (real !== undefined && isGitDir(real, probe)) {
        gitDir = real
        gitfile = dotGit
      }
    }
    if (gitDir !== undefined) return { gitDir, commonDir: commonDirOf(gitDir, probe), worktree: d, ...(gitfile !== undefined ? { gitfile } : {}) }
    if (isGitDir(d, probe)) return { gitDir: d, commonDir: commonDirOf(d, probe) }
    if (path.dirname(d) === d) return undefined
  }
}

/** Config files and the files they include (include.path, includeIf.*.path: all, as if every condition held). */
export interface ConfigChain { files: string[]; included: string[]; entries: GitConfigEntry[]; problems: string[] }

export function readConfigChain (roots: readonly string[], home: string, probe: FsProbe = nodeFsProbe): ConfigChain {
  const out: ConfigChain = { files: [], included: [], entries: [], problems: [] }
  const seen = new Set<string>()
  const visit = (file: string, depth: number): void => {
    if (seen.has(file) || seen.size >= MAX_CONFIG_FILES) return
    seen.add(file)
    out.files.push(file)
    if (depth > 0) out.included.push(file)
    const bytes = probe.readText(file, MAX_CONFIG_BYTES + 1, 'latin1')
    if (bytes === undefined) return
    if (bytes.length > MAX_CONFIG_BYTES) {
      out.problems.push(`${file} is larger than ${MAX_CONFIG_BYTES} bytes and was not read`)
      return
    }
    const p = parseGitConfigBytes(bytes)
    if (!p.ok) {
      // read as git reads it, through links, so it may be anything: none of it is said (this goes to the model)
      out.problems.push(`${file} is not git config that this check can read`)
      return
    }
    out.entries.push(...p.entries)
    if (depth >= MAX_INCLUDE_DEPTH) return
    const includes = [...configValues(p.entries, 'include', 'path'), ...configValues(p.entries, 'includeif', 'path', /./)]
    for (const inc of includes) visit(expandPath(inc, path.dirname(file), home), depth + 1)
  }
  for (const r of roots) visit(r, 0)
  return out
}

/** A path from git config: `~/` is the home, a relative one is relative to `base`. */
export function expandPath (p: string, base: string, home: string): string {
  if (p === '~' || p.startsWith('~/')) return path.join(home, p.slice(1))
  return path.resolve(base, p)
}

/** The user's own config files git reads in every repository (system, XDG, ~/.gitconfig). */
export function userConfigFiles (home: string, env: Record<string, string | undefined> = {}): string[] {
  const xdg = env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : path.join(home, '.config')
  return ['/etc/gitconfig', path.join(xdg, 'git', 'config'), path.join(home, '.gitconfig')]
}

/** The git directories of a common dir's submodules (modules/**) and linked worktrees (worktrees/*). */
export function nestedGitDirs (commonDir: string, probe: FsProbe = nodeFsProbe, limit = MAX_PROTECTED_GIT_DIRS): string[] {
  const out: string[] = []
  const modules = (dir: string, depth: number): void => {
    for (const n of (probe.list(dir) ?? []).sort()) {
      if (out.length >= limit) return
      const p = path.join(dir, n)
      if (lkind(p, probe) !== 'dir') continue
      if (isGitDir(p, probe)) {
        out.push(p)
        modules(path.join(p, 'modules'), 0)
      } else if (depth < MAX_MODULE_DEPTH) modules(p, depth + 1) // a submodule named a/b lives at modules/a/b
    }
  }
  modules(path.join(commonDir, 'modules'), 0)
  for (const n of (probe.list(path.join(commonDir, 'worktrees')) ?? []).sort()) {
    const p = path.join(commonDir, 'worktrees', n)
    if (out.length < limit && lkind(p, probe) === 'dir') out.push(p)
  }
  return out
}

export interface GitPlan {
  /** the repository git uses from the working directory, if any */
  repo?: FoundRepo
  /** git directories inside the working directory whose control files are mounted read-only */
  gitDirs: string[]
  /** directories bound onto themselves: a mount point cannot be renamed (EBUSY) */
  pin: string[]
  /** existing files and directories bound read-only */
  readOnly: string[]
  /** control paths inside the working directory that do not exist yet: checked after the call */
  watch: Array<{ path: string; kind: 'hooks' | 'config' }>
  /** core.hooksPath values of the user's own config files (resolved per repository after the call) */
  userHooksPaths: string[]
  /** what could not be read, said in the tool's output */
  problems: string[]
}

export interface GitPlanOptions {
  home: string
  env?: Record<string, string | undefined>
  probe?: FsProbe
  maxGitDirs?: number
}

/**
 * The mounts that keep the host's git from running code planted by a command in `cwd`
 * (canonical). Paths outside `cwd` need nothing: the sandbox cannot write there.
 */
export function planGitProtection (cwd: string, o: GitPlanOptions): GitPlan {
  const probe = o.probe ?? nodeFsProbe
  const inCwd = (p: string): string | undefined => {
    const real = probe.realpath(p)
    return real !== undefined && isInside(real, cwd) && real !== cwd ? real : undefined
  }
  const plan: GitPlan = { gitDirs: [], pin: [], readOnly: [], watch: [], userHooksPaths: [], problems: [] }
  const user = readConfigChain(userConfigFiles(o.home, o.env), o.home, probe)
  plan.userHooksPaths = configValues(user.entries, 'core', 'hookspath')
  plan.problems.push(...user.problems)
  // a .git directory git does not take for a repository yet (no HEAD) becomes one with a single file
  const own = lkind(path.join(cwd, '.git'), probe) === 'dir' ? [path.join(cwd, '.git')] : []
  const repo = discoverRepo(cwd, probe)
  if (repo === undefined && own.length === 0) return plan
  if (repo !== undefined) plan.repo = repo

  const limit = o.maxGitDirs ?? MAX_PROTECTED_GIT_DIRS
  const dirs = [...new Set([...own, ...(repo === undefined ? [] : [repo.gitDir, repo.commonDir, ...nestedGitDirs(repo.commonDir, probe, limit)])])]
  if (dirs.length > limit) plan.problems.push(`only ${limit} of the repository's git directories are made read-only; the others are checked after each call`)
  const ro = new Set<string>()
  const protectHooks = (hooksDir: string): void => {
    const real = inCwd(hooksDir)
    if (real === undefined) return
    ro.add(real)
    // a hook that is a symlink into the working tree runs whatever its target holds
    for (const n of probe.list(real) ?? []) {
      const target = probe.readlink(path.join(real, n)) === undefined ? undefined : inCwd(path.join(real, n))
      if (target !== undefined) ro.add(target)
    }
  }
  for (const d of dirs.slice(0, limit)) {
    // the working directory may be a bare repository itself: it is bound already, its files are not
    const real = probe.realpath(d) === cwd ? cwd : inCwd(d)
    if (real === undefined) continue
    plan.gitDirs.push(real)
    if (real !== cwd) plan.pin.push(real)
    for (const n of READ_ONLY_IN_GIT_DIR) {
      const p = path.join(real, n)
      if (lkind(p, probe) === undefined) continue
      if (n === 'hooks') protectHooks(p)
      else {
        const r = inCwd(p)
        if (r !== undefined) ro.add(r)
      }
    }
  }
  if (repo === undefined) {
    plan.readOnly = [...ro].sort()
    return plan
  }
  if (repo.gitfile !== undefined) {
    const r = inCwd(repo.gitfile)
    if (r !== undefined) ro.add(r)
  }

  // core.hooksPath and included files, from every config git reads for this repository
  const roots = [...userConfigFiles(o.home, o.env), path.join(repo.commonDir, 'config'), path.join(repo.gitDir, 'config.worktree')]
  const chain = readConfigChain(roots, o.home, probe)
  plan.problems.push(...chain.problems.filter(p => !user.problems.includes(p)))
  const hookBase = repo.worktree ?? repo.gitDir
  for (const hp of configValues(chain.entries, 'core', 'hookspath')) {
    const dir = expandPath(hp, hookBase, o.home)
    if (!isInside(dir, cwd)) continue
    if (probe.kind(dir) !== undefined) protectHooks(dir)
    else plan.watch.push({ path: dir, kind: 'hooks' })
  }
  // the roots inside are a git directory's own files, covered above or checked after the call
  for (const f of chain.included) {
    if (!isInside(f, cwd)) continue
    const r = inCwd(f)
    if (r !== undefined) ro.add(r)
    else if (probe.kind(f) === undefined) plan.watch.push({ path: f, kind: 'config' })
  }
  plan.readOnly = [...ro].sort()
  plan.pin.sort()
  return plan
}

/**
 * Whether a file tool may write `target` (canonical, inside `cwd`): not inside any `.git`,
 * not a `.git` itself, not inside a directory that is (or the write would make) a git
 * directory, and not a hooks directory or included config the repository's config names.
 * The file tools write on the host directly, so nothing checks after them.
 */
export function gitWriteRefusal (target: string, cwd: string, plan: GitPlan, probe: FsProbe = nodeFsProbe): string | undefined {
  const rel = path.relative(cwd, target)
  const parts = rel === '' ? [] : rel.split(path.sep)
  if (parts.includes('.git')) return '.git'
  for (const p of [...plan.readOnly, ...plan.watch.map(w => w.path)]) if (isInside(target, p)) return path.relative(cwd, p)
  // a directory with HEAD and objects + refs is a repository to git, whatever its name
  for (let i = parts.length - 1; i >= 0; i--) {
    const dir = path.join(cwd, ...parts.slice(0, i))
    const names = new Set(probe.list(dir) ?? [])
    names.add(parts[i] as string)
    if (looksLikeGitDir(names)) return path.relative(cwd, dir) || '.'
  }
  return undefined
}
