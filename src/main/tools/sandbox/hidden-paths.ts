/**
 * The paths tools must not see, and how to resolve paths the way the kernel will (symlinks
 * followed, missing tails appended to their nearest existing ancestor). Shared by the bwrap
 * arguments (bash tool) and the path policy (file tools) so both hide the same things.
 */
import fs from 'node:fs'
import path from 'node:path'

/** What the resolvers need from the file system; injectable for tests. */
export interface FsProbe {
  /** the canonical path, or undefined when it does not exist (or cannot be reached) */
  realpath (p: string): string | undefined
  /** the target of a symlink, or undefined when p is not a symlink */
  readlink (p: string): string | undefined
  /** what p is after following symlinks, or undefined when it does not exist */
  kind (p: string): 'dir' | 'file' | 'other' | undefined
  /** the names in directory p, or undefined when it is not a readable directory */
  list (p: string): string[] | undefined
  /** the first maxBytes of regular file p (UTF-8, or latin1: one char per byte), or undefined when it cannot be read */
  readText (p: string, maxBytes: number, encoding?: 'utf8' | 'latin1'): string | undefined
}

// Most paths asked about do not exist (hidden defaults, git files): look without throwing,
// an exception costs more than the system call.
export const nodeFsProbe: FsProbe = {
  realpath (p) {
    if (!fs.existsSync(p)) return undefined
    try { return fs.realpathSync.native(p) } catch { return undefined }
  },
  readlink (p) {
    try {
      return fs.lstatSync(p, { throwIfNoEntry: false })?.isSymbolicLink() === true ? fs.readlinkSync(p) : undefined
    } catch { return undefined }
  },
  kind (p) {
    try {
      const st = fs.statSync(p, { throwIfNoEntry: false })
      return st === undefined ? undefined : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other'
    } catch { return undefined }
  },
  list (p) {
    try { return fs.existsSync(p) ? fs.readdirSync(p) : undefined } catch { return undefined }
  },
  readText (p, maxBytes, encoding = 'utf8') {
    let fd: number | undefined
    if (!fs.existsSync(p)) return undefined
    try {
      fd = fs.openSync(p, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK) // a FIFO must not block us
      if (!fs.fstatSync(fd).isFile()) return undefined
      const buf = Buffer.alloc(maxBytes)
      let n = 0
      for (let got = -1; got !== 0 && n < maxBytes; n += got) got = fs.readSync(fd, buf, n, maxBytes - n, n)
      return buf.subarray(0, n).toString(encoding)
    } catch {
      return undefined
    } finally {
      if (fd !== undefined) fs.closeSync(fd)
    }
  }
}

/**
 * A probe that asks `probe` once per path and question: building one sandbox asks about the
 * same paths many times (hidden forms, masks, the git plan), and the answers do not change
 * meanwhile.
 */
export function memoProbe (probe: FsProbe): FsProbe {
  const memo = new Map<string, unknown>()
  const once = <T>(key: string, f: () => T): T => {
    if (memo.has(key)) return memo.get(key) as T
    const v = f()
    memo.set(key, v)
    return v
  }
  return {
    realpath: p => once(`r\0${p}`, () => probe.realpath(p)),
    readlink: p => once(`l\0${p}`, () => probe.readlink(p)),
    kind: p => once(`k\0${p}`, () => probe.kind(p)),
    list: p => once(`d\0${p}`, () => probe.list(p)),
    readText: (p, maxBytes, encoding) => once(`t\0${maxBytes}\0${encoding ?? 'utf8'}\0${p}`, () => probe.readText(p, maxBytes, encoding))
  }
}

/** Credentials and private data under a home directory. */
export const HOME_SECRETS = [
  '.ssh', '.aws', '.gnupg', '.config/gcloud', '.azure', '.kube', '.docker/config.json',
  '.netrc', '.npmrc', '.pypirc', '.git-credentials', '.config/Arbor',
  // not in the original list, same kind of thing
  '.config/gh', '.cargo/credentials', '.cargo/credentials.toml', '.local/share/keyrings',
  '.password-store', '.vault-token', '.pgpass'
] as const

/**
 * The default hidden set: Arbor's data directory, the data directories of the other nodes
 * that ran on this machine (`others`, from the registry), and the credentials under `home`,
 * plus the same under /root (a process running as root with HOME elsewhere can still read
 * those; for other users they are unreachable anyway and resolve as absent).
 */
export function defaultHiddenPaths (home: string, dataDir?: string, others: readonly string[] = []): string[] {
  const homes = [...new Set([path.resolve(home), '/root'])]
  const out = dataDir !== undefined && dataDir !== '' ? [path.resolve(dataDir)] : []
  for (const o of others) out.push(path.resolve(o))
  for (const h of homes) for (const rel of HOME_SECRETS) out.push(path.join(h, rel))
  return [...new Set(out)]
}

/** p is dir or below it (both absolute and normalized). */
export function isInside (p: string, dir: string): boolean {
  if (dir === path.sep) return p.startsWith(path.sep)
  return p === dir || p.startsWith(dir + path.sep)
}

const MAX_LINK_HOPS = 40

/**
 * Where `p` really points: symlinks resolved, including dangling ones and symlinked parents
 * of a path that does not exist yet (a file about to be created through `link/new.txt`
 * lands in the link's target). Lexical `..` is applied first, as path.resolve does.
 */
export function canonicalPath (p: string, probe: FsProbe = nodeFsProbe): string {
  let cur = path.resolve(p)
  const rest: string[] = [] // components below cur, innermost last
  for (let hops = 0; ;) {
    const real = probe.realpath(cur)
    if (real !== undefined) return path.join(real, ...rest)
    const link = probe.readlink(cur)
    if (link !== undefined && hops++ < MAX_LINK_HOPS) {
      cur = path.resolve(path.dirname(cur), link)
      continue
    }
    const parent = path.dirname(cur)
    if (parent === cur) return path.join(cur, ...rest)
    rest.unshift(path.basename(cur))
    cur = parent
  }
}

/**
 * Every spelling a hidden path can have for a comparison: as given, and canonical (the
 * canonical form catches a hidden path reached through a symlink).
 */
export function hiddenForms (hidden: readonly string[], probe: FsProbe = nodeFsProbe): string[] {
  const out = new Set<string>()
  for (const h of hidden) {
    out.add(path.resolve(h))
    out.add(canonicalPath(h, probe))
  }
  return [...out]
}

/** The hidden path that contains p (p canonical), if any. */
export function hiddenContaining (p: string, forms: readonly string[]): string | undefined {
  return forms.find(h => isInside(p, h))
}
