/**
 * The check after every sandboxed call: git control files that the call created or changed
 * anywhere under the working directory (a new repository, a nested one, a `.git` file, a
 * bare repository, a commondir, a config.worktree, a hook, a config that runs a program,
 * files in a hooks directory that core.hooksPath names) are moved aside, renamed in place
 * (never deleted), and reported in the tool's output.
 *
 * "Created or changed by the call" is decided by identity: before the call, the device,
 * inode and ctime of every control file of every known git directory are noted; ctime
 * cannot be set by an unprivileged process (utimes sets it to now), so a control file the
 * call wrote, renamed, linked or chmodded is not among them afterwards, while one that was
 * only carried along by a renamed parent still is. Git directories are found by a walk of the
 * working directory kept between calls: after a call each known directory is lstat'ed, and
 * only those whose inode or ctime changed (or whose ctime falls in the call) are read again.
 * The walk is bounded in directories and time and says so when it stops early.
 */
import fs from 'node:fs'
import path from 'node:path'
import { configVerdict, configValues, parseGitConfigBytes } from './git-config'
import { commonDirOf, expandPath, GIT_CONTROL_FILES, GIT_DIR_CONTAINERS, isGitDir, looksLikeGitDir, parseGitfile, type GitPlan } from './git-guard'
import { isInside, nodeFsProbe } from './hidden-paths'
import { workspaceReader, type WorkspaceReader } from '../paths/workspace-read'

export interface GitScanOptions {
  /** stop the walk after this many directories (default 100,000) */
  maxDirs?: number
  /** stop the walk after this long (default 3 s) */
  maxMs?: number
  /** working directories whose walk is kept (default 32) */
  maxTrees?: number
  /** a directory whose ctime is this close before the call's start is read again (coarse clocks and file systems) */
  marginMs?: number
  home: string
}

export interface GuardFinding {
  /** relative to the working directory */
  path: string
  why: string
  /** relative to the working directory; absent when it could not be moved */
  movedTo?: string
  error?: string
}

export interface GuardReport {
  findings: GuardFinding[]
  /** why the walk stopped early, if it did */
  incomplete?: string
  dirs: number
  ms: number
}

interface DirNode { ino: number; ctimeMs: number; git: boolean; gitfile: boolean; children: Map<string, DirNode> }
interface Tree { root: DirNode | undefined; gitDirs: string[]; gitfiles: string[]; lock: Promise<unknown> }
/** a child directory listed but not looked at yet */
const UNSEEN: DirNode = { ino: -1, ctimeMs: -1, git: false, gitfile: false, children: new Map() }

const MAX_CONFIG_BYTES = 256 * 1024
const QUARANTINE_SUFFIX = '.arbor-quarantined'
/** what this check renamed: git runs no hook by such a name */
const isQuarantined = (name: string): boolean => /\.arbor-quarantined(-\d+)?$/.test(name)

class Budget {
  dirs = 0
  hit: string | undefined
  private readonly start = Date.now()
  private lastYield = Date.now()
  constructor (private readonly maxDirs: number, private readonly maxMs: number) {}
  /** false once a limit is reached */
  take (): boolean {
    if (this.hit !== undefined) return false
    if (++this.dirs > this.maxDirs) this.hit = `stopped after ${this.maxDirs} directories`
    else if ((this.dirs & 255) === 0 && Date.now() - this.start > this.maxMs) this.hit = `stopped after ${this.maxMs} ms`
    return this.hit === undefined
  }
  /** let the event loop run now and then: a walk of a big tree must not stall the node */
  async breathe (): Promise<void> {
    if (Date.now() - this.lastYield < 8) return
    await new Promise(resolve => setImmediate(resolve))
    this.lastYield = Date.now()
  }
  get ms (): number { return Date.now() - this.start }
}

function lstat (p: string): fs.Stats | undefined {
  try { return fs.lstatSync(p, { throwIfNoEntry: false }) } catch { return undefined }
}

function identity (p: string): string | undefined {
  try {
    const st = fs.lstatSync(p, { bigint: true })
    return `${st.dev}:${st.ino}:${st.ctimeNs}`
  } catch { return undefined }
}

function readLatin1 (p: string): string | undefined {
  return nodeFsProbe.readText(p, MAX_CONFIG_BYTES + 1, 'latin1')
}

export class GitScanner {
  private readonly trees = new Map<string, Tree>()
  private readonly o: Required<GitScanOptions>

  constructor (o: GitScanOptions) {
    this.o = { maxDirs: 100_000, maxMs: 3000, maxTrees: 32, marginMs: 2000, ...o }
  }

