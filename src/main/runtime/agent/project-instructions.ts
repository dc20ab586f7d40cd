// Project instructions (AGENTS.md, or CLAUDE.md where a directory has no AGENTS.md): from the
// working directory up to its repository root, plus a global one in the data directory, joined
// into the system prompt under a size cap. What was loaded is recorded (path, sha256, size) in
// the run's agent.started, so the history says what the agent was told. Each file is read as
// the sandbox would read it (tools/workspace-read.ts): a command in the working directory
// may have left anything under these names, and what is read goes to the model server.
import fs from 'node:fs/promises'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { workspaceReader } from '../../tools/paths/workspace-read'

/** The whole of what is joined, at most (as Codex's project_doc_max_bytes). */
export const MAX_INSTRUCTION_BYTES = 32 * 1024
const NAMES = ['AGENTS.md', 'CLAUDE.md'] as const

export interface InstructionFile {
  path: string
  /** of the bytes read (all of the file, or the first `bytes` when it was cut) */
  sha256: string
  bytes: number
  /** the file was longer than what was left of the cap */
  truncated?: true
}

export interface ProjectInstructions {
  /** what joins the system prompt ('' when nothing was found) */
  text: string
  files: InstructionFile[]
  /** files found but not read, saying why (shown to the user, never to the model) */
  skipped: string[]
}

/**
 * The directories whose instructions apply, most specific first: `cwd`, then each parent up
 * to the repository root (the first holding `.git`); outside a repository only `cwd` itself,
 * so no file above the project (a home directory's) joins by accident.
 */
export async function instructionDirs (cwd: string): Promise<string[]> {
  const dirs: string[] = []
  let dir = path.resolve(cwd)
  for (let i = 0; i < 256; i++) {
    dirs.push(dir)
    if (await exists(path.join(dir, '.git'))) return dirs
    const up = path.dirname(dir)
    if (up === dir) break
    dir = up
  }
  return [path.resolve(cwd)]
}

/**
 * Reads the instructions for an agent working in `cwd`. The most specific are kept when the
 * cap is reached (the cwd's over the root's over the global one); they are joined most general
 * first, so a later, more specific one reads as the last word. Each file is walked by
 * descriptor from its repository's root (the global one from the data directory), and one
 * that is a link out of it, into a `hidden` path (the conversation's sandbox policy's hidden
 * set: an AGENTS.md pointing at ~/.ssh/id_rsa or the data directory's secrets.json), or not a
 * regular file is not read; the user is told why.
 */
export async function loadInstructions (o: { cwd: string; dataDir: string; hidden: readonly string[]; maxBytes?: number }): Promise<ProjectInstructions> {
  const max = o.maxBytes ?? MAX_INSTRUCTION_BYTES
  const dirs = await instructionDirs(o.cwd)
  const top = dirs[dirs.length - 1] as string
  const data = path.resolve(o.dataDir)
  const project = workspaceReader({ root: top, hidden: o.hidden })
  // the data directory is hidden from the sandbox, but it is the host's own
  const global = workspaceReader({ root: data, hidden: o.hidden, ownRoot: true })
  const candidates = [...dirs.map(dir => ({ dir, reader: project })), { dir: data, reader: global }]
  const picked: Array<{ file: InstructionFile; text: string }> = []
  const skipped: string[] = []
  let left = max
  for (const { dir, reader } of candidates) {
    if (left <= 0) break
    for (const name of NAMES) {
      const file = path.join(dir, name)
      const read = await reader.read(file, left)
      if (!read.ok && read.missing) continue
      if (!read.ok) { skipped.push(read.reason); break }
      // cut on a character boundary: never half a UTF-8 sequence
      const bytes = read.truncated ? utf8Prefix(read.bytes) : read.bytes
      left -= bytes.length
      const entry: InstructionFile = { path: file, sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.length }
      if (read.truncated) entry.truncated = true
      picked.push({ file: entry, text: bytes.toString('utf8') })
      break // AGENTS.md found: CLAUDE.md beside it is not read
    }
  }
  picked.reverse() // most general first
  const text = picked.map(p => `Instructions from ${p.file.path}${p.file.truncated === true ? ' (cut at the size limit)' : ''}:\n${p.text.trimEnd()}`).join('\n\n')
  return { text, files: picked.map(p => p.file), skipped }
}

/** The longest start of `buf` that ends on a UTF-8 character boundary (a sequence cut short at the end is dropped). */
export function utf8Prefix (buf: Buffer): Buffer {
  // the last lead byte within a sequence's length of the end, and whether its sequence fits
  for (let i = buf.length - 1; i >= 0 && i >= buf.length - 4; i--) {
    const b = buf[i] as number
    if ((b & 0xc0) === 0x80) continue // a continuation byte
    const len = b < 0x80 ? 1 : (b & 0xe0) === 0xc0 ? 2 : (b & 0xf0) === 0xe0 ? 3 : (b & 0xf8) === 0xf0 ? 4 : 1
    return i + len > buf.length ? buf.subarray(0, i) : buf
  }
  return buf
}

async function exists (p: string): Promise<boolean> {
  try {
    await fs.stat(p)
    return true
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    // there but unreadable (EACCES): still where the repository starts
    return code !== 'ENOENT' && code !== 'ENOTDIR'
  }
}
