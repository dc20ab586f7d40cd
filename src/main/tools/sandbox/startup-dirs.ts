/**
 * The directories whose files the host runs or reads later without the user asking (a home's
 * shell start-up files, `~/.config` with git's user config, autostart entries, systemd user
 * services, login environment, commands early on PATH; `/etc`), and the rule that refuses a
 * working directory reaching one: it is, or contains, any of them, or lies inside one whose
 * every file runs. It holds for this user's home and for every other account's on the
 * machine, so a node under a service account cannot plant them for the person next to it.
 */
import os from 'node:os'
import path from 'node:path'
import { canonicalPath, isInside, nodeFsProbe, type FsProbe } from './hidden-paths'

/** What a protected directory holds, for the message. */
export type StartupKind = 'home' | 'config' | 'autostart' | 'systemd' | 'environment' | 'bin' | 'etc' | 'etc-autostart'

export interface StartupDir {
  /** absolute; canonical once resolved (resolveStartupDirs) */
  path: string
  kind: StartupKind
  /** whose: undefined for this user and the system, else the account's name */
  account?: string
  /** a working directory anywhere inside it is refused too: every file there runs */
  inside: boolean
}

/** An account of the machine and its home directory. */
export interface Account { name: string; home: string }

/** The homes whose start-up files a working directory must not reach. */
export interface HostHomes {
  /** this user's home, in every spelling found (the tool's home, os.homedir(), $HOME, the passwd entry) */
  yours: string[]
  /** this user's $XDG_CONFIG_HOME values, besides `<home>/.config` */
  xdgConfig: string[]
  /** the machine's other accounts (their homes need not exist: those that do not are skipped) */
  others: Account[]
}

/** The start-up directories under one home (lexical). */
export function homeStartupDirs (home: string, configs: readonly string[], account?: string): StartupDir[] {
  const dir = (p: string, kind: StartupKind, inside: boolean): StartupDir => ({ path: p, kind, inside, ...(account !== undefined ? { account } : {}) })
  const out: StartupDir[] = [dir(home, 'home', false)]
  for (const c of [...new Set([path.join(home, '.config'), ...configs])]) {
    out.push(dir(c, 'config', false), dir(path.join(c, 'autostart'), 'autostart', true), dir(path.join(c, 'systemd'), 'systemd', true), dir(path.join(c, 'environment.d'), 'environment', true))
  }
  out.push(
    dir(path.join(home, '.local', 'share', 'systemd'), 'systemd', true),
    dir(path.join(home, '.local', 'bin'), 'bin', true),
    dir(path.join(home, 'bin'), 'bin', false)
  )
  return out
}

/** The system-wide ones: `/etc` (the system's settings) and the autostart entries every login runs. */
export const SYSTEM_STARTUP_DIRS: readonly StartupDir[] = [
  { path: '/etc', kind: 'etc', inside: false },
  { path: '/etc/xdg/autostart', kind: 'etc-autostart', inside: true }
]

/**
 * Every protected directory for `homes`, canonical (a symlinked `~/.config` is protected where
 * it leads): this user's first, then the system's, then the other accounts' whose home exists
 * and is not one of this user's.
 */
export function resolveStartupDirs (homes: HostHomes, probe: FsProbe = nodeFsProbe): StartupDir[] {
  const canon = (d: StartupDir): StartupDir => ({ ...d, path: canonicalPath(d.path, probe) })
  const yours = [...new Set(homes.yours.map(h => path.resolve(h)))]
  const out: StartupDir[] = []
  for (const h of yours) out.push(...homeStartupDirs(h, homes.xdgConfig).map(canon))
  out.push(...SYSTEM_STARTUP_DIRS.map(canon))
  const taken = new Set(out.filter(d => d.kind === 'home').map(d => d.path))
  for (const a of homes.others) {
    if (probe.kind(a.home) !== 'dir') continue
    const home = canonicalPath(a.home, probe)
    if (home === path.parse(home).root || taken.has(home)) continue
    taken.add(home)
    out.push(...homeStartupDirs(home, [], a.name).map(canon))
  }
  return out
}

export type StartupRelation = 'is' | 'contains' | 'inside'

export interface StartupRefusal { dir: StartupDir; relation: StartupRelation }

/**
 * Why the canonical working directory `cwd` reaches a protected directory, or undefined:
 * it is one, contains one, or lies inside one whose files all run. The most telling one is
 * said: the directory it is, else the one it lies in, else the first it contains.
 */
export function startupRefusal (cwd: string, dirs: readonly StartupDir[]): StartupRefusal | undefined {
  const is = dirs.find(d => d.path === cwd)
  if (is !== undefined) return { dir: is, relation: 'is' }
  const inside = dirs.find(d => d.inside && isInside(cwd, d.path))
  if (inside !== undefined) return { dir: inside, relation: 'inside' }
  const contains = dirs.find(d => isInside(d.path, cwd))
  return contains === undefined ? undefined : { dir: contains, relation: 'contains' }
}