  /**
   * Before a sandboxed call in `cwd` (canonical): knows the git directories there (a first
   * walk the first time), notes the identity of their control files, and returns what to
   * call when the command has ended. `hidden`: the sandbox's hidden set, never read.
   */
  async begin (cwd: string, plan: GitPlan, hidden: readonly string[] = []): Promise<{ finish: () => Promise<GuardReport> }> {
    const tree = this.tree(cwd)
    const started = Date.now()
    let firstIncomplete: string | undefined
    const baseline = await this.locked(tree, async () => {
      if (tree.root === undefined) {
        const b = this.budget()
        await this.walk(tree, cwd, b, -Infinity)
        firstIncomplete = b.hit
      }
      return this.identities(tree, cwd, plan)
    })
    return {
      finish: () => this.locked(tree, async () => {
        const b = this.budget()
        await this.walk(tree, cwd, b, started - this.o.marginMs)
        const findings = this.judge(tree, cwd, plan, baseline, workspaceReader({ root: cwd, hidden }))
        const hit = b.hit ?? firstIncomplete
        const report: GuardReport = { findings, dirs: b.dirs, ms: b.ms }
        if (hit !== undefined) report.incomplete = `the check of git files in the working directory ${hit}; deeper directories were not checked`
        return report
      })
    }
  }

  private budget (): Budget { return new Budget(this.o.maxDirs, this.o.maxMs) }

  private tree (cwd: string): Tree {
    let t = this.trees.get(cwd)
    if (t !== undefined) {
      this.trees.delete(cwd) // most recently used last
    } else {
      t = { root: undefined, gitDirs: [], gitfiles: [], lock: Promise.resolve() }
      while (this.trees.size >= this.o.maxTrees) this.trees.delete(this.trees.keys().next().value as string)
    }
    this.trees.set(cwd, t)
    return t
  }

  /** Calls in one working directory check one after another (their walks share the tree). */
  private locked<T> (tree: Tree, fn: () => Promise<T>): Promise<T> {
    const run = tree.lock.then(fn, fn)
    tree.lock = run.catch(() => undefined)
    return run
  }

  /**
   * Brings the tree up to date: every known directory lstat'ed, the changed ones (or those
   * whose ctime is at or after `since`) read again, new ones walked. Inside a git
   * directory only modules/ and worktrees/ are walked (they hold git directories).
   */
  private async walk (tree: Tree, cwd: string, b: Budget, since: number): Promise<void> {
    const gitDirs: string[] = []
    const gitfiles: string[] = []
    const rootSt = lstat(cwd)
    let root: DirNode | undefined
    // depth first, without recursion: a frame is a directory to look at and where its node goes
    interface Frame { dir: string; old: DirNode | undefined; st: fs.Stats; parent: DirNode | undefined; name: string }
    const stack: Frame[] = []
    const put = (f: Frame, n: DirNode | undefined): void => {
      if (f.parent === undefined) root = n
      else if (n === undefined) f.parent.children.delete(f.name)
      else f.parent.children.set(f.name, n)
    }
    if (rootSt?.isDirectory() === true) stack.push({ dir: cwd, old: tree.root, st: rootSt, parent: undefined, name: '' })
    while (stack.length > 0) {
      const frame = stack.pop() as Frame
      const { dir, old, st } = frame
      if (!b.take()) {
        put(frame, old)
        continue // keep what was known below; the report says the walk stopped
      }
      await b.breathe()
      let node: DirNode
      if (old !== undefined && old.ino === st.ino && old.ctimeMs === st.ctimeMs && st.ctimeMs < since) {
        node = old
      } else {
        let entries: fs.Dirent[]
        try { entries = fs.readdirSync(dir, { withFileTypes: true }) } catch { put(frame, undefined); continue }
        const names = new Set(entries.map(e => e.name))
        const git = path.basename(dir) === '.git' || looksLikeGitDir(names)
        const gitEntry = entries.find(e => e.name === '.git')
        const children = new Map<string, DirNode>()
        for (const e of entries) {
          if (!e.isDirectory()) continue
          if (git && !(GIT_DIR_CONTAINERS as readonly string[]).includes(e.name)) continue
          children.set(e.name, old?.children.get(e.name) ?? UNSEEN)
        }
        node = { ino: st.ino, ctimeMs: st.ctimeMs, git, gitfile: gitEntry !== undefined && !gitEntry.isDirectory(), children }
      }
      put(frame, node)
      if (node.git) gitDirs.push(dir)
      if (node.gitfile) gitfiles.push(path.join(dir, '.git'))
      for (const [name, child] of node.children) {
        const p = dir + path.sep + name // names from readdir: no separators, no dots to resolve
        const cst = lstat(p)
        if (cst === undefined || !cst.isDirectory()) {
          node.children.delete(name)
          continue
        }
        stack.push({ dir: p, old: child === UNSEEN ? undefined : child, st: cst, parent: node, name })
      }
    }
    tree.root = root
    // gitfile targets inside the working directory are git directories too, wherever they are
    for (const f of gitfiles) {
      const t = gitfileTarget(f)
      if (t !== undefined && isInside(t, cwd) && !gitDirs.includes(t)) gitDirs.push(t)
    }
    tree.gitDirs = gitDirs
    tree.gitfiles = gitfiles
  }

