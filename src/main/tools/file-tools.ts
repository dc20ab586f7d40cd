/**
 * In-process file tools: read_file, write_file, edit_file, list_dir. Every path is walked
 * under the path policy (inside the working directory, not hidden, writes not into git's
 * directories or onto shell start-up files), the same rules the bash sandbox enforces, and
 * operated on through what the walk holds (beneath.ts): a concurrent symlink swap cannot
 * redirect it. Writes replace the file atomically.
 */
import fs from 'node:fs'
import path from 'node:path'
import { linkedPath } from './paths/beneath-path'
import { openReached, openReachedDir, readAll, replaceReached, TooLargeError, type Dir, type Reach } from './paths/beneath'
import { limitOutput, type OutputLimits } from './output-limit'
import { openToolPath, type PathAccess, type PathPolicyOptions, type PathRules } from './paths/path-policy'
import { canonicalPath } from './sandbox/hidden-paths'
import { argsObject, validateArgs } from './tool-args'
import type { Tool, ToolContext, ToolResult } from './tool'

export interface FileToolOptions extends PathPolicyOptions {
  limits?: OutputLimits
  /** read_file and edit_file refuse larger files (default 20 MB) */
  maxFileBytes?: number
}

const DEFAULT_MAX_FILE_BYTES = 20 * 1024 * 1024
const DEFAULT_READ_LINES = 2000
/** Walks of one call when what was found keeps changing under a concurrent process. */
const TRIES = 3

function err (output: string): ToolResult {
  return { status: 'error', output }
}

function ok (text: string, limits?: OutputLimits): ToolResult {
  const r = limitOutput(text, limits)
  return r.truncated ? { status: 'ok', output: r.text, truncated: true } : { status: 'ok', output: r.text }
}

function fsError (e: unknown, rel: string): ToolResult {
  const code = (e as NodeJS.ErrnoException).code
  if (code === 'ENOENT') return err(`no such file or directory: ${rel}`)
  if (code === 'EISDIR') return err(`${rel} is a directory`)
  if (code === 'ENOTDIR') return err(`a component of ${rel} is not a directory`)
  if (code === 'EACCES' || code === 'EPERM') return err(`permission denied: ${rel}`)
  if (code === 'ELOOP') return err(`${rel} kept changing while it was opened (another process is renaming or replacing it); try again`)
  if (code === 'ENXIO') return err(`${rel} is not a regular file`)
  return err(`${rel}: ${(e as Error).message}`)
}

/** What a tool's body works with: the walk's hold on the path, and the rules for what it finds. */
interface Walked { reach: Reach; relative: string; rules: PathRules }

/**
 * What every file tool does around its own work: check the arguments, walk the path under
 * the policy, run the body on what the walk holds, and close it; a body that found the
 * target replaced by a symlink since the walk (ELOOP) walks again. A file system failure
 * becomes words (or 'cancelled').
 */
async function onPath (args: unknown, tool: Tool, ctx: ToolContext, access: PathAccess, opts: FileToolOptions, create: boolean, body: (w: Walked) => Promise<ToolResult>, fallback?: string): Promise<ToolResult> {
  const bad = validateArgs(tool.parameters, args)
  if (bad !== undefined) return err(bad)
  const a = argsObject(args)
  const p = typeof a.path === 'string' ? a.path : fallback
  if (p === undefined) return err("missing required argument 'path'")
  let rel = p
  for (let t = 1; ; t++) {
    try {
      const o = openToolPath(p, ctx, access, opts, create)
      if (!o.ok) return err(o.error)
      rel = o.relative
      try {
        return await body(o)
      } finally {
        o.reach.close()
      }
    } catch (e) {
      if (ctx.signal.aborted) return err('cancelled')
      if ((e as NodeJS.ErrnoException).code === 'ELOOP' && t < TRIES) continue
      if (e instanceof TooLargeError) return err(`${rel} is ${e.size} bytes, more than ${tool.name} reads (${e.max}); use bash (head, tail, grep) to look at parts of it`)
      return fsError(e, rel)
    }
  }
}

/** The target, opened for reading and checked: a regular file, not a hidden one under another name. */
function openRegular (w: Walked): { fd: number; st: fs.Stats } | ToolResult {
  const r = w.reach
  if (r.missingParent || (r.stat === undefined && r.name !== undefined)) return err(`no such file or directory: ${w.relative}`)
  if (r.name === undefined || r.stat?.isDirectory() === true) return err(`${w.relative} is a directory; use list_dir`)
  if (r.stat?.isFile() !== true) return err(`${w.relative} is not a regular file`)
  const fd = openReached(r, fs.constants.O_RDONLY)
  let keep = false
  try {
    const st = fs.fstatSync(fd)
    const h = w.rules.hiddenAs(st)
    if (h !== undefined) return err(`${w.relative} is hidden from tools: it is ${h}, which holds credentials or Arbor's data`)
    if (!st.isFile()) return err(`${w.relative} is not a regular file`)
    keep = true
    return { fd, st }
  } finally {
    if (!keep) fs.closeSync(fd)
  }
}