/** What `d` holds, in words, ending in how it reaches outside the sandbox. */
function holds (d: StartupDir): string {
  const of = d.account === undefined ? 'your' : `the account ${d.account}'s`
  switch (d.kind) {
    case 'home': return `${of} shell start-up files, which run outside the sandbox`
    case 'config': return `${of} programs' settings and start-up files, which run outside the sandbox`
    case 'autostart': return `programs started at ${of} login, outside the sandbox`
    case 'systemd': return `${of} systemd services, which run outside the sandbox`
    case 'environment': return `${of} login environment, which programs outside the sandbox start with`
    case 'bin': return `commands found on ${of} PATH before the system's, which run outside the sandbox`
    case 'etc': return 'the system\'s settings and start-up files, which run outside the sandbox'
    case 'etc-autostart': return 'programs started at every user\'s login, outside the sandbox'
  }
}

/** The refusal in words a user can act on; `shown` is the working directory as the user gave it. */
export function startupRefusalMessage (shown: string, r: StartupRefusal): string {
  const d = r.dir
  if (d.kind === 'home') {
    if (d.account === undefined) {
      return `the working directory ${shown} is ${r.relation === 'is' ? 'your home directory' : `a parent of your home directory ${d.path}`}; tools could change your shell start-up files there. Choose a project directory inside it instead`
    }
    const what = r.relation === 'is' ? `is the home directory of the account ${d.account}` : `contains ${d.path}, the home directory of the account ${d.account}`
    return `the working directory ${shown} ${what}; tools could change its shell start-up files there, which run outside the sandbox. Choose a project directory instead`
  }
  const where = r.relation === 'is' ? 'holds' : `${r.relation === 'inside' ? 'is inside' : 'contains'} ${d.path}, which holds`
  return `the working directory ${shown} ${where} ${holds(d)}; choose a project directory instead`
}

/** The machine's list of accounts, read at most this often (the path policy asks on every tool call). */
const ACCOUNTS_TTL_MS = 1000
/** More than any real /etc/passwd; a larger file is read this far. */
const PASSWD_MAX_BYTES = 4 * 1024 * 1024
export const DEFAULT_PASSWD_FILE = '/etc/passwd'

/**
 * The accounts in passwd(5) text with a usable home: absolute, not `/` (system accounts with
 * no home) and not `/nonexistent`. Malformed lines and comments are skipped.
 */
export function parsePasswd (text: string): Account[] {
  const out: Account[] = []
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue
    const f = line.split(':')
    if (f.length < 7) continue
    const name = f[0] as string
    const raw = f[5] as string
    if (name === '' || !path.isAbsolute(raw)) continue
    const home = path.resolve(raw)
    if (home === path.sep || home === '/nonexistent') continue
    out.push({ name, home })
  }
  return out
}

const accountsRead = new Map<string, { at: number; accounts: Account[] }>()

/** The accounts listed in `file` (default /etc/passwd), read again at most once a second; none when it cannot be read. */
export function machineAccounts (file: string = DEFAULT_PASSWD_FILE, now = Date.now()): Account[] {
  const hit = accountsRead.get(file)
  if (hit !== undefined && now - hit.at >= 0 && now - hit.at <= ACCOUNTS_TTL_MS) return hit.accounts
  const text = nodeFsProbe.readText(file, PASSWD_MAX_BYTES)
  const accounts = text === undefined ? [] : parsePasswd(text)
  accountsRead.delete(file)
  accountsRead.set(file, { at: now, accounts })
  if (accountsRead.size > 8) accountsRead.delete(accountsRead.keys().next().value as string)
  return accounts
}

/**
 * This user's homes and config directories as seen from `home` (the tools' home), the
 * environments given (the tool's and the node's own: the host's programs read the latter)
 * and the passwd entry of this process's user, with the machine's accounts from `passwdFile`
 * and `/root` among the others.
 */
export function hostHomes (home: string, envs: ReadonlyArray<Record<string, string | undefined>>, passwdFile?: string): HostHomes {
  const yours = [home, os.homedir()]
  try { yours.push(os.userInfo().homedir) } catch { /* a uid without a passwd entry */ }
  const xdgConfig: string[] = []
  for (const env of envs) {
    if (env.HOME !== undefined && path.isAbsolute(env.HOME)) yours.push(env.HOME)
    // the XDG spec ignores a relative value; so do the programs that read it
    if (env.XDG_CONFIG_HOME !== undefined && path.isAbsolute(env.XDG_CONFIG_HOME)) xdgConfig.push(env.XDG_CONFIG_HOME)
  }
  return {
    yours: [...new Set(yours.filter(h => h !== '').map(h => path.resolve(h)))],
    xdgConfig: [...new Set(xdgConfig.map(c => path.resolve(c)))],
    others: [...machineAccounts(passwdFile), { name: 'root', home: '/root' }]
  }
}
