/**
 * The check after a call, on a real file system (no sandbox: the "call" is whatever the
 * test does between begin and finish).
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { planGitProtection } from '../../../../src/main/tools/sandbox/git-guard'
import { GitScanner, guardReportText, type GuardReport } from '../../../../src/main/tools/sandbox/git-scan'

const haveGit = spawnSync('git', ['--version']).status === 0
let root: string
let n = 0
const home = '/nonexistent-home'

beforeAll(async () => { root = await fsp.realpath(await fsp.mkdtemp('/var/tmp/arbor-git-scan-')) })
afterAll(async () => { await fsp.rm(root, { recursive: true, force: true }) })

async function project (): Promise<string> {
  const p = path.join(root, `p${n++}`)
  await fsp.mkdir(p)
  return p
}

function sh (cwd: string, script: string): void {
  const r = spawnSync('bash', ['-ec', script], { cwd, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home, GIT_CONFIG_NOSYSTEM: '1' } })
  if (r.status !== 0) throw new Error(`${script}: ${r.stderr}`)
}

/** begin, `call`, finish: as the bash tool does around a sandboxed command */
async function around (scanner: GitScanner, cwd: string, call: () => void | Promise<void>): Promise<GuardReport> {
  const s = await scanner.begin(cwd, planGitProtection(cwd, { home }))
  await call()
  return s.finish()
}

const hook = '#!/bin/sh\nexit 0\n'

