// The one way to keep a state file of the data directory (settings, secrets, cluster, index,
// view state, placement state, the socket's token, the sandbox registry): read with errors a
// user can act on; written whole or not at all, and on disk when the write resolves. A write goes to a unique temporary beside the file, is fsynced, renamed
// over the file, and the directory is fsynced (the rename itself is then durable). On any
// failure the temporary is removed and the previous file is left as it was; what a killed
// writer left is removed before this process first writes that file.
import crypto from 'node:crypto'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { storageError } from './storage-error'

/** The parsed file; undefined when it does not exist. Errors name the file and say what to do. */
export async function readJsonFile (file: string, makeError: (message: string) => Error = m => new Error(m)): Promise<unknown> {
  let text: string
  try {
    text = await fsp.readFile(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw makeError(`cannot read ${file}: ${(err as Error).message}`)
  }
  try {
    return JSON.parse(text) as unknown
  } catch (err) {
    throw makeError(`${file} is not valid JSON (${(err as Error).message}); fix or delete it`)
  }
}

export interface StateFileOptions {
  /** the file's mode, exactly, whatever the umask (default 0600: state files are this user's) */
  mode?: number
}

/** Directories made for state files: private to this user. */
const DIR_MODE = 0o700

/** A state file's content: text (UTF-8) or bytes (the history index's binary snapshot). */
type Content = string | Uint8Array

interface Waiting {
  text: () => Content
  mode: number
  done: Promise<void>
  resolve: () => void
  reject: (err: Error) => void
}

/** Per file (absolute path): whether a write runs, and the one write waiting behind it. */
const files = new Map<string, { running: boolean; next: Waiting | null }>()

/**
 * Writes `content` to `file` whole and durably. Writes to one file run one at a time in call
 * order; while one runs, later calls share the single write waiting behind it, which takes the
 * newest content (pass a function to produce it when the write starts: a burst of changes is
 * one write of the state as it then is). Resolves once the content (or newer) is on disk;
 * rejects with a storage error in words (a full disk names its directory).
 */
export function writeStateFile (file: string, content: Content | (() => Content), opts: StateFileOptions = {}): Promise<void> {
  const key = path.resolve(file)
  const text = typeof content === 'function' ? content : () => content
  const mode = opts.mode ?? 0o600
  let slot = files.get(key)
  if (slot === undefined) {
    slot = { running: false, next: null }
    files.set(key, slot)
  }
  if (slot.next !== null) {
    // coalesced: the waiting write has not started, and whole-file state is superseded by newer state
    slot.next.text = text
    slot.next.mode = mode
    return slot.next.done
  }
  let resolve!: () => void
  let reject!: (err: Error) => void
  const done = new Promise<void>((res, rej) => { resolve = res; reject = rej })
  slot.next = { text, mode, done, resolve, reject }
  if (!slot.running) void drain(key, slot)
  return done
}

async function drain (file: string, slot: { running: boolean; next: Waiting | null }): Promise<void> {
  slot.running = true
  // Start after the caller's synchronous code: changes made in the same tick join this write.
  await Promise.resolve()
  while (slot.next !== null) {
    const w = slot.next
    slot.next = null
    try {
      await writeNow(file, w.text(), w.mode)
      w.resolve()
    } catch (err) {
      w.reject(err as Error)
    }
  }
  slot.running = false
  files.delete(file)
}

async function writeNow (file: string, text: Content, mode: number): Promise<void> {
  const dir = path.dirname(file)
  const tmp = tempName(file)
  try {
    await fsp.mkdir(dir, { recursive: true, mode: DIR_MODE })
    if (!swept.has(file)) {
      for (const name of staleTemps(file, await fsp.readdir(dir))) await fsp.rm(path.join(dir, name), { force: true })
      swept.add(file)
    }
    const fh = await fsp.open(tmp, 'wx', mode)
    try {
      await fh.chmod(mode)
      await fh.writeFile(text)
      await fh.sync()
    } finally {
      await fh.close()
    }
    await fsp.rename(tmp, file)
  } catch (err) {
    await fsp.rm(tmp, { force: true })
    throw storageError(err, dir)
  }
  await syncDir(dir)
}

/** writeStateFile for synchronous callers (the sandbox registry, written once at start). Not queued. */
export function writeStateFileSync (file: string, text: string, opts: StateFileOptions = {}): void {
  const mode = opts.mode ?? 0o600
  const dir = path.dirname(path.resolve(file))
  const tmp = tempName(file)
  try {
    fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE })
    const key = path.resolve(file)
    if (!swept.has(key)) {
      for (const name of staleTemps(key, fs.readdirSync(dir))) fs.rmSync(path.join(dir, name), { force: true })
      swept.add(key)
    }
    const fd = fs.openSync(tmp, 'wx', mode)
    try {
      fs.fchmodSync(fd, mode)
      fs.writeFileSync(fd, text, 'utf8')
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
    fs.renameSync(tmp, file)
  } catch (err) {
    fs.rmSync(tmp, { force: true })
    throw storageError(err, dir)
  }
  syncDirSync(dir)
}

/** A name no other writer (call or process) uses: a shared temporary would let two writes mix. */
function tempName (file: string): string {
  return `${path.resolve(file)}.${process.pid}.${crypto.randomBytes(6).toString('hex')}.tmp`
}

/** Files (absolute paths) whose stale temporaries this process has removed: once, before its first write of each. */
const swept = new Set<string>()

/**
 * The temporaries of `file` among a directory's `names` whose writer is gone: a writer killed
 * between creating its temporary and the rename leaves it, and nothing else would ever remove
 * it. One whose process lives may be a write under way (another process writes the same file).
 */
function staleTemps (file: string, names: string[]): string[] {
  const prefix = path.basename(file) + '.'
  return names.filter(name => {
    if (!name.startsWith(prefix) || !name.endsWith('.tmp')) return false
    const m = /^(\d+)\.[0-9a-f]{12}\.tmp$/.exec(name.slice(prefix.length))
    return m !== null && !alive(Number(m[1]))
  })
}

function alive (pid: number): boolean {
  if (pid === process.pid) return true
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH' // EPERM: it lives, as another user's
  }
}

/** Codes that mean this platform or file system cannot fsync a directory: the rename stands, not durable beyond what it offers. */
const NO_DIR_SYNC = new Set(['EISDIR', 'EINVAL', 'ENOTSUP', 'EPERM', 'EBADF', 'EACCES'])

async function syncDir (dir: string): Promise<void> {
  if (process.platform === 'win32') return // directories cannot be opened for fsync there
  try {
    const d = await fsp.open(dir, 'r')
    try { await d.sync() } finally { await d.close() }
  } catch (err) {
    if (!NO_DIR_SYNC.has((err as NodeJS.ErrnoException).code ?? '')) throw storageError(err, dir)
  }
}

function syncDirSync (dir: string): void {
  if (process.platform === 'win32') return
  try {
    const d = fs.openSync(dir, 'r')
    try { fs.fsyncSync(d) } finally { fs.closeSync(d) }
  } catch (err) {
    if (!NO_DIR_SYNC.has((err as NodeJS.ErrnoException).code ?? '')) throw storageError(err, dir)
  }
}
