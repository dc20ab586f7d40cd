/**
 * The sandbox's file rules for in-process tools (read_file, write_file, ...): a path must
 * resolve, symlinks followed, inside the working directory and outside every hidden path;
 * writes also stay off the files the host runs later (git hooks, shell start-up files).
 * The same rules bwrap enforces for the bash tool (sandbox/bwrap-args.ts).
 */
import os from 'node:os'
import path from 'node:path'
import type { SandboxPolicy } from './sandbox-policy'
import { allHidden, PROTECTED_IN_CWD, SandboxPolicyError, sandboxCwd } from './sandbox/bwrap-args'
import { gitWriteRefusal, planGitProtection } from './sandbox/git-guard'
import { canonicalPath, hiddenContaining, hiddenForms, isInside, nodeFsProbe, type FsProbe } from './sandbox/hidden-paths'

export type PathAccess = 'read' | 'write'

export type PathCheck =
  | { ok: true; /** canonical absolute path to operate on */ path: string; /** relative to the working directory ('.' for itself) */ relative: string }
  | { ok: false; error: string }

export interface PathPolicyOptions {
  /** home directory for the default hidden set (default os.homedir()) */
  home?: string
  /** Arbor's data directory, hidden */
  dataDir?: string
  fs?: FsProbe
}

export interface PathContext {
  /** where relative paths start (the tool's cwd) */
  cwd: string
  sandbox: SandboxPolicy
}

/**
 * Resolves `p` (relative to ctx.cwd, or absolute) and checks it. Operate on the returned
 * path, not on `p`: that is the path that was checked. (A command running concurrently in
 * the working directory could still swap a component for a symlink between the check and
 * the use; the bash sandbox does not depend on this check.)
 */
export function resolveToolPath (p: string, ctx: PathContext, access: PathAccess, opts: PathPolicyOptions = {}): PathCheck {
  const probe = opts.fs ?? nodeFsProbe
  if (typeof p !== 'string') return { ok: false, error: 'the path must be a string' }
  if (p.includes('\0')) return { ok: false, error: 'the path contains a NUL character' }
  const hidden = allHidden(ctx.sandbox, opts.home ?? os.homedir(), opts.dataDir, probe)
  let root: string
  try {
    root = sandboxCwd(ctx.sandbox, hidden, probe, opts.home ?? os.homedir())
  } catch (e) {
    if (e instanceof SandboxPolicyError) return { ok: false, error: e.message }
    throw e
  }
  const base = canonicalPath(ctx.cwd, probe)
  if (!isInside(base, root)) return { ok: false, error: `the tool's directory ${ctx.cwd} is outside the working directory ${ctx.sandbox.cwd}` }

  const lexical = path.resolve(base, p === '' ? '.' : p)
  const target = canonicalPath(lexical, probe)
  const via = target !== lexical ? ` (it resolves to ${target} through a symlink)` : ''
  if (!isInside(target, root)) {
    return { ok: false, error: `${p} is outside the working directory ${ctx.sandbox.cwd}${via}; tools may only touch files inside it` }
  }
  const h = hiddenContaining(target, hiddenForms(hidden, probe))
  if (h !== undefined) return { ok: false, error: `${p} is hidden from tools: ${h} holds credentials or Arbor's data${via}` }
  if (access === 'write') {
    const prot = PROTECTED_IN_CWD.map(rel => path.join(root, rel)).find(q => isInside(target, q))
    const git = prot === undefined ? gitWriteRefusal(target, root, planGitProtection(root, { home: opts.home ?? os.homedir(), probe }), probe) : undefined
    if (prot !== undefined || git !== undefined) {
      return { ok: false, error: `${p} is read-only for tools: ${prot !== undefined ? path.relative(root, prot) : git} is run by programs outside the sandbox (git hooks and config, shell start-up files)` }
    }
  }
  return { ok: true, path: target, relative: path.relative(root, target) || '.' }
}