/** The content of the target as a regular file (closed after), or why not. */
async function readRegular (w: Walked, max: number, signal: AbortSignal): Promise<{ buf: Buffer; st: fs.Stats } | ToolResult> {
  const f = openRegular(w)
  if ('status' in f) return f
  try {
    return { buf: await readAll(f.fd, max, signal), st: f.st }
  } finally {
    fs.closeSync(f.fd)
  }
}

/** Throws EACCES for an existing file this process may not write: replacing it by rename would not ask. */
function assertWritable (r: Reach): void {
  if (r.name === undefined || r.stat === undefined) return
  try {
    fs.accessSync(r.dir.child(r.name), fs.constants.W_OK)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
  }
}

function looksBinary (buf: Buffer): boolean {
  return buf.subarray(0, 8000).includes(0)
}

export function createReadFileTool (opts: FileToolOptions = {}): Tool {
  const tool: Tool = {
    name: 'read_file',
    description: 'Read a text file in the working directory. Returns its lines; for long files use offset (first line, 1-based) and limit (number of lines).',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'file path, relative to the working directory' },
        offset: { type: 'integer', minimum: 1, description: 'first line to return, 1-based (default 1)' },
        limit: { type: 'integer', minimum: 1, description: `number of lines to return (default ${DEFAULT_READ_LINES})` }
      },
      required: ['path'],
      additionalProperties: false
    },
    effect: 'read',
    timeoutMs: 30_000,
    run: (args, ctx) => onPath(args, tool, ctx, 'read', opts, false, async c => {
      const a = argsObject(args)
      const got = await readRegular(c, opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES, ctx.signal)
      if ('status' in got) return got
      const buf = got.buf
      if (looksBinary(buf)) return err(`${c.relative} is a binary file (${buf.length} bytes); not shown`)
      const lines = buf.toString('utf8').split('\n')
      if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop()
      const from = typeof a.offset === 'number' ? a.offset : 1
      const count = typeof a.limit === 'number' ? a.limit : DEFAULT_READ_LINES
      if (buf.length === 0) return ok('(empty file)')
      if (from > lines.length) return err(`offset ${from} is past the end of ${c.relative} (${lines.length} lines)`)
      const to = Math.min(lines.length, from - 1 + count)
      let text = lines.slice(from - 1, to).join('\n')
      if (from > 1 || to < lines.length) {
        text += `\n[lines ${from}-${to} of ${lines.length}${to < lines.length ? `; continue with offset=${to + 1}` : ''}]`
      }
      return ok(text, opts.limits)
    })
  }
  return tool
}

export function createWriteFileTool (opts: FileToolOptions = {}): Tool {
  const tool: Tool = {
    name: 'write_file',
    description: 'Create or overwrite a file in the working directory with the given content; missing parent directories are created.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'file path, relative to the working directory' },
        content: { type: 'string', description: 'the whole new content' }
      },
      required: ['path', 'content'],
      additionalProperties: false
    },
    effect: 'workspace',
    timeoutMs: 30_000,
    run: (args, ctx) => onPath(args, tool, ctx, 'write', opts, true, async c => {
      const content = argsObject(args).content as string
      const r = c.reach
      if (r.name === undefined || r.stat?.isDirectory() === true) return err(`${c.relative} is a directory`)
      if (r.stat !== undefined && !r.stat.isFile()) return err(`${c.relative} is not a regular file`)
      assertWritable(r)
      await replaceReached(r, Buffer.from(content), r.stat, ctx.signal)
      return ok(`${r.stat !== undefined ? 'overwrote' : 'created'} ${c.relative} (${Buffer.byteLength(content)} bytes)`)
    })
  }
  return tool
}

/** Non-overlapping occurrences of `needle`. */
export function countOccurrences (haystack: string, needle: string): number {
  let n = 0
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) n++
  return n
}

