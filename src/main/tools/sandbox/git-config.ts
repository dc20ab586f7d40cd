/**
 * Git's config file format, read the way git reads it (config.c: git_parse_source,
 * get_base_var, get_value, parse_value), and the keys a config written inside the sandbox
 * may hold. Strict on purpose: whatever git would reject, or this reader cannot follow, is
 * an error, and a config with an error or with any key outside SAFE_KEYS is treated as
 * planted code. Pure.
 */

export interface GitConfigEntry {
  /** lower case */
  section: string
  /** as written (case kept), undefined when there is none */
  subsection?: string
  /** lower case */
  name: string
  /** null for a bare `name` (boolean true) */
  value: string | null
  line: number
}

export type GitConfigParse =
  | { ok: true; entries: GitConfigEntry[] }
  | { ok: false; error: string; line: number }

/** git's isspace (sane_ctype GIT_SPACE): no \v, no \f */
const isSpace = (c: string): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r'
const isAlpha = (c: string): boolean => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
const isKeyChar = (c: string): boolean => isAlpha(c) || (c >= '0' && c <= '9') || c === '-'

class Reader {
  private i = 0
  eof = false
  line = 1
  constructor (private readonly s: string) {}
  /** get_next_char: CRLF as LF, EOF as a final LF */
  next (): string {
    if (this.i >= this.s.length) {
      this.eof = true
      return '\n'
    }
    let c = this.s[this.i++] as string
    if (c === '\r' && this.s[this.i] === '\n') c = this.s[this.i++] as string
    if (c === '\n') this.line++
    return c
  }
}

/** Parses config text given as bytes (latin1: one char per byte, as git's parser sees them). */
export function parseGitConfigBytes (bytes: string): GitConfigParse {
  // git's C code would see a value cut at a NUL where this reader sees all of it
  if (bytes.includes('\0')) return { ok: false, error: 'a NUL byte', line: bytes.slice(0, bytes.indexOf('\0')).split('\n').length }
  const r = new Reader(bytes.startsWith('\xef\xbb\xbf') ? bytes.slice(3) : bytes)
  const entries: GitConfigEntry[] = []
  let section: string | undefined
  let subsection: string | undefined
  let comment = false
  const fail = (error: string): GitConfigParse => ({ ok: false, error, line: r.line })
  for (;;) {
    const c = r.next()
    if (c === '\n') {
      if (r.eof) return { ok: true, entries }
      comment = false
      continue
    }
    if (comment || isSpace(c)) continue
    if (c === '#' || c === ';') {
      comment = true
      continue
    }
    if (c === '[') {
      const h = header(r)
      if (typeof h === 'string') return fail(h)
      ;({ section, subsection } = h)
      continue
    }
    if (!isAlpha(c)) return fail(`unexpected character ${JSON.stringify(c)}`)
    if (section === undefined) return fail('a variable before any [section]')
    const line = r.line
    let name = c.toLowerCase()
    let d: string
    for (;;) {
      d = r.next()
      if (r.eof || !isKeyChar(d)) break
      name += d.toLowerCase()
    }
    while (d === ' ' || d === '\t') d = r.next()
    let value: string | null = null
    if (d !== '\n') {
      if (d !== '=') return fail(`expected "=" after ${name}`)
      const v = parseValue(r)
      if (v === undefined) return fail(`a bad value for ${name}`)
      value = v
    }
    entries.push({ section, ...(subsection !== undefined ? { subsection } : {}), name, value, line })
  }
}

