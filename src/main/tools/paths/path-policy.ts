/**
 * The sandbox's file rules for in-process tools (read_file, write_file, ...): a path must
 * lead, symlinks followed, to the working directory or below it, and to nothing hidden;
 * writes also stay off what the host runs later (git's directories at any depth, shell
 * start-up files). The same rules bwrap enforces for the bash tool (sandbox/bwrap-args.ts).
 * They are applied while the path is walked (beneath.ts), to the very directories opened,
 * so a concurrent swap of a component for a symlink cannot slip between check and use.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { componentsBeneath, isGitName, nameError, pathTextError } from './beneath-path'
import { walkBeneath, type Backend, type Dir, type Reach, type WalkRefusal } from './beneath'
import type { SandboxPolicy } from '../sandbox-policy'
import { allHidden, PROTECTED_IN_CWD, SandboxPolicyError, sandboxCwd } from '../sandbox/bwrap-args'
import { gitWriteRefusal, planGitProtection, type GitPlan } from '../sandbox/git-guard'
import { canonicalPath, hiddenForms, isInside, nodeFsProbe, type FsProbe } from '../sandbox/hidden-paths'
import { hostHomes } from '../sandbox/startup-dirs'
import { hiddenGuard, hiddenRules, SeenFiles, type HiddenRules } from './hidden-guard'

export type PathAccess = 'read' | 'write'

export type PathCheck =
  | { ok: true; /** where the path led, canonical (for messages: operate through openToolPath) */ path: string; /** relative to the working directory ('.' for itself) */ relative: string }
  | { ok: false; error: string }

export interface PathPolicyOptions {
  /** home directory for the default hidden set (default os.homedir()) */
  home?: string
  /** Arbor's data directory, hidden */
  dataDir?: string
  /** for resolving the working directory and the hidden set (default: the real one, answers kept a second) */
  fs?: FsProbe
  /** how directories are held (default: by descriptor where /proc allows) */
  backend?: Backend
  /** the machine's accounts, whose homes the working directory must not reach (default /etc/passwd) */
  passwdFile?: string
}

export interface PathContext {
  /** where relative paths start (the tool's cwd) */
  cwd: string
  sandbox: SandboxPolicy
}

/** What a path reached is, for a tool that looks further (list_dir's entries). */
export type PathRules = HiddenRules

export type OpenedPath =
  | { ok: true; reach: Reach; /** relative to the working directory ('.' for itself), symlinks resolved */ relative: string; rules: PathRules }
  | { ok: false; error: string }

const READ_ONLY_WHY = 'is run by programs outside the sandbox (git hooks and config, shell start-up files)'

/**
 * Why a write to `names` (below the working directory) is refused, or undefined: a name git
 * would take for its directory at any depth (a nested or new repository's hooks and config
 * run on the host's next git command), or one of the files the host runs later.
 */
export function writeProtection (names: readonly string[]): string | undefined {
  const git = names.findIndex(isGitName)
  if (git !== -1) return `${names.slice(0, git + 1).join('/')} ${READ_ONLY_WHY}`
  const rel = names.join('/').toLowerCase() // case folds on macOS and Windows
  const prot = PROTECTED_IN_CWD.find(p => rel === p.toLowerCase() || rel.startsWith(p.toLowerCase() + '/'))
  return prot === undefined ? undefined : `${prot} ${READ_ONLY_WHY}`
}

/**
 * A directory git would use as its own (HEAD, objects/, refs/), whatever its name: a `.git`
 * renamed away and back, or a bare repository, is still one.
 */
function looksLikeGitDir (dir: Dir): boolean {
  const kind = (name: string): fs.Stats | undefined => {
    try { return fs.lstatSync(dir.child(name), { throwIfNoEntry: false }) } catch { return undefined }
  }
  const head = kind('HEAD')
  if (head === undefined || head.isDirectory()) return false
  return kind('objects')?.isDirectory() === true && kind('refs')?.isDirectory() === true
}

