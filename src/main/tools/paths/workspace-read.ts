/**
 * What the host reads from a workspace on the agent's behalf (the project instructions sent
 * in the system prompt, and any other file it reads there for the agent), read as the
 * sandbox would read it. A sandboxed command may have left anything under the name read — a
 * link to a secret it cannot read itself, a FIFO, a name it swaps while the host reads — so:
 * walked by descriptor beneath a root (beneath.ts: no link followed out of it, no gap
 * between check and use), nothing hidden reached by any spelling or by identity
 * (hidden-guard.ts), opened O_NOFOLLOW|O_NONBLOCK (a FIFO cannot block a thread of the
 * node), read only when the descriptor is a regular file, and at most `maxBytes`.
 */
import fs from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { componentsBeneath, nameError, pathTextError } from './beneath-path'
import { openReached, walkBeneath, type Backend, type WalkGuard, type WalkRefusal, type WalkResult } from './beneath'
import { hiddenGuard, hiddenRules } from './hidden-guard'
import { canonicalPath, hiddenContaining, hiddenForms, isInside } from '../sandbox/hidden-paths'

export interface WorkspaceReaderOptions {
  /** where the walk starts (a repository's root, a working directory): nothing outside it is read */
  root: string
  /** the hidden set (allHidden of the conversation's sandbox policy), as given: every spelling is taken here */
  hidden: readonly string[]
  /**
   * The root is the host's own hidden directory (Arbor's data directory): the hidden paths
   * that contain it do not count against it. Links out of it are still not followed.
   */
  ownRoot?: boolean
  /** how directories are held (default: by descriptor where /proc allows) */
  backend?: Backend
}

export interface WorkspaceReadOptions extends WorkspaceReaderOptions {
  /** the most bytes read; a longer file gives its first maxBytes, marked truncated */
  maxBytes: number
}

export type WorkspaceRead =
  | { ok: true; bytes: Buffer; truncated: boolean; /** where it led, canonical */ path: string }
  /** nothing there (or a directory on the way is missing) */
  | { ok: false; missing: true; reason: string }
  /** there, but not read: why, in words for the user */
  | { ok: false; missing: false; reason: string }

/** What the host's own processes see that a sandboxed command sees only its own of: never read from a workspace. */
const KERNEL_VIEWS = ['/proc', '/sys', '/dev']

/** Tries when a concurrent process keeps swapping the name between the look and the open. */
const OPEN_TRIES = 3

const read = promisify(fs.read)

/**
 * Reads `file` (absolute, or relative to o.root) beneath o.root under the sandbox's read
 * rules; the bytes, or why not.
 */
export async function readWorkspaceFile (file: string, o: WorkspaceReadOptions): Promise<WorkspaceRead> {
  return await workspaceReader(o).read(file, o.maxBytes)
}

/** Reads files beneath one root; `file` absolute, or relative to the root. */
export interface WorkspaceReader {
  read (file: string, maxBytes: number): Promise<WorkspaceRead>
  /** the same, the bytes read synchronously (for a caller that must not yield: a few KiB) */
  readSync (file: string, maxBytes: number): WorkspaceRead
}

/**
 * A reader of files beneath o.root under the sandbox's read rules (the hidden set resolved
 * once, for several files read at once).
 */
export function workspaceReader (o: WorkspaceReaderOptions): WorkspaceReader {
  const root = canonicalPath(o.root)
  const given = path.resolve(o.root)
  const forms = hiddenForms(o.hidden).filter(h => o.ownRoot !== true || !isInside(root, h))
  const hidden = hiddenGuard(root, hiddenRules(forms), met => met.by === 'name'
    ? `${met.viaLink ? `a link to ${path.join(root, ...met.logical)}, ` : ''}inside ${met.hidden}, which is hidden from tools (credentials or Arbor's data); not read`
    : `${met.logical.length === 0 ? root : path.join(root, ...met.logical)} is ${met.hidden}, which is hidden from tools (credentials or Arbor's data); not read`)
  const guard: WalkGuard = {
    path (logical, viaLink) {
      const k = hiddenContaining(path.join(root, ...logical), KERNEL_VIEWS)
      if (k !== undefined) return `${viaLink ? `a link to ${path.join(root, ...logical)}, ` : ''}inside ${k}, the host's own view of the system; not read`
      return hidden.path(logical, viaLink)
    },
    // the host's own directory is not held against itself; what is hidden inside it still is
    reached: (st, logical, dir) => o.ownRoot === true && logical.length === 0 ? undefined : hidden.reached(st, logical, dir)
  }
  const open = (file: string): Opened | WorkspaceRead => {
    const lexical = path.resolve(given, file)
    const bad = pathTextError(file)
    if (bad !== undefined) return { ok: false, missing: false, reason: `${lexical}: ${bad}` }
    // beneath the root as given, or as it really is; else a guess through the directory's real path, walked from the root all the same
    const names = componentsBeneath(lexical, given) ?? componentsBeneath(lexical, root) ??
      componentsBeneath(path.join(canonicalPath(path.dirname(lexical)), path.basename(lexical)), root)
    if (names === undefined) return { ok: false, missing: false, reason: `${lexical}: outside ${root}; not read` }
    const long = nameError(names)
    if (long !== undefined) return { ok: false, missing: false, reason: `${lexical}: ${long}` }
    return openBeneath(root, names, guard, o.backend, lexical)
  }
  return {
    async read (file, maxBytes) {
      const f = open(file)
      if (!('fd' in f)) return f
      try {
        return { ok: true, ...await readCapped(f.fd, maxBytes, f.size), path: f.path }
      } finally {
        fs.closeSync(f.fd)
      }
    },
    readSync (file, maxBytes) {
      const f = open(file)
      if (!('fd' in f)) return f
      try {
        return { ok: true, ...readCappedSync(f.fd, maxBytes, f.size), path: f.path }
      } finally {
        fs.closeSync(f.fd)
      }
    }
  }
}

