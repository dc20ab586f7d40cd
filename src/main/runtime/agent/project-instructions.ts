// Project instructions (AGENTS.md, or CLAUDE.md where a directory has no AGENTS.md): from the
// working directory up to its repository root, plus a global one in the data directory, joined
// into the system prompt under a size cap. What was loaded is recorded (path, sha256, size) in
// the run's agent.started, so the history says what the agent was told.
import fs from 'node:fs/promises'
import path from 'node:path'
import { createHash } from 'node:crypto'

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
 * first, so a later, more specific one reads as the last word. A file that is a link out of
 * its project (an AGENTS.md pointing at ~/.ssh/id_rsa in a cloned repository) is not read.
 */
export async function loadInstructions (o: { cwd: string; dataDir: string; maxBytes?: number }): Promise<ProjectInstructions> {
  const max = o.maxBytes ?? MAX_INSTRUCTION_BYTES
  const dirs = await instructionDirs(o.cwd)
  const top = dirs[dirs.length - 1] as string
  // the real paths a file must resolve inside, each read once (a root that is itself a link is followed)
  const [project, data] = await Promise.all([fs.realpath(top), fs.realpath(path.resolve(o.dataDir)).catch(() => path.resolve(o.dataDir))])
  const candidates: Array<{ dir: string; within: string }> = [...dirs.map(dir => ({ dir, within: project })), { dir: path.resolve(o.dataDir), within: data }]
  const picked: Array<{ file: InstructionFile; text: string }> = []
  const skipped: string[] = []
  let left = max
  for (const { dir, within } of candidates) {
    if (left <= 0) break
    for (const name of NAMES) {
      const file = path.join(dir, name)
      const read = await readCapped(file, within, left)
      if (read === null) continue
      if (typeof read === 'string') { skipped.push(read); break }
      left -= read.bytes.length
      const entry: InstructionFile = { path: file, sha256: createHash('sha256').update(read.bytes).digest('hex'), bytes: read.bytes.length }
      if (read.truncated) entry.truncated = true
      picked.push({ file: entry, text: read.bytes.toString('utf8') })
      break // AGENTS.md found: CLAUDE.md beside it is not read
    }
  }
  picked.reverse() // most general first
  const text = picked.map(p => `Instructions from ${p.file.path}${p.file.truncated === true ? ' (cut at the size limit)' : ''}:\n${p.text.trimEnd()}`).join('\n\n')
  return { text, files: picked.map(p => p.file), skipped }
}

/** The file's first `max` bytes; null if there is none; a string saying why it is not read. `within`: a real path. */
async function readCapped (file: string, within: string, max: number): Promise<{ bytes: Buffer; truncated: boolean } | string | null> {
  let real: string
  try {
    const st = await fs.stat(file)
    if (!st.isFile()) return null
    real = await fs.realpath(file)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return null
    return `${file}: ${(err as Error).message}`
  }
  if (real !== within && !real.startsWith(within + path.sep)) return `${file}: a link to ${real}, outside ${within}; not read`
  const h = await fs.open(real, 'r')
  try {
    const buf = Buffer.alloc(max + 1)
    const { bytesRead } = await h.read(buf, 0, max + 1, 0)
    const truncated = bytesRead > max
    // cut on a character boundary: never half a UTF-8 sequence
    let end = Math.min(bytesRead, max)
    if (truncated) while (end > 0 && ((buf[end] as number) & 0xc0) === 0x80) end--
    return { bytes: buf.subarray(0, end), truncated }
  } finally {
    await h.close()
  }
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
