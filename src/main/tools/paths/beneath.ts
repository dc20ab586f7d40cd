/**
 * Opening files beneath a directory so that nothing swapped in concurrently can lead out
 * of it. A path is walked one name at a time from a handle of the directory, no name is
 * opened following a symlink, and a symlink met on the way is read and its target walked
 * again from the top (followed only while it stays beneath). There is no gap between check
 * and use: the directory checked is the descriptor used.
 *
 * Linux has openat(2) but Node does not; `/proc/self/fd/N/name` is the same thing: the
 * kernel resolves `/proc/self/fd/N` to the very directory descriptor N holds (wherever it
 * has been moved) and looks `name` up in it, and open, mkdir, rename, lstat and readlink of
 * such a path never leave that directory.
 *
 * Where /proc is missing (macOS, Windows) the fallback walks full paths, lstat-ing each
 * name, opens the last with O_NOFOLLOW (none on Windows: there the file opened must be the
 * one lstat-ed), and checks again, after opening and before renaming a written file into
 * place, that the directory's path still leads to the directory walked (dev, ino). It
 * refuses a swap still in place at those checks; a swap made and undone within the
 * microseconds between them goes unseen (a read could return such a file, a rename could
 * land there). Arbor has no sandboxed shell on those systems to run such a race from; a
 * process of the user's could, and is out of scope.
 */
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { componentsBeneath, linkedPath, MAX_LINK_HOPS } from './beneath-path'
import { canonicalPath } from '../sandbox/hidden-paths'

const C = fs.constants
// Windows has neither; there the fallback's identity checks are all there is.
const O_NOFOLLOW = C.O_NOFOLLOW ?? 0
const O_DIRECTORY = C.O_DIRECTORY ?? 0
// A FIFO swapped in must not block the open (and the node) waiting for a writer.
const O_NONBLOCK = C.O_NONBLOCK ?? 0
const O_NOCTTY = C.O_NOCTTY ?? 0
const DIR_FLAGS = C.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK
const FILE_FLAGS = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY

/** A directory held for looking names up in it. */
export interface Dir {
  /** a path the kernel resolves to this directory */
  readonly self: string
  /** a path naming `name` in this directory (a single name, no separator) */
  child (name: string): string
  /** what the directory is (fstat of the descriptor, or lstat in the fallback) */
  readonly stat: fs.Stats
  close (): void
}

/** How directories are held: by descriptor (/proc) or by path (the fallback). */
export interface Backend {
  readonly kind: 'fd' | 'path'
  /** the directory at the canonical path `p`, refused if `p` no longer leads there plainly */
  root (p: string): Dir
  /** the directory `name` in `parent`; ENOTDIR when it is a symlink or not a directory */
  dir (parent: Dir, name: string): Dir
  /** open(2) of `name` in `parent`, never following a symlink there */
  open (parent: Dir, name: string, flags: number, mode?: number): number
  /** mkdir(2) of `name` in `parent` (EEXIST when there is one) */
  mkdir (parent: Dir, name: string): void
  /** the directories walked are still the ones walked (always, when held by descriptor) */
  intact (dirs: readonly Dir[]): boolean
}

