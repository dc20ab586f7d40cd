/**
 * Attacks on the host's git through the bash sandbox (real bwrap, real git on both sides).
 * Each attack plants code that git on this machine would run later from the working
 * directory (a hook, core.fsmonitor, a clean filter, a pager, a receive hook) and then the
 * host runs git there, as the user would. The planted code appends to a file in an evidence
 * directory outside the working directory, which the sandbox cannot write but the host can.
 *
 * Every attack runs twice: once with the sandbox off (the control: it must leave evidence,
 * so the attack is real) and once in the sandbox (it must leave none).
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBashTool } from '../../../../src/main/tools/bash-tool'
import { createFileTools } from '../../../../src/main/tools/file-tools'
import type { Tool, ToolResult } from '../../../../src/main/tools/tool'

const haveBwrap = spawnSync('bwrap', ['--version']).status === 0
const haveGit = spawnSync('git', ['--version']).status === 0
if ((!haveBwrap || !haveGit) && process.env.CI !== undefined) throw new Error('bwrap and git are needed on CI')
const haveScript = spawnSync('script', ['--version']).status === 0

let root: string
let home: string
let bash: Tool
let files: Record<string, Tool>
let n = 0

/** git as the user runs it on the host: no system or user config of this machine. */
function hostEnv (): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: 'u', GIT_AUTHOR_EMAIL: 'u@example.invalid', GIT_COMMITTER_NAME: 'u', GIT_COMMITTER_EMAIL: 'u@example.invalid'
  }
}

function git (cwd: string, ...args: string[]): { status: number | null; out: string } {
  const r = spawnSync('git', ['-c', 'protocol.file.allow=always', ...args], { cwd, env: hostEnv(), encoding: 'utf8', timeout: 20_000 })
  return { status: r.status, out: `${r.stdout}${r.stderr}` }
}

function hostSh (cwd: string, script: string): void {
  const r = spawnSync('bash', ['-ec', script], { cwd, env: hostEnv(), encoding: 'utf8', timeout: 20_000 })
  if (r.status !== 0) throw new Error(`host setup failed: ${script}\n${r.stdout}${r.stderr}`)
}

interface Scene { dir: string; proj: string; ev: string }

/** A fresh project with a committed repository (unless `repo` is false), and an evidence directory. */
async function scene (repo = true): Promise<Scene> {
  const dir = path.join(root, `s${n++}`)
  const proj = path.join(dir, 'proj')
  const ev = path.join(dir, 'evidence')
  await fsp.mkdir(proj, { recursive: true })
  await fsp.mkdir(ev)
  if (repo) hostSh(proj, 'git init -q . && echo hi > f && git add f && git commit -qm init')
  return { dir, proj, ev }
}

/** Shell text that writes an executable script at `file` leaving evidence `name` when run. */
function plant (file: string, name: string, ev: string): string {
  return `mkdir -p "$(dirname ${file})" && printf '#!/bin/sh\\necho ran >> ${ev}/${name}\\ncat >/dev/null 2>&1 || true\\nexit 0\\n' > ${file} && chmod +x ${file}`
}

function evidence (s: Scene): string[] {
  return fs.readdirSync(s.ev).sort()
}

async function run (s: Scene, command: string, sandboxed: boolean, cwd = s.proj): Promise<ToolResult> {
  return bash.run({ command }, { cwd, signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: sandboxed, cwd, hidden: [] } })
}

/**
 * Runs `attack` (a sandboxed command, then host git in `check`) on two fresh scenes: with
 * the sandbox off it must leave `expected` evidence; in the sandbox, none.
 */
async function attack (o: {
  repo?: boolean
  setup?: (s: Scene) => void
  command: (s: Scene) => string
  check: (s: Scene) => void
  expected: string[]
  cwd?: (s: Scene) => string
}): Promise<{ control: ToolResult; sandboxed: ToolResult; scene: Scene }> {
  const results: ToolResult[] = []
  let last: Scene | undefined
  for (const sandboxed of [false, true]) {
    const s = await scene(o.repo ?? true)
    o.setup?.(s)
    const r = await run(s, o.command(s), sandboxed, o.cwd?.(s) ?? s.proj)
    o.check(s)
    if (!sandboxed) expect(evidence(s), `the attack is real: without the sandbox it ran (${r.output})`).toEqual(expect.arrayContaining(o.expected))
    else expect(evidence(s), `planted code ran on the host after the sandboxed call:\n${r.output}`).toEqual([])
    results.push(r)
    last = s
  }
  return { control: results[0] as ToolResult, sandboxed: results[1] as ToolResult, scene: last as Scene }
}

