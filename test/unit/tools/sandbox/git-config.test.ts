import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { configKey, configValues, configVerdict, isSafeKey, parseGitConfig, parseGitConfigBytes } from '../../../../src/main/tools/sandbox/git-config'

const haveGit = spawnSync('git', ['--version']).status === 0
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'arbor-git-config-'))
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

function keys (text: string): Array<[string, string | null]> {
  const p = parseGitConfig(text)
  if (!p.ok) throw new Error(`${p.error} (line ${p.line})`)
  return p.entries.map(e => [configKey(e), e.value])
}

/** What git itself reads from `bytes`: [key, value|null][], or undefined if git refuses the file. */
function gitReads (bytes: string): Array<[string, string | null]> | undefined {
  const f = path.join(tmp, 'config')
  fs.writeFileSync(f, Buffer.from(bytes, 'latin1'))
  const r = spawnSync('git', ['config', '--no-includes', '--file', f, '--list', '-z'], { env: { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', HOME: tmp } })
  if (r.status !== 0) return undefined
  const out = r.stdout.toString('latin1')
  return out.split('\0').filter(s => s !== '').map(s => {
    const nl = s.indexOf('\n')
    return nl === -1 ? [s, null] : [s.slice(0, nl), s.slice(nl + 1)]
  })
}

describe('git config, read as git reads it', () => {
  it('reads sections, subsections, bare booleans, quotes, escapes, continuations and comments', () => {
    expect(keys([
      '# comment', '; comment', '[core]', '\tbare = false', '\tFileMode', '[remote "origin"]', '  url = "a b" c # trailing',
      '[Branch.Main]', 'merge = refs/heads/main ; c', '[user]name = "x\\ty\\"z\\\\"', '[user] email = a\\', '  b@c', '[color "x.Y"] ui = auto'
    ].join('\n'))).toEqual([
      ['core.bare', 'false'], ['core.filemode', null], ['remote.origin.url', 'a b c'], ['branch.main.merge', 'refs/heads/main'],
      ['user.name', 'x\ty"z\\'], ['user.email', 'a  b@c'], ['color.x.Y.ui', 'auto']
    ])
    expect(keys('\ufeff[core]\r\n\tbare = true\r\n')).toEqual([['core.bare', 'true']])
    expect(keys('')).toEqual([])
    expect(keys('[core]\nname = a\\')).toEqual([['core.name', 'a']]) // a continuation at the end of the file, as git reads it
  })

  it('refuses what git refuses, and what it cannot follow', () => {
    for (const bad of ['x = 1', '[core', '[core "x]', '[ core ]', '[core]\nname = "open', '[core]\nname = a\\q', '[core]\n1x = 1',
      '[core]\nname # c', '[core]\nname = a\0b', '[]\nx = 1']) {
      expect(parseGitConfig(bad).ok, JSON.stringify(bad)).toBe(false)
    }
  })

  it('lets stay only what runs nothing', () => {
    const init = '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n'
    const clone = init + '[remote "origin"]\n\turl = /x/src.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n'
    const submodule = '[core]\n\tworktree = ../../../sub\n[submodule "sub"]\n\turl = /x\n\tactive = true\n[user]\n\tname = n\n[color "diff"]\n\tmeta = blue\n'
    for (const ok of [init, clone, submodule, '']) expect(configVerdict(ok), ok).toBeUndefined()
    for (const [text, key] of [
      ['[core]\nfsmonitor = /x', 'core.fsmonitor'], ['[core]\nhooksPath = h', 'core.hookspath'], ['[core]\npager = p', 'core.pager'],
      ['[core]\nsshCommand = s', 'core.sshcommand'], ['[core]\neditor = e', 'core.editor'], ['[filter "x"]\nclean = c', 'filter.x.clean'],
      ['[alias]\nst = !sh', 'alias.st'], ['[include]\npath = p', 'include.path'], ['[includeIf "gitdir:/"]\npath = p', 'includeif.gitdir:/.path'],
      ['[credential]\nhelper = h', 'credential.helper'], ['[protocol "ext"]\nallow = always', 'protocol.ext.allow'],
      ['[diff "x"]\ntextconv = t', 'diff.x.textconv'], ['[diff]\nexternal = e', 'diff.external'], ['[merge "x"]\ndriver = d', 'merge.x.driver'],
      ['[submodule "s"]\nupdate = !x', 'submodule.s.update'], ['[remote "o"]\nuploadpack = u', 'remote.o.uploadpack'],
      ['[gpg]\nprogram = p', 'gpg.program'], ['[sequence]\neditor = e', 'sequence.editor'], ['[core "x"]\nbare = 1', 'core.x.bare'],
      ['[constructor]\nname = x', 'constructor.name'], ['[core] fsmonitor = /x', 'core.fsmonitor']
    ] as const) expect(configVerdict(text), text).toContain(key)
    expect(configVerdict('[core\nfsmonitor = x')).toMatch(/cannot read/)
    expect(isSafeKey({ section: 'core', name: 'bare' })).toBe(true)
    expect(isSafeKey({ section: 'core', name: 'fsmonitor' })).toBe(false)
  })

  it('finds values by key, with or without a subsection', () => {
    const p = parseGitConfig('[core]\nhooksPath = a\n[includeIf "gitdir:/x/"]\npath = b\n[include]\npath = c\n[core]\nhookspath = d')
    if (!p.ok) throw new Error('parse')
    expect(configValues(p.entries, 'core', 'hookspath')).toEqual(['a', 'd'])
    expect(configValues(p.entries, 'include', 'path')).toEqual(['c'])
    expect(configValues(p.entries, 'includeif', 'path', /./)).toEqual(['b'])
  })

  it.skipIf(!haveGit)('reads every config it accepts exactly as the real git does (property, against git config --list)', () => {
    const ws = fc.constantFrom('', ' ', '\t', '  ', ' \t')
    const word = fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,6}$/)
    const section = fc.constantFrom('core', 'Core', 'remote', 'branch', 'filter', 'alias', 'include', 'x-y', 'a1')
    const subChars = fc.constantFrom('a', 'B', ' ', '.', '"', '\\', '#', ';', ']', '=', 'é')
    const sub = fc.array(subChars, { maxLength: 5 }).map(cs => cs.join(''))
    const valueChar = fc.constantFrom('a', 'Z', ' ', '\t', '"', '\\', '\\n', '\\t', '\\b', '\\"', '\\\\', '#', ';', '=', '[', 'é', '\\\n', '\\q', '\r')
    const value = fc.array(valueChar, { maxLength: 8 }).map(cs => cs.join(''))
    const header = fc.oneof(
      fc.tuple(section).map(([s]) => `[${s}]`),
      fc.tuple(section, sub).map(([s, x]) => `[${s} "${x.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"]`),
      fc.tuple(section, sub).map(([s, x]) => `[${s} "${x}"]`), // unescaped: often invalid
      fc.tuple(section, word).map(([s, w]) => `[${s}.${w}]`)
    )
    const variable = fc.oneof(
      fc.tuple(ws, word, ws, ws, value).map(([a, n, b, c, v]) => `${a}${n}${b}=${c}${v}`),
      fc.tuple(ws, word).map(([a, n]) => `${a}${n}`),
      fc.tuple(ws, word, ws).map(([a, n, b]) => `${a}${n}${b}# x`)
    )
    const line = fc.oneof({ weight: 2, arbitrary: variable }, { weight: 1, arbitrary: header },
      { weight: 1, arbitrary: fc.tuple(header, ws, variable).map(([h, w, v]) => `${h}${w}${v}`) },
      { weight: 1, arbitrary: fc.constantFrom('', '# c', '; c', '  ', '\t# [x]') })
    const file = fc.tuple(fc.boolean(), fc.boolean(), fc.array(line, { maxLength: 8 }), fc.boolean()).map(([bom, crlf, lines, nl]) =>
      (bom ? '\xef\xbb\xbf' : '') + '[core]\n' + lines.join(crlf ? '\r\n' : '\n') + (nl ? '\n' : ''))
    let bothRead = 0
    fc.assert(fc.property(file, bytes => {
      const mine = parseGitConfigBytes(bytes)
      const git = gitReads(bytes)
      if (mine.ok) {
        if (git !== undefined) bothRead++
        // whatever this reader accepts, git reads the same keys and values (or refuses the file, and runs nothing)
        if (git !== undefined) expect(mine.entries.map(e => [configKey(e), e.value])).toEqual(git)
      }
    }), { numRuns: 150, seed: Number(process.env.FC_SEED ?? Date.now() % 2 ** 31), verbose: 1 })
    expect(bothRead).toBeGreaterThan(30) // the generator makes mostly valid files: the comparison is not vacuous
  })
})