describe.skipIf(!haveGit)('the git check after a call', () => {
  it('moves aside a new repository\'s hook and a config that runs a program, keeps the samples, and says so', async () => {
    const p = await project()
    const scanner = new GitScanner({ home })
    const r = await around(scanner, p, () => sh(p, `git init -q sub && printf '${hook}' > sub/.git/hooks/pre-commit && git -C sub config core.fsmonitor /bin/true`))
    expect(r.findings.map(f => [f.path, f.movedTo])).toEqual([
      ['sub/.git/config', 'sub/.git/config.arbor-quarantined'],
      ['sub/.git/hooks/pre-commit', 'sub/.git/hooks/pre-commit.arbor-quarantined']
    ])
    expect(fs.readdirSync(path.join(p, 'sub/.git/hooks')).filter(f => f.endsWith('.sample')).length).toBeGreaterThan(5)
    const text = guardReportText(r)
    expect(text).toMatch(/^\[git guard: .*moved aside \(renamed, not deleted\)/)
    expect(text).toContain('sub/.git/config → sub/.git/config.arbor-quarantined: git config setting core.fsmonitor')
    expect(text).toContain('sub/.git/hooks/pre-commit → sub/.git/hooks/pre-commit.arbor-quarantined: a git hook: git runs it')
    // the next call leaves it all alone, and a clean new repository is not reported at all
    expect((await around(scanner, p, () => sh(p, 'git init -q other'))).findings).toEqual([])
  })

  it('catches a hook changed in place in an existing nested repository, even with its times put back', async () => {
    const p = await project()
    sh(p, `git init -q sub && printf '${hook}' > sub/.git/hooks/pre-commit && chmod +x sub/.git/hooks/pre-commit`)
    const scanner = new GitScanner({ home })
    expect((await around(scanner, p, () => undefined)).findings).toEqual([]) // the user's own hook stays
    const r = await around(scanner, p, () => sh(p, 'echo "touch /tmp/pwned" >> sub/.git/hooks/pre-commit && touch -d 2001-01-01 sub/.git/hooks/pre-commit sub/.git/hooks sub/.git sub'))
    expect(r.findings.map(f => f.path)).toEqual(['sub/.git/hooks/pre-commit'])
  })

  it('a repository moved within the working directory keeps its hooks (nothing was planted)', async () => {
    const p = await project()
    sh(p, `git init -q a && printf '${hook}' > a/.git/hooks/pre-commit && chmod +x a/.git/hooks/pre-commit`)
    const scanner = new GitScanner({ home })
    const r = await around(scanner, p, () => sh(p, 'mkdir deep && mv a deep/b'))
    expect(r.findings).toEqual([])
    expect(fs.existsSync(path.join(p, 'deep/b/.git/hooks/pre-commit'))).toBe(true)
  })

  it('a hook assembled elsewhere and moved in, or hard-linked in, is caught', async () => {
    const p = await project()
    sh(p, `git init -q sub && mkdir stash && printf '${hook}' > stash/pre-commit && printf '${hook}' > linked`)
    const scanner = new GitScanner({ home })
    await around(scanner, p, () => undefined)
    const r = await around(scanner, p, () => sh(p, 'rm -rf sub/.git/hooks && mv stash sub/.git/hooks && ln linked sub/.git/hooks/post-commit'))
    expect(r.findings.map(f => f.path).sort()).toEqual(['sub/.git/hooks/post-commit', 'sub/.git/hooks/pre-commit'])
  })

  it('a directory of the user\'s made into a repository loses its HEAD, not the user\'s files', async () => {
    const p = await project()
    sh(p, 'mkdir -p src/hooks src/config && echo x > src/hooks/useThing.ts && echo y > src/config/app.json')
    const scanner = new GitScanner({ home })
    await around(scanner, p, () => undefined)
    const r = await around(scanner, p, () => sh(p, 'echo "ref: refs/heads/main" > src/HEAD && mkdir src/objects src/refs'))
    expect(r.findings.map(f => [f.path, f.movedTo])).toEqual([['src/HEAD', 'src/HEAD.arbor-quarantined']])
    expect(fs.readFileSync(path.join(p, 'src/hooks/useThing.ts'), 'utf8')).toBe('x\n')
  })

  it('a planted config naming a hooks directory of the user\'s moves only the config', async () => {
    const p = await project()
    sh(p, 'git init -q sub && mkdir -p sub/scripts && echo x > sub/scripts/build.sh')
    const scanner = new GitScanner({ home })
    await around(scanner, p, () => undefined)
    const r = await around(scanner, p, () => sh(p, 'git -C sub config core.hooksPath scripts'))
    expect(r.findings.map(f => f.path)).toEqual(['sub/.git/config'])
    expect(fs.existsSync(path.join(p, 'sub/scripts/build.sh'))).toBe(true)
  })

  it('.git files: inside and to a repository is fine, outside or a symlink is not; a commondir only in a linked worktree', async () => {
    const p = await project()
    const scanner = new GitScanner({ home })
    await around(scanner, p, () => undefined)
    const r = await around(scanner, p, () => sh(p, [
      'git init -q x && mkdir a b c && mv x/.git a/gd && echo "gitdir: gd" > a/.git',
      `echo "gitdir: ${root}" > b/.git`, 'ln -s ../a/gd c/.git',
      'git init -q w && echo ../../elsewhere > w/.git/commondir'
    ].join(' && ')))
    expect(r.findings.map(f => f.path).sort()).toEqual(['b/.git', 'c/.git', 'w/.git/commondir'])
    const wt = await project()
    sh(wt, 'git init -q . && git -c user.name=a -c user.email=b commit -q --allow-empty -m x')
    await around(scanner, wt, () => undefined)
    expect((await around(scanner, wt, () => sh(wt, 'git worktree add -q inner 2>/dev/null'))).findings).toEqual([])
  })

  it('a hooks directory that core.hooksPath names but that did not exist', async () => {
    const p = await project()
    sh(p, 'git init -q . && git config core.hooksPath .githooks')
    const scanner = new GitScanner({ home })
    const r = await around(scanner, p, () => sh(p, `mkdir .githooks && printf '${hook}' > .githooks/pre-commit && echo notes > .githooks/README`))
    expect(r.findings.map(f => f.path).sort()).toEqual(['.githooks/README', '.githooks/pre-commit'])
  })

  it('reads a config it judges beneath the working directory: one reached through a link out of it is not read, and nothing of it is said', async () => {
    const p = await project()
    // the repository's config includes a file in the working directory that does not exist yet
    sh(p, 'git init -q . && git config include.path ../inc/config')
    const elsewhere = path.join(root, `elsewhere${n++}`)
    await fsp.mkdir(elsewhere)
    await fsp.writeFile(path.join(elsewhere, 'config'), '[leakedsection]\n\tleakedname = 1\n')
    const scanner = new GitScanner({ home })
    const r = await around(scanner, p, () => sh(p, `ln -s ${elsewhere} inc`))
    const text = guardReportText(r)
    expect(text).not.toMatch(/leaked/)
    expect(r.findings.map(f => [f.path, f.why])).toEqual([['inc/config', 'git config that this check could not read']])
  })

  it('stops at its bounds and says so', async () => {
    const p = await project()
    sh(p, 'mkdir -p a/b/c d/e/f g/h/i')
    const scanner = new GitScanner({ home, maxDirs: 4 })
    const r = await around(scanner, p, () => undefined)
    expect(r.incomplete).toMatch(/stopped after 4 directories; deeper directories were not checked/)
    expect(guardReportText(r)).toMatch(/^\[git guard: the check of git files in the working directory stopped after 4 directories/)
  })

  it('calls in one working directory are checked one after another', async () => {
    const p = await project()
    const scanner = new GitScanner({ home })
    await around(scanner, p, () => undefined)
    const a = await scanner.begin(p, planGitProtection(p, { home }))
    const b = await scanner.begin(p, planGitProtection(p, { home }))
    sh(p, `git init -q s && printf '${hook}' > s/.git/hooks/pre-commit`)
    const [ra, rb] = await Promise.all([a.finish(), b.finish()])
    expect([...ra.findings, ...rb.findings].map(f => f.path)).toEqual(['s/.git/hooks/pre-commit'])
  })
})