  /**
   * Every control path of the known git directories (and the plan's watched paths), with
   * its role. A core.hooksPath counts only from a config that is itself unchanged: a
   * planted config must not point the check at the user's files.
   */
  private controlPaths (tree: Tree, cwd: string, plan: GitPlan, trusted: (p: string) => boolean): Control[] {
    const out: Control[] = []
    for (const d of tree.gitDirs) {
      for (const n of GIT_CONTROL_FILES) out.push({ path: path.join(d, n), role: n === 'commondir' ? 'commondir' : 'config', gitDir: d })
      const own = path.join(d, 'hooks')
      for (const h of [own, ...hooksPathDirs(d, cwd, plan, this.o.home, trusted)]) {
        out.push({ path: h, role: 'hooks-dir', gitDir: d })
        for (const n of list(h)) if (!isQuarantined(n)) out.push({ path: path.join(h, n), role: h === own ? 'hook' : 'hookspath-entry', gitDir: d })
      }
    }
    for (const f of tree.gitfiles) out.push({ path: f, role: 'gitfile' })
    for (const w of plan.watch) {
      if (w.kind === 'config') out.push({ path: w.path, role: 'config' })
      else {
        out.push({ path: w.path, role: 'hooks-dir' })
        for (const n of list(w.path)) if (!isQuarantined(n)) out.push({ path: path.join(w.path, n), role: 'hookspath-entry' })
      }
    }
    // what the mounts kept read-only could not have changed
    const seen = new Set<string>()
    return out.filter(c => !plan.readOnly.some(r => isInside(c.path, r)) && !seen.has(c.path) && seen.add(c.path) !== undefined)
  }

  private identities (tree: Tree, cwd: string, plan: GitPlan): Baseline {
    const ids = new Set<string>()
    for (const c of this.controlPaths(tree, cwd, plan, () => true)) {
      const id = identity(c.path)
      if (id !== undefined) ids.add(id)
    }
    return { ids, gitDirs: new Set(tree.gitDirs) }
  }

  /** Control files not among the noted identities: each judged, the bad ones moved aside. */
  private judge (tree: Tree, cwd: string, plan: GitPlan, base: Baseline, reader: WorkspaceReader): GuardFinding[] {
    const trusted = (p: string): boolean => { const id = identity(p); return id === undefined || base.ids.has(id) }
    const bad: Array<Control & { why: string }> = []
    for (const c of this.controlPaths(tree, cwd, plan, trusted)) {
      const st = lstat(c.path)
      if (st === undefined || trusted(c.path)) continue
      const why = verdict(c.path, st, c.role, cwd, c.gitDir, reader)
      if (why !== undefined) bad.push({ ...c, why })
    }
    const findings: GuardFinding[] = []
    const broken = new Set<string>()
    for (const b of bad) {
      const d = b.gitDir
      if (d !== undefined && path.basename(d) !== '.git' && !base.gitDirs.has(d)) {
        // A directory that became a repository in this call (HEAD, objects, refs) may be one
        // of the user's (src/ with src/hooks/, src/config): undo the repository, not the files.
        if (!isGitDir(d)) continue // git does not take it for one: nothing of it runs
        if (!broken.has(d)) {
          broken.add(d)
          findings.push(quarantine(path.join(d, 'HEAD'), `makes ${path.relative(cwd, d) || '.'} a git repository whose ${path.relative(d, b.path)} git would run or follow (${b.why})`, cwd))
        }
        continue
      }
      findings.push(quarantine(b.path, b.why, cwd))
    }
    return findings
  }
}

interface Control { path: string; role: Role; gitDir?: string }
interface Baseline { ids: Set<string>; gitDirs: Set<string> }

type Role = 'config' | 'commondir' | 'hooks-dir' | 'hook' | 'hookspath-entry' | 'gitfile'

function list (dir: string): string[] {
  try { return fs.readdirSync(dir).sort() } catch { return [] }
}

function gitfileTarget (f: string): string | undefined {
  const text = nodeFsProbe.readText(f, 4096)
  const t = text === undefined ? undefined : parseGitfile(text, f)
  return t === undefined ? undefined : nodeFsProbe.realpath(t)
}

