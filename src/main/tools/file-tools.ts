/**
 * In-process file tools: read_file, write_file, edit_file, list_dir. Every path goes
 * through the path policy (inside the working directory, not hidden, writes not onto git
 * hooks or shell start-up files), the same rules the bash sandbox enforces.
 */
import fs from 'node:fs/promises'
import path from 'node:path'
import { limitOutput, type OutputLimits } from './output-limit'
import { resolveToolPath, type PathAccess, type PathCheck, type PathPolicyOptions } from './path-policy'
import { canonicalPath, hiddenContaining, hiddenForms } from './sandbox/hidden-paths'
import { allHidden } from './sandbox/bwrap-args'
import { argsObject, validateArgs } from './tool-args'
import type { Tool, ToolContext, ToolResult } from './tool'
import os from 'node:os'

export interface FileToolOptions extends PathPolicyOptions {
  limits?: OutputLimits
  /** read_file refuses larger files (default 20 MB) */
  maxFileBytes?: number
}

const DEFAULT_MAX_FILE_BYTES = 20 * 1024 * 1024
const DEFAULT_READ_LINES = 2000

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
  return err(`${rel}: ${(e as Error).message}`)
}

function checked (args: unknown, tool: Tool, ctx: ToolContext, access: PathAccess, opts: FileToolOptions, fallback?: string): PathCheck {
  const bad = validateArgs(tool.parameters, args)
  if (bad !== undefined) return { ok: false, error: bad }
  const a = argsObject(args)
  const p = typeof a.path === 'string' ? a.path : fallback
  if (p === undefined) return { ok: false, error: "missing required argument 'path'" }
  return resolveToolPath(p, ctx, access, opts)
}

type CheckedPath = Extract<PathCheck, { ok: true }>

/**
 * What every file tool does around its own work: check the arguments and the path under
 * the policy, then turn a file system failure into words (or 'cancelled').
 */
async function onPath (args: unknown, tool: Tool, ctx: ToolContext, access: PathAccess, opts: FileToolOptions, body: (c: CheckedPath) => Promise<ToolResult>, fallback?: string): Promise<ToolResult> {
  const c = checked(args, tool, ctx, access, opts, fallback)
  if (!c.ok) return err(c.error)
  try {
    return await body(c)
  } catch (e) {
    if (ctx.signal.aborted) return err('cancelled')
    return fsError(e, c.relative)
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
    run: (args, ctx) => onPath(args, tool, ctx, 'read', opts, async c => {
      const a = argsObject(args)
      const st = await fs.stat(c.path)
      if (st.isDirectory()) return err(`${c.relative} is a directory; use list_dir`)
      if (!st.isFile()) return err(`${c.relative} is not a regular file`)
      const max = opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES
      if (st.size > max) return err(`${c.relative} is ${st.size} bytes, more than read_file reads (${max}); use bash (head, tail, grep) to look at parts of it`)
      const buf = await fs.readFile(c.path, { signal: ctx.signal })
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
    run: (args, ctx) => onPath(args, tool, ctx, 'write', opts, async c => {
      const content = argsObject(args).content as string
      let existed = true
      try {
        const st = await fs.stat(c.path)
        if (st.isDirectory()) return err(`${c.relative} is a directory`)
      } catch { existed = false }
      await fs.mkdir(path.dirname(c.path), { recursive: true })
      await fs.writeFile(c.path, content, { signal: ctx.signal })
      return ok(`${existed ? 'overwrote' : 'created'} ${c.relative} (${Buffer.byteLength(content)} bytes)`)
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
    run: (args, ctx) => onPath(args, tool, ctx, 'write', opts, async c => {
      const a = argsObject(args)
      const oldText = a.old as string
      const newText = a.new as string
      if (oldText === '') return err('`old` is empty; give the exact text to replace (to write a whole file use write_file)')
      const st = await fs.stat(c.path)
      if (!st.isFile()) return err(`${c.relative} is not a regular file`)
      const content = await fs.readFile(c.path, 'utf8')
      const n = countOccurrences(content, oldText)
      if (n === 0) return err(`\`old\` was not found in ${c.relative} (0 occurrences); read the file and copy the text exactly, whitespace included`)
      if (n > 1) return err(`\`old\` occurs ${n} times in ${c.relative}; include more surrounding text so it occurs exactly once`)
      const at = content.indexOf(oldText)
      const updated = content.slice(0, at) + newText + content.slice(at + oldText.length)
      await fs.writeFile(c.path, updated, { signal: ctx.signal })
      const line = content.slice(0, at).split('\n').length
      return ok(`replaced 1 occurrence in ${c.relative} at line ${line}`)
    })
  }
  return tool
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
    run: (args, ctx) => onPath(args, tool, ctx, 'read', opts, async c => {
      const entries = await fs.readdir(c.path, { withFileTypes: true })
      const forms = hiddenForms(allHidden(ctx.sandbox, opts.home ?? os.homedir(), opts.dataDir), opts.fs)
      const lines: string[] = []
      for (const e of entries.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0))) {
        const full = path.join(c.path, e.name)
        if (hiddenContaining(canonicalPath(full, opts.fs), forms) !== undefined) continue
        if (e.isDirectory()) lines.push(e.name + '/')
        else if (e.isSymbolicLink()) lines.push(`${e.name} -> ${await fs.readlink(full).catch(() => '?')}`)
        else lines.push(e.name)
      }
      return ok(lines.length === 0 ? `(${c.relative} is empty)` : lines.join('\n'), opts.limits)
    }, '.')
  }
  return tool
}

export function createFileTools (opts: FileToolOptions = {}): Tool[] {
  return [createReadFileTool(opts), createWriteFileTool(opts), createEditFileTool(opts), createListDirTool(opts)]
}
