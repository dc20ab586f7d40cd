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
}

export const nodeFsProbe: FsProbe = {
  realpath (p) {
    try { return fs.realpathSync.native(p) } catch { return undefined }
  },
  readlink (p) {
    try { return fs.readlinkSync(p) } catch { return undefined }
  },
  kind (p) {
    try {
      const st = fs.statSync(p)
      return st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other'
    } catch { return undefined }
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
 * The default hidden set: Arbor's data directory and the credentials under `home`, plus the
 * same under /root (a process running as root with HOME elsewhere can still read those; for
 * other users they are unreachable anyway and resolve as absent).
 */
export function defaultHiddenPaths (home: string, dataDir?: string): string[] {
  const homes = [...new Set([path.resolve(home), '/root'])]
  const out = dataDir !== undefined && dataDir !== '' ? [path.resolve(dataDir)] : []
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