function errno (code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${message}`), { code })
}

export function sameFile (a: fs.Stats, b: fs.Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino
}

class FdDir implements Dir {
  private open = true
  constructor (readonly fd: number, readonly stat: fs.Stats) {}
  get self (): string { return `/proc/self/fd/${this.fd}` }
  child (name: string): string { return `/proc/self/fd/${this.fd}/${name}` }
  close (): void {
    if (this.open) fs.closeSync(this.fd)
    this.open = false
  }
}

function fdDir (fd: number): FdDir {
  try {
    return new FdDir(fd, fs.fstatSync(fd))
  } catch (e) {
    fs.closeSync(fd)
    throw e
  }
}

const byDescriptor: Backend = {
  kind: 'fd',
  root (p) {
    // the root's path is canonical: a symlink in it now, or a path leading elsewhere, is a swap
    let d: FdDir
    try {
      d = fdDir(fs.openSync(p, DIR_FLAGS))
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code
      if (code === 'ENOTDIR' || code === 'ELOOP') throw errno('ESTALE', `the working directory ${p} was moved or replaced`)
      throw e
    }
    let now: string | undefined
    try { now = fs.readlinkSync(d.self) } catch { now = undefined }
    if (now !== p) {
      d.close()
      throw errno('ESTALE', `the working directory ${p} was moved or replaced (it is now ${now ?? 'gone'})`)
    }
    return d
  },
  dir: (parent, name) => fdDir(fs.openSync(parent.child(name), DIR_FLAGS)),
  open: (parent, name, flags, mode) => fs.openSync(parent.child(name), flags | FILE_FLAGS, mode),
  mkdir: (parent, name) => fs.mkdirSync(parent.child(name)),
  intact: () => true
}

class PathDir implements Dir {
  constructor (readonly self: string, readonly stat: fs.Stats) {}
  child (name: string): string { return path.join(this.self, name) }
  close (): void { /* nothing held */ }
}

const byPath: Backend = {
  kind: 'path',
  root (p) {
    const st = fs.lstatSync(p)
    if (!st.isDirectory()) throw errno('ESTALE', `the working directory ${p} was moved or replaced`)
    return new PathDir(p, st)
  },
  dir (parent, name) {
    const p = parent.child(name)
    const st = fs.lstatSync(p)
    if (!st.isDirectory()) throw errno('ENOTDIR', `${p} is not a directory`)
    return new PathDir(p, st)
  },
  open: (parent, name, flags, mode) => fs.openSync(parent.child(name), flags | FILE_FLAGS, mode),
  mkdir (parent, name) {
    // by path there is no mkdirat: check right before (narrows the window) and right after (says so)
    if (!byPath.intact([parent])) throw errno('ELOOP', `${parent.self} changed before ${name} was made in it`)
    fs.mkdirSync(parent.child(name))
    if (!byPath.intact([parent])) throw errno('ELOOP', `${parent.self} changed while ${name} was made in it`)
  },
  intact: dirs => dirs.every(d => {
    try {
      const st = fs.lstatSync(d.self)
      return st.isDirectory() && sameFile(st, d.stat)
    } catch { return false }
  })
}

let chosen: Backend | undefined

/** /proc/self/fd/N/name resolves in the directory N holds (Linux with /proc mounted). */
function procWorks (): boolean {
  if (process.platform !== 'linux') return false
  let fd: number | undefined
  try {
    fd = fs.openSync('/', DIR_FLAGS)
    return fs.readlinkSync(`/proc/self/fd/${fd}`) === '/' && sameFile(fs.statSync(`/proc/self/fd/${fd}/.`), fs.fstatSync(fd))
  } catch {
    return false
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/** The backend for this process: by descriptor where /proc allows it, else by path. */
export function fileBackend (): Backend {
  chosen ??= procWorks() ? byDescriptor : byPath
  return chosen
}

/** Both backends, for tests that run the same checks on each. */
export const BACKENDS: Readonly<Record<Backend['kind'], Backend>> = { fd: byDescriptor, path: byPath }

/** What the caller refuses along the way (the path rules: hidden, protected). */
export interface WalkGuard {
  /** before walking `logical` (names below the root; again after every symlink): a reason to refuse, or undefined */
  path (logical: readonly string[], viaLink: boolean): string | undefined
  /** each directory entered (dir given) and the target found: a reason to refuse it for what it is, or undefined */
  reached (st: fs.Stats, logical: readonly string[], dir: Dir | undefined): string | undefined
}

export type WalkRefusal =
  | { kind: 'outside'; resolved: string }
  | { kind: 'refused'; message: string }
  | { kind: 'loop' }
  | { kind: 'not-dir'; logical: string[] }
  | { kind: 'root'; message: string }

/** A path walked: the directory holding the target, held until close(). */
export interface Reach {
  readonly backend: Backend
  /** the canonical path of the root walked from */
  readonly rootPath: string
  readonly root: Dir
  /** the directory holding the target (the root for the root itself) */
  readonly dir: Dir
  /** the target's name in dir; undefined for the root itself */
  readonly name: string | undefined
  /** lstat of the target; undefined when it does not exist */
  readonly stat: fs.Stats | undefined
  /** a directory on the way does not exist (only when not creating them); dir and name are then not usable */
  readonly missingParent: boolean
  /** names below the root as walked, symlinks resolved */
  readonly logical: readonly string[]
  /** a symlink was followed on the way */
  readonly viaLink: boolean
  close (): void
}

export type WalkResult = { ok: true; reach: Reach } | { ok: false; refusal: WalkRefusal }

export interface WalkOptions {
  /** create missing directories on the way (mode 0777 less the umask) */
  create: boolean
  backend?: Backend
}

/** Tries for one name before giving up when a concurrent process keeps removing or replacing it. */
const RACE_TRIES = 3

type Step = { dir: Dir } | { redirect: string[] } | { refusal: WalkRefusal } | { missing: true }

/**
 * Walks `names` (below `root`, canonical and absolute) from a handle of `root`. Every
 * directory entered and the target are shown to the guard; a symlink anywhere, the last
 * name included, is followed only when its target lies beneath `root`, by walking the
 * target from the top again. File system errors other than those are thrown.
 */
export function walkBeneath (root: string, names: readonly string[], guard: WalkGuard, opts: WalkOptions): WalkResult {
  const backend = opts.backend ?? fileBackend()
  let top: Dir
  try {
    top = backend.root(root)
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'ESTALE') return { ok: false, refusal: { kind: 'root', message: (e as Error).message.replace(/^ESTALE: /, '') } }
    if (code === 'ENOENT') return { ok: false, refusal: { kind: 'root', message: `the working directory ${root} does not exist` } }
    throw e
  }
  let dir: Dir = top
  const enterDir = (d: Dir): void => {
    if (dir !== top) dir.close()
    dir = d
  }
  let handedOver = false
  const reach = (name: string | undefined, stat: fs.Stats | undefined, missingParent: boolean, logical: string[], viaLink: boolean): WalkResult => {
    handedOver = true
    const held = dir
    return {
      ok: true,
      reach: {
        backend, rootPath: root, root: top, dir: held, name, stat, missingParent, logical, viaLink,
        close: () => { if (held !== top) held.close(); top.close() }
      }
    }
  }
  const refused = (message: string): WalkResult => ({ ok: false, refusal: { kind: 'refused', message } })
  try {
    const bad = guard.reached(top.stat, [], top)
    if (bad !== undefined) return refused(bad)
    let logical = [...names]
    let viaLink = false
    for (let hops = 0; ; hops++) {
      if (hops > MAX_LINK_HOPS) return { ok: false, refusal: { kind: 'loop' } }
      const bad = guard.path(logical, viaLink)
      if (bad !== undefined) return refused(bad)
      enterDir(top)
      let step: Step | undefined
      for (let i = 0; i < logical.length - 1; i++) {
        step = enter(backend, root, dir, logical, i, opts.create)
        if (!('dir' in step)) break
        enterDir(step.dir)
        const bad = guard.reached(step.dir.stat, logical.slice(0, i + 1), step.dir)
        if (bad !== undefined) return refused(bad)
      }
      if (step !== undefined && 'refusal' in step) return { ok: false, refusal: step.refusal }
      if (step !== undefined && 'redirect' in step) { logical = step.redirect; viaLink = true; continue }
      if (step !== undefined && 'missing' in step) return reach(undefined, undefined, true, logical, viaLink)

      const name = logical[logical.length - 1]
      if (name === undefined) return reach(undefined, top.stat, false, logical, viaLink)
      const st = lstatOrUndefined(dir.child(name))
      if (st?.isSymbolicLink() === true) {
        const link = readLink(dir, name)
        if (link === undefined || link === 'gone') continue // replaced since the lstat: look again (a hop all the same)
        const to = beneath(root, linkedPath(root, logical.slice(0, -1), link, []))
        if (!Array.isArray(to)) return { ok: false, refusal: to }
        logical = to
        viaLink = true
        continue
      }
      if (st !== undefined) {
        const bad = guard.reached(st, logical, undefined)
        if (bad !== undefined) return refused(bad)
      }
      return reach(name, st, false, logical, viaLink)
    }
  } finally {
    if (!handedOver) {
      if (dir !== top) dir.close()
      top.close()
    }
  }
}

/** Into the directory logical[i] from dir: creating it when asked, or where a symlink there leads. */
function enter (backend: Backend, root: string, dir: Dir, logical: readonly string[], i: number, create: boolean): Step {
  const name = logical[i] as string
  for (let t = 0; ; t++) {
    try {
      return { dir: backend.dir(dir, name) }
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code
      if (t >= RACE_TRIES || (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'ELOOP')) throw e
      if (code === 'ENOENT') {
        if (!create) return { missing: true }
        try { backend.mkdir(dir, name) } catch (m) { if ((m as NodeJS.ErrnoException).code !== 'EEXIST') throw m }
        continue
      }
      const link = readLink(dir, name)
      if (link === 'gone') continue // removed since: look again (and create it, if asked)
      if (link === undefined) {
        const now = lstatOrUndefined(dir.child(name))
        if (now === undefined || now.isDirectory()) continue // gone, or a directory again: look again
        return { refusal: { kind: 'not-dir', logical: logical.slice(0, i + 1) } }
      }
      const to = beneath(root, linkedPath(root, logical.slice(0, i), link, logical.slice(i + 1)))
      return Array.isArray(to) ? { redirect: to } : { refusal: to }
    }
  }
}

function lstatOrUndefined (p: string): fs.Stats | undefined {
  return fs.lstatSync(p, { throwIfNoEntry: false })
}

/** The symlink `name` in dir: its target, 'gone' when it no longer exists, undefined when it is not a symlink. */
function readLink (dir: Dir, name: string): string | 'gone' | undefined {
  try {
    return fs.readlinkSync(dir.child(name))
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return 'gone'
    if (code === 'EINVAL' || code === 'ENOTDIR') return undefined
    throw e
  }
}

/**
 * The names below root for an absolute path reached through a symlink: lexically, or else
 * through its canonical form (a spelling of the root via another symlink, /proc/self/root,
 * macOS's /var for /private/var). The canonical form is only a guess at names: whatever it
 * says is walked again from the root's handle.
 */
function beneath (root: string, abs: string): string[] | WalkRefusal {
  const lexical = componentsBeneath(abs, root)
  if (lexical !== undefined) return lexical
  const real = canonicalPath(abs)
  return componentsBeneath(real, root) ?? { kind: 'outside', resolved: real }
}

/** The target reached, opened (never following a symlink); with the fallback, checked to be the one walked. */
export function openReached (reach: Reach, flags: number, mode?: number): number {
  if (reach.name === undefined || reach.missingParent) throw errno('EINVAL', 'nothing to open')
  const fd = reach.backend.open(reach.dir, reach.name, flags, mode)
  if (reach.backend.kind === 'path') {
    try {
      const st = fs.fstatSync(fd)
      if ((reach.stat !== undefined && (flags & C.O_CREAT) === 0 && !sameFile(st, reach.stat)) || !reach.backend.intact([reach.root, reach.dir])) {
        throw errno('ELOOP', `${reach.name} changed while it was opened`)
      }
    } catch (e) {
      fs.closeSync(fd)
      throw e
    }
  }
  return fd
}

/** The directory reached (the root itself, or `name`), held until closed. */
export function openReachedDir (reach: Reach): Dir {
  if (reach.missingParent) throw errno('ENOENT', 'a directory on the way does not exist')
  if (reach.name === undefined) return { self: reach.root.self, stat: reach.root.stat, child: n => reach.root.child(n), close: () => {} }
  return reach.backend.dir(reach.dir, reach.name)
}

const read = promisify(fs.read)
const write = promisify(fs.write)

function abortError (signal: AbortSignal): Error {
  return Object.assign(new Error('cancelled', { cause: signal.reason }), { name: 'AbortError', code: 'ABORT_ERR' })
}

/** A file too big to read whole. */
export class TooLargeError extends Error {
  override name = 'TooLargeError'
  constructor (readonly size: number, readonly max: number) { super(`${size} bytes, more than ${max}`) }
}

/** The whole content of fd, refusing more than `max` bytes (it may grow while read). */
export async function readAll (fd: number, max: number, signal: AbortSignal): Promise<Buffer> {
  const size = fs.fstatSync(fd).size
  if (size > max) throw new TooLargeError(size, max)
  const chunks: Buffer[] = []
  let total = 0
  for (;;) {
    if (signal.aborted) throw abortError(signal)
    const buf = Buffer.allocUnsafe(Math.min(Math.max(size - total, 0) + 1, max + 1 - total, 1 << 20))
    const { bytesRead } = await read(fd, buf, 0, buf.length, null)
    if (bytesRead === 0) break
    chunks.push(buf.subarray(0, bytesRead))
    total += bytesRead
    if (total > max) throw new TooLargeError(total, max)
  }
  return Buffer.concat(chunks, total)
}

async function writeAll (fd: number, data: Buffer, signal: AbortSignal): Promise<void> {
  for (let at = 0; at < data.length;) {
    if (signal.aborted) throw abortError(signal)
    const { bytesWritten } = await write(fd, data, at, Math.min(data.length - at, 1 << 20))
    at += bytesWritten
  }
}

/**
 * Replaces the target reached with `data`, atomically: written to a new file beside it,
 * then renamed over it within the same held directory. A reader (or git, or an editor) sees
 * the old file or the new one, never half of one; a crash leaves the old content; and no
 * byte goes through an existing name into whatever inode it is (a hard link included): the
 * name is replaced. `like` is the file replaced: its permissions (without set-id bits) and,
 * where allowed, its owner carry over; a new file gets 0666 less the umask.
 */
export async function replaceReached (reach: Reach, data: Buffer, like: fs.Stats | undefined, signal: AbortSignal): Promise<void> {
  const name = reach.name
  if (name === undefined || reach.missingParent) throw errno('EINVAL', 'nothing to write')
  const tmp = `.arbor-write-${randomBytes(6).toString('hex')}.tmp`
  const tmpReach: Reach = { ...reach, name: tmp, stat: undefined }
  const fd = openReached(tmpReach, C.O_WRONLY | C.O_CREAT | C.O_EXCL, 0o666)
  let renamed = false
  try {
    try {
      if (like !== undefined) {
        fs.fchmodSync(fd, like.mode & 0o777)
        try { fs.fchownSync(fd, like.uid, like.gid) } catch { /* not ours to give away: it stays the writer's */ }
      }
      await writeAll(fd, data, signal)
    } finally {
      fs.closeSync(fd)
    }
    if (signal.aborted) throw abortError(signal)
    if (!reach.backend.intact([reach.root, reach.dir])) throw errno('ELOOP', `a directory holding ${name} changed while it was written`)
    fs.renameSync(reach.dir.child(tmp), reach.dir.child(name))
    renamed = true
  } finally {
    if (!renamed) {
      try { fs.unlinkSync(reach.dir.child(tmp)) } catch { /* already gone: nothing to clean */ }
    }
  }
}