/** A regular file opened beneath the root: its descriptor (the caller closes it), where it led, its size then. */
interface Opened { fd: number; path: string; size: number }

function openBeneath (root: string, names: string[], guard: WalkGuard, backend: Backend | undefined, shown: string): Opened | WorkspaceRead {
  const refused = (reason: string): WorkspaceRead => ({ ok: false, missing: false, reason: `${shown}: ${reason}` })
  const missing = (reason: string): WorkspaceRead => ({ ok: false, missing: true, reason: `${shown}: ${reason}` })
  // the walk names files by /proc/self/fd/N/...: say the error's code, not that path
  const failed = (e: unknown): WorkspaceRead => refused(`could not be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`)
  for (let t = 0; ; t++) {
    let walked: WalkResult
    try {
      walked = walkBeneath(root, names, guard, { create: false, backend })
    } catch (e) {
      return failed(e)
    }
    if (!walked.ok) {
      if (walked.refusal.kind === 'root' && !fs.existsSync(root)) return missing(`${root} does not exist`)
      return refused(refusalWords(walked.refusal, root))
    }
    const reach = walked.reach
    try {
      const at = path.join(root, ...reach.logical)
      if (reach.missingParent || reach.stat === undefined) return missing('no such file')
      if (!reach.stat.isFile()) return refused(`${reach.viaLink ? `leads to ${at}, which ` : ''}is not a regular file (${kindOf(reach.stat)}); not read`)
      let fd: number
      try {
        fd = openReached(reach, fs.constants.O_RDONLY)
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code
        if (code === 'ENOENT') return missing('no such file')
        // swapped for a link or something else since it was looked at: look again
        if ((code === 'ELOOP' || code === 'ENXIO' || code === 'EMLINK') && t < OPEN_TRIES) continue
        if (code === 'ELOOP' || code === 'ENXIO' || code === 'EMLINK') return refused('kept changing while it was read; not read')
        return failed(e)
      }
      let handed = false
      try {
        // what was opened is what counts: a swap between the look and the open is seen here
        const st = fs.fstatSync(fd)
        if (!st.isFile()) return refused(`is not a regular file (${kindOf(st)}); not read`)
        const h = guard.reached(st, reach.logical, undefined)
        if (h !== undefined) return refused(h)
        handed = true
        return { fd, path: at, size: st.size }
      } finally {
        if (!handed) fs.closeSync(fd)
      }
    } finally {
      reach.close()
    }
  }
}

/** The next piece to read: at most what is left of max + 1 (to see there is more), of the size fstat said + 1 (it may grow), of a MiB. */
const pieceSize = (total: number, max: number, size: number): number => Math.min(max + 1 - total, Math.max(size - total, 0) + 1, 1 << 20)

function capped (chunks: Buffer[], total: number, max: number): { bytes: Buffer; truncated: boolean } {
  const all = Buffer.concat(chunks, total)
  return { bytes: all.subarray(0, Math.min(total, max)), truncated: total > max }
}

/** The first `max` bytes of fd, and whether there was more. */
async function readCapped (fd: number, max: number, size: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = []
  let total = 0
  while (total <= max) {
    const buf = Buffer.allocUnsafe(pieceSize(total, max, size))
    const { bytesRead } = await read(fd, buf, 0, buf.length, total)
    if (bytesRead === 0) break
    chunks.push(buf.subarray(0, bytesRead))
    total += bytesRead
  }
  return capped(chunks, total, max)
}

function readCappedSync (fd: number, max: number, size: number): { bytes: Buffer; truncated: boolean } {
  const chunks: Buffer[] = []
  let total = 0
  while (total <= max) {
    const buf = Buffer.allocUnsafe(pieceSize(total, max, size))
    const bytesRead = fs.readSync(fd, buf, 0, buf.length, total)
    if (bytesRead === 0) break
    chunks.push(buf.subarray(0, bytesRead))
    total += bytesRead
  }
  return capped(chunks, total, max)
}

function kindOf (st: fs.Stats): string {
  if (st.isDirectory()) return 'a directory'
  if (st.isFIFO()) return 'a FIFO'
  if (st.isSocket()) return 'a socket'
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device'
  if (st.isSymbolicLink()) return 'a symlink'
  return 'a special file'
}

function refusalWords (r: WalkRefusal, root: string): string {
  switch (r.kind) {
    case 'outside': return `a link to ${r.resolved}, outside ${root}; not read`
    case 'refused': return r.message
    case 'loop': return 'too many levels of symbolic links; not read'
    case 'not-dir': return `${path.join(root, ...r.logical)} is not a directory; not read`
    case 'root': return r.message
  }
}