// The working directory and the hidden set are resolved against the file system once a
// second at most: they lie outside the working directory (the user's to change, and that is
// a second's delay), or are checked again by identity on every walk; the root's descriptor
// is checked against its path on every walk (beneath.ts). Failures are not kept.
const PREPARED_TTL_MS = 1000

interface Prepared {
  /** the working directory, canonical */
  root: string
  /** where relative paths start, canonical */
  base: string
  /** the hidden paths, every spelling */
  forms: string[]
  /** the repository's control files and what its config makes the host run (core.hooksPath, includes) */
  git: GitPlan
  probe: FsProbe
}

const prepared = new Map<string, { at: number; value: Prepared }>()

/** The working directory and hidden set for a call; SandboxPolicyError when the directory cannot be used. */
function prepare (ctx: PathContext, opts: PathPolicyOptions): Prepared {
  const home = opts.home ?? os.homedir()
  const compute = (probe: FsProbe): Prepared => {
    const hidden = allHidden(ctx.sandbox, home, opts.dataDir, probe)
    const root = sandboxCwd(ctx.sandbox, hidden, probe, home, hostHomes(home, [process.env], opts.passwdFile))
    return { root, base: canonicalPath(ctx.cwd, probe), forms: hiddenForms(hidden, probe), git: planGitProtection(root, { home, probe }), probe }
  }
  if (opts.fs !== undefined) return compute(opts.fs)
  const key = JSON.stringify([ctx.cwd, ctx.sandbox.cwd, ctx.sandbox.hidden, home, opts.dataDir, opts.passwdFile])
  const now = Date.now()
  const hit = prepared.get(key)
  if (hit !== undefined && now - hit.at <= PREPARED_TTL_MS) return hit.value
  const value = compute(nodeFsProbe)
  prepared.delete(key)
  prepared.set(key, { at: now, value })
  if (prepared.size > 64) prepared.delete(prepared.keys().next().value as string)
  return value
}

/**
 * Files and directories this process has seen at a protected path in a working directory
 * (.git, its hooks and config, shell start-up files), by identity, kept after they move: a
 * `.git` renamed away (then back) is still read-only. Looked at on every call (a dozen
 * paths): a `git init` and a rename a moment later must not slip through. A protected name
 * is protected itself: a `.git` symlink into the working directory must not make its target
 * read-only. (Hidden paths: hidden-guard.ts.)
 */
const protectedSeen = new SeenFiles(false)

function outsideError (p: string, ctx: PathContext, resolved: string | undefined): string {
  const via = resolved !== undefined ? ` (it resolves to ${resolved} through a symlink)` : ''
  return `${p} is outside the working directory ${ctx.sandbox.cwd}${via}; tools may only touch files inside it`
}

/**
 * Walks `p` (relative to ctx.cwd, or absolute) beneath the working directory under the
 * rules, and holds what it reached: the directory holding the target, and what the target
 * is. Operate only through the reach (beneath.ts openReached, replaceReached, ...), never
 * on a path: that is what makes the check and the use one. `create` makes missing
 * directories on the way (write_file). Close the reach when done.
 */
