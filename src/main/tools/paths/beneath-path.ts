/**
 * The pure part of opening files beneath a directory (beneath.ts): turning a path into the
 * names to walk from the directory, joining a symlink's target onto the walk, and the names
 * git treats as its own directory. No file system access here.
 */
import path from 'node:path'
import { isInside } from '../sandbox/hidden-paths'

/** Longest path a tool accepts (Linux's PATH_MAX), in UTF-8 bytes. */
export const MAX_PATH_BYTES = 4096
/** Longest single name (NAME_MAX on Linux and macOS), in UTF-8 bytes. */
export const MAX_NAME_BYTES = 255
/** Symlinks followed in one walk before giving up (Linux's limit). */
export const MAX_LINK_HOPS = 40

/** Why a path given by the model cannot even be looked at, or undefined. */
export function pathTextError (p: unknown): string | undefined {
  if (typeof p !== 'string') return 'the path must be a string'
  if (p.includes('\0')) return 'the path contains a NUL character'
  const bytes = Buffer.byteLength(p)
  if (bytes > MAX_PATH_BYTES) return `the path is ${bytes} bytes long, more than ${MAX_PATH_BYTES}`
  return undefined
}

/**
 * The names leading from `root` to `abs`, or undefined when `abs` is not `root` or below it.
 * `abs` is normalized first (lexical `..`, as path.resolve does); `root` must be absolute and
 * normalized. Every name returned is non-empty, not `.` or `..`, and holds no separator.
 */
export function componentsBeneath (abs: string, root: string): string[] | undefined {
  const p = path.resolve(root, abs)
  if (!isInside(p, root)) return undefined
  const rest = p.slice(root.length)
  return rest.split(path.sep).filter(n => n !== '')
}

/** A name the kernel will refuse as too long, said in words; or undefined. */
export function nameError (names: readonly string[]): string | undefined {
  const long = names.find(n => Buffer.byteLength(n) > MAX_NAME_BYTES)
  return long === undefined ? undefined : `a name in the path is ${Buffer.byteLength(long)} bytes long, more than ${MAX_NAME_BYTES}: ${long.slice(0, 40)}…`
}

/**
 * Where the walk goes after meeting a symlink: `target` read from the link named after
 * `before` (names below root), with the names still to walk appended. Lexical, as for the
 * path itself: `..` in the target steps back over the names actually walked.
 */
export function linkedPath (root: string, before: readonly string[], target: string, after: readonly string[]): string {
  return path.resolve(path.join(root, ...before), target, ...after)
}

/** Characters HFS+ ignores in names (git's is_hfs_dotgit list): `.g\u200cit` is `.git` there. */
const HFS_IGNORED = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g

/**
 * Whether a name is, on some file system the repository may live on, git's directory:
 * `.git` in any case (macOS and Windows fold case), with trailing dots or spaces (NTFS drops
 * them), with characters HFS+ ignores, or NTFS's short name `GIT~1`.
 */
export function isGitName (name: string): boolean {
  const n = name.replace(HFS_IGNORED, '').toLowerCase().replace(/[. ]+$/, '')
  return n === '.git' || /^git~\d+$/.test(n)
}