/** The directories core.hooksPath names for git directory `d` (inside cwd), from trusted configs only. */
function hooksPathDirs (d: string, cwd: string, plan: GitPlan, home: string, trusted: (p: string) => boolean): string[] {
  const common = trusted(path.join(d, 'commondir')) ? commonDirOf(d) : d
  const config = path.join(common, 'config')
  const bytes = trusted(config) ? readLatin1(config) : undefined
  const own = bytes === undefined ? undefined : parseGitConfigBytes(bytes)
  const values = [...plan.userHooksPaths, ...(own?.ok === true ? configValues(own.entries, 'core', 'hookspath') : [])]
  const base = path.basename(d) === '.git' ? path.dirname(d) : d
  const out: string[] = []
  for (const v of values) {
    const h = expandPath(v, base, home)
    if (isInside(h, cwd) && h !== cwd && !out.includes(h)) out.push(h)
  }
  return out
}

/**
 * Why the control file at p must go (undefined: it may stay). What git cannot use (a config
 * that is a directory, a hook that is a directory) stays: it runs nothing.
 */
function verdict (p: string, st: fs.Stats, role: Role, cwd: string, gitDir: string | undefined, reader: WorkspaceReader): string | undefined {
  const link = st.isSymbolicLink()
  switch (role) {
    case 'hook':
    case 'hookspath-entry':
      if (!link && !st.isFile()) return undefined
      if (role === 'hook' && !link && p.endsWith('.sample')) return undefined
      return role === 'hook' ? 'a git hook: git runs it' : 'a file in the hooks directory that core.hooksPath names: git runs it'
    case 'hooks-dir':
      return link ? 'a git hooks directory that is a symlink: git runs what it points at' : undefined
    case 'config': {
      if (link) return 'git config that is a symlink'
      if (!st.isFile()) return undefined
      // what the verdict says (its keys) goes to the model: read beneath the working directory, as the command that wrote it could
      const r = reader.readSync(p, MAX_CONFIG_BYTES)
      if (!r.ok) return 'git config that this check could not read'
      if (r.truncated) return `git config larger than ${MAX_CONFIG_BYTES} bytes`
      return configVerdict(r.bytes.toString('latin1'))
    }
    case 'commondir': {
      if (!link && !st.isFile()) return undefined
      // only a linked worktree's git directory (…/worktrees/NAME) has one, pointing back at its repository
      if (!link && gitDir !== undefined && path.basename(path.dirname(gitDir)) === 'worktrees') {
        const owner = nodeFsProbe.realpath(path.dirname(path.dirname(gitDir)))
        if (owner !== undefined && commonDirOf(gitDir) === owner) return undefined
      }
      return 'a git commondir: git would take hooks and config from where it points'
    }
    case 'gitfile': {
      if (link) return 'a .git that is a symlink'
      if (!st.isFile()) return undefined
      const t = gitfileTarget(p)
      if (t !== undefined && isInside(t, cwd) && isGitDir(t)) return undefined // the target is checked as a git directory
      return 'a .git file that points at no repository inside the working directory'
    }
  }
}

/** Renames p in place to a name git never reads; says where it went, or why it could not. */
function quarantine (p: string, why: string, cwd: string): GuardFinding {
  const rel = path.relative(cwd, p)
  const dir = path.dirname(p)
  // every parent was walked as a real directory; refuse if one has become a symlink since
  if (nodeFsProbe.realpath(dir) !== dir) return { path: rel, why, error: 'its directory changed while it was being checked' }
  for (let i = 0; i < 100; i++) {
    const dest = p + QUARANTINE_SUFFIX + (i === 0 ? '' : `-${i}`)
    if (lstat(dest) !== undefined) continue
    try {
      fs.renameSync(p, dest)
      return { path: rel, why, movedTo: path.relative(cwd, dest) }
    } catch (e) {
      return { path: rel, why, error: (e as Error).message }
    }
  }
  return { path: rel, why, error: 'no free name to move it to' }
}

/** The lines the tool's output gets (empty when there is nothing to say). */
export function guardReportText (r: GuardReport): string {
  const lines: string[] = []
  if (r.findings.length > 0) {
    lines.push('[git guard: this command left files that git on this machine would run or follow; they were moved aside (renamed, not deleted). ' +
      'Do not recreate them: code run by git outside the sandbox is not allowed.')
    for (const f of r.findings) {
      lines.push(f.movedTo !== undefined
        ? `  ${f.path} → ${f.movedTo}: ${f.why}`
        : `  ${f.path}: ${f.why}; COULD NOT BE MOVED (${f.error ?? 'unknown error'}): do not run git in this directory until it is removed]`)
    }
    lines[lines.length - 1] += lines[lines.length - 1]?.endsWith(']') === true ? '' : ']'
  }
  if (r.incomplete !== undefined) lines.push(`[git guard: ${r.incomplete}]`)
  return lines.join('\n')
}