export function openToolPath (p: string, ctx: PathContext, access: PathAccess, opts: PathPolicyOptions = {}, create = false): OpenedPath {
  const bad = pathTextError(p)
  if (bad !== undefined) return { ok: false, error: bad }
  let prep: Prepared
  try {
    prep = prepare(ctx, opts)
  } catch (e) {
    if (e instanceof SandboxPolicyError) return { ok: false, error: e.message }
    throw e
  }
  const { root, base, forms, git, probe } = prep
  if (!isInside(base, root)) return { ok: false, error: `the tool's directory ${ctx.cwd} is outside the working directory ${ctx.sandbox.cwd}` }
  const rules: PathRules = hiddenRules(forms)
  // the repository's git directory and control files (by the git plan, and by name: a `git init` a moment ago) and the start-up files
  protectedSeen.remember([...['.git', '.git/hooks', '.git/config', ...PROTECTED_IN_CWD].map(rel => path.join(root, rel)), ...git.gitDirs, ...git.readOnly])

  const lexical = path.resolve(base, p === '' ? '.' : p)
  let names = componentsBeneath(lexical, root)
  if (names === undefined) {
    // another spelling of a path inside (a symlink to the working directory, /proc/self/root/...)?
    // Only a guess at names: they are walked from the working directory all the same.
    const real = canonicalPath(lexical)
    names = componentsBeneath(real, root)
    if (names === undefined) return { ok: false, error: outsideError(p, ctx, real !== lexical ? real : undefined) }
  }
  const long = nameError(names)
  if (long !== undefined) return { ok: false, error: long }

  const abs = (logical: readonly string[]): string => path.join(root, ...logical)
  const via = (logical: readonly string[], viaLink: boolean): string => viaLink ? ` (it resolves to ${abs(logical)} through a symlink)` : ''
  const hidden = hiddenGuard(root, rules, met => met.by === 'name'
    ? `${p} is hidden from tools: ${met.hidden} holds credentials or Arbor's data${via(met.logical, met.viaLink)}`
    : `${p} is hidden from tools: ${met.logical.length === 0 ? 'the working directory' : met.logical.join('/')} is ${met.hidden}, which holds credentials or Arbor's data`)
  const walked = walkBeneath(root, names, {
    path (logical, viaLink) {
      const h = hidden.path(logical, viaLink)
      if (h !== undefined) return h
      if (access !== 'write') return undefined
      // also what git's config names, and a write that would make a directory a repository
      const configured = gitWriteRefusal(abs(logical), root, git, probe)
      const prot = writeProtection(logical) ?? (configured === undefined ? undefined : `${configured} is a git directory or what git's config runs outside the sandbox`)
      return prot === undefined ? undefined : `${p} is read-only for tools: ${prot}${via(logical, viaLink)}`
    },
    reached (st, logical, dir) {
      const h = hidden.reached(st, logical, dir)
      if (h !== undefined) return h
      if (access !== 'write') return undefined
      const prot = protectedSeen.seenAt(st)
      if (prot !== undefined) return `${p} is read-only for tools: ${logical.length === 0 ? 'the working directory' : logical.join('/')} is ${prot} (moved or linked), which ${READ_ONLY_WHY}`
      if (dir !== undefined && looksLikeGitDir(dir)) {
        return `${p} is read-only for tools: ${logical.length === 0 ? 'the working directory' : logical.join('/')} is a git directory, whose hooks and config run outside the sandbox`
      }
      return undefined
    }
  }, { create, backend: opts.backend })
  if (!walked.ok) return { ok: false, error: refusalWords(walked.refusal, p, ctx) }
  return { ok: true, reach: walked.reach, relative: walked.reach.logical.join('/') || '.', rules }
}

function refusalWords (r: WalkRefusal, p: string, ctx: PathContext): string {
  switch (r.kind) {
    case 'outside': return outsideError(p, ctx, r.resolved)
    case 'refused': return r.message
    case 'loop': return `${p}: too many levels of symbolic links`
    case 'not-dir': return `a component of ${p} is not a directory: ${r.logical.join('/')}`
    case 'root': return r.message
  }
}

/**
 * Where `p` leads under the rules, or why it is refused; nothing is created or kept open.
 * For messages and tests only: a concurrent process may change where the path leads right
 * after, so tools operate through openToolPath.
 */
export function resolveToolPath (p: string, ctx: PathContext, access: PathAccess, opts: PathPolicyOptions = {}): PathCheck {
  const o = openToolPath(p, ctx, access, opts)
  if (!o.ok) return o
  o.reach.close()
  return { ok: true, path: path.join(o.reach.rootPath, ...o.reach.logical), relative: o.relative }
}