beforeAll(async () => {
  root = await fsp.realpath(await fsp.mkdtemp('/var/tmp/arbor-attack-git-'))
  home = path.join(root, 'home')
  await fsp.mkdir(home)
  const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }
  bash = createBashTool({ home, dataDir: path.join(root, 'data'), env })
  files = Object.fromEntries(createFileTools({ home, dataDir: path.join(root, 'data') }).map(t => [t.name, t]))
})

afterAll(async () => {
  if (root !== undefined) await fsp.rm(root, { recursive: true, force: true })
})

describe.skipIf(!haveBwrap || !haveGit)('git on the host runs nothing the sandbox planted (real bwrap, real git)', () => {
  it('renaming .git away and making a new repository with a hook', async () => {
    const { sandboxed } = await attack({
      command: s => `mv .git .git-old; git init -q . ; ${plant('.git/hooks/pre-commit', 'new-repo-hook', s.ev)}`,
      check: s => { git(s.proj, 'commit', '-q', '--allow-empty', '-m', 'host') },
      expected: ['new-repo-hook']
    })
    expect(sandboxed.output).toMatch(/mv: cannot move '\.git' to '\.git-old': Device or resource busy/)
  })

  it('a .git/commondir pointing at a planted common directory', async () => {
    await attack({
      command: s => `cp -r .git evil && rm -f evil/hooks/*.sample && ${plant('evil/hooks/pre-commit', 'commondir-hook', s.ev)} && echo ../evil > .git/commondir`,
      check: s => { git(s.proj, 'commit', '-q', '--allow-empty', '-m', 'host') },
      expected: ['commondir-hook']
    })
  })

  it('a .git/config.worktree (extensions.worktreeConfig on) setting core.fsmonitor', async () => {
    await attack({
      setup: s => { hostSh(s.proj, 'git config core.repositoryformatversion 1 && git config extensions.worktreeConfig true') },
      command: s => `${plant('tools/fsm.sh', 'fsmonitor', s.ev)} && printf '[core]\\n\\tfsmonitor = ${s.proj}/tools/fsm.sh\\n' > .git/config.worktree`,
      check: s => { git(s.proj, 'status', '--porcelain') },
      expected: ['fsmonitor']
    })
  })

  it('.git/info is read-only', async () => {
    const s = await scene()
    const before = await fsp.readFile(path.join(s.proj, '.git/info/exclude'), 'utf8')
    const r = await run(s, 'echo "* filter=x" > .git/info/attributes; echo x >> .git/info/exclude', true)
    expect(r.output).toContain('.git/info/attributes: Read-only file system')
    expect(r.output).toContain('.git/info/exclude: Read-only file system')
    expect(fs.existsSync(path.join(s.proj, '.git/info/attributes'))).toBe(false)
    expect(await fsp.readFile(path.join(s.proj, '.git/info/exclude'), 'utf8')).toBe(before)
  })

  it('a .git file whose gitdir: is a planted repository', async () => {
    await attack({
      repo: false,
      command: s => `mkdir x && git init -q x && mv x/.git gd && rmdir x && rm -f gd/hooks/*.sample && ${plant('gd/hooks/pre-commit', 'gitfile-hook', s.ev)} && echo 'gitdir: gd' > .git`,
      check: s => { git(s.proj, 'commit', '-q', '--allow-empty', '-m', 'host') },
      expected: ['gitfile-hook']
    })
  })

  it('a nested repository made in a subdirectory (hook, fsmonitor, clean filter, pager)', async () => {
    await attack({
      command: s => [
        'git init -q sub',
        plant('sub/.git/hooks/pre-commit', 'nested-hook', s.ev),
        plant('tools/fsm.sh', 'nested-fsmonitor', s.ev),
        plant('tools/clean.sh', 'nested-filter', s.ev),
        plant('tools/pager.sh', 'nested-pager', s.ev),
        `git -C sub config core.fsmonitor ${s.proj}/tools/fsm.sh`,
        `git -C sub config filter.x.clean ${s.proj}/tools/clean.sh`,
        `git -C sub config core.pager ${s.proj}/tools/pager.sh`,
        'echo "* filter=x" > sub/.gitattributes && echo data > sub/data'
      ].join(' && '),
      check: s => {
        const sub = path.join(s.proj, 'sub')
        git(sub, 'status', '--porcelain')
        git(sub, 'add', '-A')
        git(sub, 'commit', '-q', '--allow-empty', '-m', 'host')
        if (haveScript) spawnSync('script', ['-qec', 'git log -1', '/dev/null'], { cwd: sub, env: hostEnv(), timeout: 20_000 })
      },
      expected: ['nested-hook', 'nested-fsmonitor', 'nested-filter', ...(haveScript ? ['nested-pager'] : [])]
    })
  })

  it('a working directory inside a repository, without a .git of its own', async () => {
    const { sandboxed, scene: s } = await attack({
      setup: s => { hostSh(s.proj, 'mkdir sub && echo x > sub/file') },
      cwd: s => path.join(s.proj, 'sub'),
      command: s => `git init -q . && ${plant('.git/hooks/pre-commit', 'inner-repo-hook', s.ev)} && git config core.fsmonitor "$PWD/.git/hooks/pre-commit"`,
      check: s => {
        git(path.join(s.proj, 'sub'), 'status', '--porcelain')
        git(path.join(s.proj, 'sub'), 'commit', '-q', '--allow-empty', '-m', 'host')
      },
      expected: ['inner-repo-hook']
    })
    // what was moved aside is said, and kept
    expect(sandboxed.output).toMatch(/git guard/i)
    expect(sandboxed.output).toMatch(/\.git\/hooks\/pre-commit\b.*a git hook/)
    expect(sandboxed.output).toMatch(/\.git\/config\b.*core\.fsmonitor/)
    expect(fs.readdirSync(path.join(s.proj, 'sub', '.git', 'hooks')).some(f => f.startsWith('pre-commit.'))).toBe(true)
  })

  it('core.hooksPath inside the working directory: an existing hooks directory is read-only', async () => {
    const { sandboxed } = await attack({
      setup: s => { hostSh(s.proj, 'mkdir .githooks && git config core.hooksPath .githooks') },
      command: s => plant('.githooks/pre-commit', 'hookspath-hook', s.ev),
      check: s => { git(s.proj, 'commit', '-q', '--allow-empty', '-m', 'host') },
      expected: ['hookspath-hook']
    })
    expect(sandboxed.output).toContain('.githooks/pre-commit: Read-only file system')
  })

  it('core.hooksPath inside the working directory: a missing hooks directory made by the command', async () => {
    await attack({
      setup: s => { hostSh(s.proj, 'git config core.hooksPath .githooks') },
      command: s => plant('.githooks/pre-commit', 'hookspath-new-hook', s.ev),
      check: s => { git(s.proj, 'commit', '-q', '--allow-empty', '-m', 'host') },
      expected: ['hookspath-new-hook']
    })
  })

  it('a submodule\'s git directory (.git/modules/*): hooks and config', async () => {
    const setup = (s: Scene): void => {
      hostSh(s.dir, 'git init -q --bare src.git && git clone -q src.git tmp && cd tmp && echo s > s && git add s && git commit -qm s && git push -q origin HEAD && cd .. && rm -rf tmp')
      const r = git(s.proj, 'submodule', 'add', '-q', path.join(s.dir, 'src.git'), 'sub')
      if (r.status !== 0) throw new Error(r.out)
      git(s.proj, 'commit', '-qm', 'sub')
    }
    await attack({
      setup,
      command: s => `${plant('.git/modules/sub/hooks/pre-commit', 'submodule-hook', s.ev)}; ${plant('tools/fsm.sh', 'submodule-fsmonitor', s.ev)}; printf '[core]\\n\\tfsmonitor = ${s.proj}/tools/fsm.sh\\n' >> .git/modules/sub/config`,
      check: s => {
        git(s.proj, 'status', '--porcelain')
        git(path.join(s.proj, 'sub'), 'commit', '-q', '--allow-empty', '-m', 'host')
      },
      expected: ['submodule-hook', 'submodule-fsmonitor']
    })
  })

  it('a linked worktree\'s git directory (.git/worktrees/*): commondir and config.worktree', async () => {
    const setup = (s: Scene): void => {
      hostSh(s.proj, 'git config core.repositoryformatversion 1 && git config extensions.worktreeConfig true && git worktree add -q wt 2>/dev/null && echo /wt/ >> .git/info/exclude')
    }
    await attack({
      setup,
      command: s => [
        `cp -r .git evil; rm -rf evil/worktrees; rm -f evil/hooks/*.sample; ${plant('evil/hooks/pre-commit', 'worktree-commondir-hook', s.ev)}`,
        'echo ../../../evil > .git/worktrees/wt/commondir',
        `${plant('tools/fsm.sh', 'worktree-fsmonitor', s.ev)}; printf '[core]\\n\\tfsmonitor = ${s.proj}/tools/fsm.sh\\n' > .git/worktrees/wt/config.worktree`
      ].join('; '),
      check: s => {
        git(path.join(s.proj, 'wt'), 'status', '--porcelain')
        git(path.join(s.proj, 'wt'), 'commit', '-q', '--allow-empty', '-m', 'host')
      },
      expected: ['worktree-commondir-hook', 'worktree-fsmonitor']
    })
  })

  it('a planted bare repository that the host pushes to', async () => {
    await attack({
      command: s => `git init -q --bare planted.git && ${plant('planted.git/hooks/pre-receive', 'bare-receive-hook', s.ev)}`,
      check: s => { git(s.proj, 'push', '-q', path.join(s.proj, 'planted.git'), 'HEAD:refs/heads/x') },
      expected: ['bare-receive-hook']
    })
  })

  it('a hook that is a symlink into the working directory: its target is read-only', async () => {
    const setup = (s: Scene): void => {
      hostSh(s.proj, 'mkdir scripts && printf "#!/bin/sh\\nexit 0\\n" > scripts/pre-commit && chmod +x scripts/pre-commit && ln -s ../../scripts/pre-commit .git/hooks/pre-commit')
    }
    await attack({
      setup,
      command: s => plant('scripts/pre-commit', 'symlinked-hook', s.ev),
      check: s => { git(s.proj, 'commit', '-q', '--allow-empty', '-m', 'host') },
      expected: ['symlinked-hook']
    })
  })

  it('the file tools cannot write git control files either', async () => {
    const s = await scene()
    hostSh(s.proj, 'git init -q sub && git config core.hooksPath .githooks')
    const ctx = { cwd: s.proj, signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: true, cwd: s.proj, hidden: [] } }
    for (const p of ['.git/config.worktree', '.git/commondir', '.git/info/attributes', 'sub/.git/hooks/pre-commit', 'sub/.git/config',
      '.githooks/pre-commit', 'other/.git', 'other/.git/hooks/pre-commit']) {
      const r = await (files.write_file as Tool).run({ path: p, content: '#!/bin/sh\n' }, ctx)
      expect(r.status, p).toBe('error')
      expect(r.output, p).toMatch(/read-only for tools/)
      expect(fs.existsSync(path.join(s.proj, p)), p).toBe(p === 'sub/.git/config')
    }
  })

  it('ordinary git work in the sandbox is left alone', async () => {
    const s = await scene()
    hostSh(s.dir, 'git init -q --bare src.git')
    const id = '-c user.name=m -c user.email=m@example.invalid'
    const r = await run(s, [
      `echo more >> f && git add f && git ${id} commit -qm inside`,
      `git init -q sub && echo y > sub/y && git -C sub add y && git ${id} -C sub commit -qm y`,
      `git clone -q ${s.dir}/src.git clone 2>&1`,
      'git -C sub config user.name someone',
      'git status --porcelain'
    ].join(' && '), true)
    expect(r.status, r.output).toBe('ok')
    expect(r.output).not.toMatch(/git guard/i)
    expect(git(s.proj, 'log', '--format=%s').out).toBe('inside\ninit\n')
    expect(git(path.join(s.proj, 'sub'), 'config', 'user.name').out).toBe('someone\n')
    expect(fs.readdirSync(path.join(s.proj, 'clone', '.git', 'hooks')).every(f => f.endsWith('.sample'))).toBe(true)
  })
})