export function createEditFileTool (opts: FileToolOptions = {}): Tool {
  const tool: Tool = {
    name: 'edit_file',
    description: 'Replace one exact occurrence of `old` with `new` in a file. `old` must occur exactly once: include enough surrounding text, whitespace exactly as in the file.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'file path, relative to the working directory' },
        old: { type: 'string', description: 'the exact text to replace; must occur exactly once' },
        new: { type: 'string', description: 'the replacement text' }
      },
      required: ['path', 'old', 'new'],
      additionalProperties: false
    },
    effect: 'workspace',
    timeoutMs: 30_000,
    run: (args, ctx) => onPath(args, tool, ctx, 'write', opts, false, async c => {
      const a = argsObject(args)
      const oldText = a.old as string
      const newText = a.new as string
      if (oldText === '') return err('`old` is empty; give the exact text to replace (to write a whole file use write_file)')
      const got = await readRegular(c, opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES, ctx.signal)
      if ('status' in got) return got
      const content = got.buf.toString('utf8')
      const n = countOccurrences(content, oldText)
      if (n === 0) return err(`\`old\` was not found in ${c.relative} (0 occurrences); read the file and copy the text exactly, whitespace included`)
      if (n > 1) return err(`\`old\` occurs ${n} times in ${c.relative}; include more surrounding text so it occurs exactly once`)
      const at = content.indexOf(oldText)
      const updated = content.slice(0, at) + newText + content.slice(at + oldText.length)
      assertWritable(c.reach)
      await replaceReached(c.reach, Buffer.from(updated), got.st, ctx.signal)
      const line = content.slice(0, at).split('\n').length
      return ok(`replaced 1 occurrence in ${c.relative} at line ${line}`)
    })
  }
  return tool
}

/**
 * One entry of a listing, or undefined to leave it out: a hidden path, by what it is (so a
 * renamed or hard-linked one too) or by name, and a symlink leading to one.
 */
function listed (d: Dir, name: string, here: string, rules: PathRules): string | undefined {
  let st: fs.Stats
  try { st = fs.lstatSync(d.child(name)) } catch { return undefined } // gone since the listing
  if (rules.hiddenAs(st) !== undefined || rules.hiddenName(path.join(here, name)) !== undefined) return undefined
  if (st.isDirectory()) return name + '/'
  if (!st.isSymbolicLink()) return name
  let target: string
  try { target = fs.readlinkSync(d.child(name)) } catch { return `${name} -> ?` }
  if (rules.hiddenName(canonicalPath(linkedPath(here, [], target, []))) !== undefined) return undefined
  try {
    if (rules.hiddenAs(fs.statSync(d.child(name))) !== undefined) return undefined
  } catch { /* dangling: nothing behind it to hide */ }
  return `${name} -> ${target}`
}

export function createListDirTool (opts: FileToolOptions = {}): Tool {
  const tool: Tool = {
    name: 'list_dir',
    description: 'List a directory in the working directory (default: the working directory itself). Directories end in /, symlinks show their target.',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string', description: 'directory path, relative to the working directory (default .)' } },
      additionalProperties: false
    },
    effect: 'read',
    timeoutMs: 30_000,
    run: (args, ctx) => onPath(args, tool, ctx, 'read', opts, false, async c => {
      const r = c.reach
      if (r.missingParent || r.stat === undefined) return err(`no such file or directory: ${c.relative}`)
      if (!r.stat.isDirectory()) return err(`${c.relative} is not a directory; use read_file`)
      let d: Dir
      try {
        d = openReachedDir(r)
      } catch (e) {
        // a directory at the walk, something else now: walk again
        if ((e as NodeJS.ErrnoException).code === 'ENOTDIR') throw Object.assign(e as Error, { code: 'ELOOP' })
        throw e
      }
      try {
        const h = c.rules.hiddenAs(d.stat)
        if (h !== undefined) return err(`${c.relative} is hidden from tools: it is ${h}, which holds credentials or Arbor's data`)
        const names = (await fs.promises.readdir(d.self)).sort()
        if (!r.backend.intact([r.root, r.dir, d])) throw Object.assign(new Error(`${c.relative} changed while it was listed`), { code: 'ELOOP' })
        const here = path.join(r.rootPath, ...r.logical)
        const lines: string[] = []
        for (const name of names) {
          const line = listed(d, name, here, c.rules)
          if (line !== undefined) lines.push(line)
        }
        return ok(lines.length === 0 ? `(${c.relative} is empty)` : lines.join('\n'), opts.limits)
      } finally {
        d.close()
      }
    }, '.')
  }
  return tool
}

export function createFileTools (opts: FileToolOptions = {}): Tool[] {
  return [createReadFileTool(opts), createWriteFileTool(opts), createEditFileTool(opts), createListDirTool(opts)]
}