/** After "[": `[name]`, `[name.sub]` or `[name "sub"]` (get_base_var, get_extended_base_var). */
function header (r: Reader): { section: string; subsection?: string } | string {
  let base = ''
  for (;;) {
    const c = r.next()
    if (r.eof) return 'an unterminated [section'
    if (c === ']') break
    if (isSpace(c)) {
      let d = c
      do {
        if (d === '\n') return 'a [section "sub"] header broken by a newline'
        d = r.next()
      } while (isSpace(d))
      if (d !== '"') return 'a [section "sub"] header without its quotes'
      let sub = ''
      for (;;) {
        let e = r.next()
        if (e === '\n') return 'a [section "sub"] header broken by a newline'
        if (e === '"') break
        if (e === '\\') {
          e = r.next()
          if (e === '\n') return 'a [section "sub"] header broken by a newline'
        }
        sub += e
      }
      if (r.next() !== ']') return 'a [section "sub"] header without its "]"'
      if (base === '') return 'an empty section name'
      return splitBase(base, sub)
    }
    if (!isKeyChar(c) && c !== '.') return `a bad character ${JSON.stringify(c)} in a section name`
    base += c.toLowerCase()
  }
  if (base === '') return 'an empty section name'
  return splitBase(base)
}

/** `a.b.c` (+ "sub"): section a, subsection b.c(.sub); git keys split at the first and last dot. */
function splitBase (base: string, extended?: string): { section: string; subsection?: string } {
  const dot = base.indexOf('.')
  const section = dot === -1 ? base : base.slice(0, dot)
  const rest = dot === -1 ? undefined : base.slice(dot + 1)
  if (extended === undefined) return rest === undefined ? { section } : { section, subsection: rest }
  return { section, subsection: rest === undefined ? extended : `${rest}.${extended}` }
}

/** parse_value: quotes, escapes, continuation lines, trailing comments. */
function parseValue (r: Reader): string | undefined {
  let quote = false
  let comment = false
  let space = 0
  let out = ''
  for (;;) {
    let c = r.next()
    if (c === '\n') return quote ? undefined : out
    if (comment) continue
    if (isSpace(c) && !quote) {
      if (out.length > 0) space++
      continue
    }
    if (!quote && (c === ';' || c === '#')) {
      comment = true
      continue
    }
    for (; space > 0; space--) out += ' '
    if (c === '\\') {
      c = r.next()
      if (c === '\n') continue // a continuation line (at the end of the file, the end of the value)
      if (c === 't') c = '\t'
      else if (c === 'b') c = '\b'
      else if (c === 'n') c = '\n'
      else if (c !== '\\' && c !== '"') return undefined
      out += c
      continue
    }
    if (c === '"') {
      quote = !quote
      continue
    }
    out += c
  }
}

/** Parses config file contents read as UTF-8 text. */
export function parseGitConfig (text: string): GitConfigParse {
  return parseGitConfigBytes(Buffer.from(text, 'utf8').toString('latin1'))
}

export function configKey (e: GitConfigEntry): string {
  return e.subsection === undefined ? `${e.section}.${e.name}` : `${e.section}.${e.subsection}.${e.name}`
}

/**
 * What git init, clone, submodule and worktree write, and common settings that run nothing:
 * [section] → names allowed without a subsection, and with one ('*' = any name). Everything
 * else (core.fsmonitor, core.hooksPath, core.pager, core.sshCommand, filters, aliases,
 * credential helpers, includes, diff/merge drivers, protocol.*.allow, ...) is refused: a
 * list of what is harmless can be checked, a list of what is dangerous cannot.
 */
const SAFE_KEYS: Record<string, { plain?: readonly string[] | '*'; sub?: readonly string[] | '*' }> = {
  core: {
    plain: ['repositoryformatversion', 'filemode', 'bare', 'logallrefupdates', 'ignorecase', 'precomposeunicode', 'symlinks',
      'autocrlf', 'eol', 'safecrlf', 'quotepath', 'worktree', 'sparsecheckout', 'sparsecheckoutcone', 'splitindex',
      'untrackedcache', 'commitgraph', 'multipackindex', 'abbrev', 'compression', 'loosecompression', 'checkstat',
      'trustctime', 'preloadindex', 'whitespace', 'sharedrepository', 'commentchar', 'warnambiguousrefs']
  },
  extensions: { plain: ['objectformat', 'refstorage', 'worktreeconfig', 'preciousobjects', 'partialclone', 'noop'] },
  remote: {
    sub: ['url', 'pushurl', 'fetch', 'push', 'tagopt', 'prune', 'prunetags', 'mirror', 'promisor', 'partialclonefilter',
      'skipdefaultupdate', 'skipfetchall', 'followremotehead']
  },
  branch: { plain: ['autosetupmerge', 'autosetuprebase', 'sort'], sub: ['remote', 'pushremote', 'merge', 'rebase', 'description'] },
  submodule: { plain: ['active', 'recurse', 'fetchjobs'], sub: ['url', 'active', 'branch', 'fetchrecursesubmodules', 'ignore', 'shallow'] },
  user: { plain: ['name', 'email', 'useconfigonly'] },
  author: { plain: ['name', 'email'] },
  committer: { plain: ['name', 'email'] },
  init: { plain: ['defaultbranch'] },
  pull: { plain: ['rebase', 'ff'] },
  push: { plain: ['default', 'autosetupremote', 'followtags'] },
  fetch: { plain: ['prune', 'prunetags', 'writecommitgraph', 'recursesubmodules'] },
  merge: { plain: ['ff', 'conflictstyle', 'renames', 'log', 'stat'] },
  rebase: { plain: ['autosquash', 'autostash', 'updaterefs'] },
  status: { plain: ['showuntrackedfiles', 'submodulesummary', 'relativepaths', 'short', 'branch', 'aheadbehind', 'renames'] },
  diff: { plain: ['renames', 'algorithm', 'mnemonicprefix', 'noprefix', 'submodule', 'colormoved', 'indentheuristic', 'context', 'relative', 'ignoresubmodules'] },
  log: { plain: ['date', 'decorate', 'follow', 'showroot', 'abbrevcommit'] },
  gc: { plain: ['auto', 'autodetach', 'autopacklimit', 'pruneexpire', 'reflogexpire'] },
  index: { plain: ['version', 'threads', 'skiphash', 'sparse'] },
  feature: { plain: ['manyfiles', 'experimental'] },
  maintenance: { plain: ['auto', 'strategy'] },
  pack: { plain: ['threads', 'windowmemory', 'sparse'] },
  lfs: { plain: ['repositoryformatversion'] },
  i18n: { plain: ['commitencoding', 'logoutputencoding'] },
  color: { plain: '*', sub: '*' },
  advice: { plain: '*' }
}

export function isSafeKey (e: Pick<GitConfigEntry, 'section' | 'subsection' | 'name'>): boolean {
  const s = Object.prototype.hasOwnProperty.call(SAFE_KEYS, e.section) ? SAFE_KEYS[e.section] : undefined
  const allowed = e.subsection === undefined ? s?.plain : s?.sub
  return allowed === '*' || (allowed?.includes(e.name) ?? false)
}

/** Why a config written in the sandbox must not stay (undefined: it runs nothing); `bytes` as latin1. */
export function configVerdict (bytes: string): string | undefined {
  const p = parseGitConfigBytes(bytes)
  if (!p.ok) return `git config that this check cannot read (line ${p.line}: ${p.error})`
  const bad = [...new Set(p.entries.filter(e => !isSafeKey(e)).map(configKey))]
  if (bad.length === 0) return undefined
  const shown = bad.slice(0, 5).join(', ') + (bad.length > 5 ? `, and ${bad.length - 5} more` : '')
  return `git config setting ${shown} (settings that can make git run a program are not allowed from the sandbox)`
}

/** The values of `key` (lower case, e.g. 'core.hookspath') in a parsed config, in order. */
export function configValues (entries: readonly GitConfigEntry[], section: string, name: string, subsection?: string | RegExp): string[] {
  return entries.filter(e => e.section === section && e.name === name &&
    (subsection === undefined ? e.subsection === undefined : typeof subsection === 'string' ? e.subsection === subsection : e.subsection !== undefined && subsection.test(e.subsection)))
    .flatMap(e => (e.value === null ? [] : [e.value]))
}
