/**
 * Working directories that reach what the host runs at start-up (real bwrap, real git). With
 * `~/.config` as the working directory, a sandboxed command could plant git's user config,
 * autostart entries, systemd user services and login environment files, and the user's next
 * `git status` in an unrelated repository ran the planted code. Such working directories are
 * refused, for this user's home and for every other account's (a node under a service
 * account next to a person's home). Everything lives under /var/tmp: the sandbox's private
 * /tmp would hide it anyway and prove nothing.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBashTool } from '../../../../src/main/tools/bash-tool'
import { createFileTools } from '../../../../src/main/tools/file-tools'
import type { Tool, ToolContext, ToolResult } from '../../../../src/main/tools/tool'

const haveBwrap = spawnSync('bwrap', ['--version']).status === 0
const haveGit = spawnSync('git', ['--version']).status === 0
if ((!haveBwrap || !haveGit) && process.env.CI !== undefined) throw new Error('bwrap and git are needed on CI')

const REFUSED_CONFIG = /holds your programs' settings and start-up files, which run outside the sandbox; choose a project directory instead/

let root: string
let n = 0

beforeAll(async () => {
  root = await fsp.realpath(await fsp.mkdtemp('/var/tmp/arbor-attack-startup-'))
})

afterAll(async () => {
  if (root !== undefined) await fsp.rm(root, { recursive: true, force: true })
})

function ctx (cwd: string, enabled = true): ToolContext {
  return { cwd, signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled, cwd, hidden: [] } }
}

interface Scene {
  home: string
  /** an unrelated repository the user runs git in later */
  repo: string
  /** where planted code leaves its mark: outside every working directory, writable by the host only */
  ev: string
  bash: Tool
  files: Record<string, Tool>
}

/** A fresh home (XDG_CONFIG_HOME unset) with an empty ~/.config, an unrelated committed repository and an evidence directory. */
async function scene (passwdFile?: string): Promise<Scene> {
  const dir = path.join(root, `s${n++}`)
  const home = path.join(dir, 'home')
  const repo = path.join(dir, 'repo')
  const ev = path.join(dir, 'evidence')
  for (const d of [path.join(home, '.config'), repo, ev]) await fsp.mkdir(d, { recursive: true })
  const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }
  hostGit(home, repo, 'init', '-q', '.')
  await fsp.writeFile(path.join(repo, 'f'), 'hi\n')
  hostGit(home, repo, 'add', 'f')
  hostGit(home, repo, 'commit', '-qm', 'init')
  const opts = { home, dataDir: path.join(dir, 'data'), ...(passwdFile !== undefined ? { passwdFile } : {}) }
  return {
    home,
    repo,
    ev,
    bash: createBashTool({ ...opts, env }),
    files: Object.fromEntries(createFileTools(opts).map(t => [t.name, t]))
  }
}

/** git as the user runs it on the host with that home: its user config read, the machine's system config not. */
function hostGit (home: string, cwd: string, ...args: string[]): string {
  const env = {
    PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: 'u', GIT_AUTHOR_EMAIL: 'u@example.invalid', GIT_COMMITTER_NAME: 'u', GIT_COMMITTER_EMAIL: 'u@example.invalid'
  }
  const r = spawnSync('git', args, { cwd, env, encoding: 'utf8', timeout: 20_000 })
  return `${r.stdout}${r.stderr}`
}

/** What the sandboxed command plants in ~/.config: every file runs (or is read) on the host later. */
const PLANTED = ['git/config', 'git/fsm.sh', 'git/pager.sh', 'autostart/x.desktop', 'systemd/user/x.service', 'environment.d/x.conf', 'fish/config.fish']

function attackCommand (cfg: string, ev: string): string {
  const script = (name: string): string => `printf '#!/bin/sh\\necho ran >> ${ev}/${name}\\ncat >/dev/null 2>&1 || true\\nexit 0\\n'`
  return [
    'mkdir -p git autostart systemd/user environment.d fish',
    `${script('fsmonitor')} > git/fsm.sh`,
    `${script('pager')} > git/pager.sh`,
    'chmod +x git/fsm.sh git/pager.sh',
    `printf '[core]\\n\\tfsmonitor = ${cfg}/git/fsm.sh\\n\\tpager = ${cfg}/git/pager.sh\\n' > git/config`,
    `printf '[Desktop Entry]\\nType=Application\\nExec=sh -c "echo ran >> ${ev}/autostart"\\n' > autostart/x.desktop`,
    `printf '[Service]\\nExecStart=/bin/sh -c "echo ran >> ${ev}/systemd"\\n' > systemd/user/x.service`,
    `printf 'LD_PRELOAD=${cfg}/evil.so\\n' > environment.d/x.conf`,
    `printf 'echo ran >> ${ev}/fish\\n' > fish/config.fish`
  ].join(' && ')
}

function planted (cfg: string): string[] {
  return PLANTED.filter(rel => fs.existsSync(path.join(cfg, rel)))
}

describe.skipIf(!haveBwrap || !haveGit)('working directories that reach the host\'s start-up files (real bwrap, real git)', () => {
  it('~/.config as the working directory: nothing is planted and the host\'s git runs nothing', async () => {
    // the control: without the sandbox the same command plants all of it, and git runs it
    const control = await scene()
    const controlCfg = path.join(control.home, '.config')
    const c = await control.bash.run({ command: attackCommand(controlCfg, control.ev) }, ctx(controlCfg, false))
    expect(c.status, c.output).toBe('ok')
    expect(planted(controlCfg)).toEqual(PLANTED)
    hostGit(control.home, control.repo, 'status')
    expect(fs.readdirSync(control.ev), 'the attack is real: git status ran the planted fsmonitor').toContain('fsmonitor')

    const s = await scene()
    const cfg = path.join(s.home, '.config')
    const r = await s.bash.run({ command: attackCommand(cfg, s.ev) }, ctx(cfg))
    expect(r.status, r.output).toBe('error')
    expect(r.output).toMatch(/^The command did not run: the working directory .*\.config holds/)
    expect(r.output).toMatch(REFUSED_CONFIG)
    expect(planted(cfg)).toEqual([])
    hostGit(s.home, s.repo, 'status')
    expect(fs.readdirSync(s.ev), 'planted code ran on the host').toEqual([])

    // the file tools follow the same rule: nothing written, nothing read
    const w = await (s.files.write_file as Tool).run({ path: 'git/config', content: '[core]\n\tfsmonitor = /bin/true\n' }, ctx(cfg))
    expect(w.status).toBe('error')
    expect(w.output).toMatch(REFUSED_CONFIG)
    expect(fs.existsSync(path.join(cfg, 'git', 'config'))).toBe(false)
    expect((await (s.files.list_dir as Tool).run({ path: '.' }, ctx(cfg))).output).toMatch(REFUSED_CONFIG)
  })

  it('every directory that is, holds or lies in one the host runs from is refused; one program\'s own config is not', async () => {
    const s = await scene()
    const h = s.home
    await fsp.mkdir(path.join(root, 'dotfiles', 'config'), { recursive: true })
    const linked = path.join(root, `linked${n++}`)
    await fsp.mkdir(linked)
    // ~/.config a symlink into a dotfiles repository: the repository holds it
    await fsp.symlink(path.join(root, 'dotfiles', 'config'), path.join(linked, '.config'))
    const linkedBash = createBashTool({ home: linked, dataDir: path.join(root, 'data'), env: { PATH: process.env.PATH, HOME: linked } })
    for (const d of ['.local/share/systemd/user', '.local/bin/sub', 'bin', '.config/autostart', '.config/systemd/user', '.config/environment.d', '.config/nvim', 'proj']) {
      await fsp.mkdir(path.join(h, d), { recursive: true })
    }
    const refusals: Array<[Tool, string, RegExp]> = [
      [s.bash, path.join(h, '.local'), /contains .*\.local\/share\/systemd, which holds your systemd services/],
      [s.bash, path.join(h, '.local/share/systemd'), /holds your systemd services, which run outside the sandbox/],
      [s.bash, path.join(h, '.local/share/systemd/user'), /is inside .*\.local\/share\/systemd, which holds your systemd services/],
      [s.bash, path.join(h, '.local/bin'), /holds commands found on your PATH before the system's/],
      [s.bash, path.join(h, '.local/bin/sub'), /is inside .*\.local\/bin, which holds commands found on your PATH/],
      [s.bash, path.join(h, 'bin'), /holds commands found on your PATH before the system's/],
      [s.bash, path.join(h, '.config/autostart'), /holds programs started at your login/],
      [s.bash, path.join(h, '.config/systemd/user'), /is inside .*\.config\/systemd, which holds your systemd services/],
      [s.bash, path.join(h, '.config/environment.d'), /holds your login environment/],
      [linkedBash, path.join(root, 'dotfiles'), /contains .*dotfiles\/config, which holds your programs' settings/],
      [linkedBash, path.join(linked, '.config'), REFUSED_CONFIG],
      [s.bash, '/etc', /holds the system's settings/],
      [s.bash, '/etc/xdg/autostart', /holds programs started at every user's login/]
    ]
    for (const [tool, cwd, why] of refusals) {
      if (!fs.existsSync(cwd)) continue // /etc/xdg/autostart is not on every machine
      const r = await tool.run({ command: 'touch planted-by-sandbox' }, ctx(cwd))
      expect(r.status, `${cwd}: ${r.output}`).toBe('error')
      expect(r.output, cwd).toMatch(why)
      expect(r.output, cwd).toMatch(/choose a project directory instead/)
      expect(fs.existsSync(path.join(cwd, 'planted-by-sandbox')), cwd).toBe(false)
    }
    // the user chose to let the agent edit one program's settings, or work in a project in the home
    for (const cwd of [path.join(h, '.config/nvim'), path.join(h, 'proj')]) {
      const r = await s.bash.run({ command: 'echo ok > init.lua && cat init.lua' }, ctx(cwd))
      expect(r.status, `${cwd}: ${r.output}`).toBe('ok')
      expect(fs.readFileSync(path.join(cwd, 'init.lua'), 'utf8')).toBe('ok\n')
    }
  })

  it('$XDG_CONFIG_HOME elsewhere is refused as ~/.config is', async () => {
    const s = await scene()
    const xdg = path.join(root, `xdg${n++}`)
    await fsp.mkdir(path.join(xdg, 'git'), { recursive: true })
    const bash = createBashTool({ home: s.home, dataDir: path.join(root, 'data'), env: { PATH: process.env.PATH, HOME: s.home, XDG_CONFIG_HOME: xdg } })
    const r = await bash.run({ command: 'touch git/config' }, ctx(xdg))
    expect(r.status).toBe('error')
    expect(r.output).toMatch(REFUSED_CONFIG)
    expect(fs.existsSync(path.join(xdg, 'git', 'config'))).toBe(false)
  })

  it('another account\'s home (a node under a service account next to a person\'s home) is refused', async () => {
    const other = path.join(root, `other${n++}`, 'alice')
    for (const d of ['.config/git', '.local/bin/sub', 'proj']) await fsp.mkdir(path.join(other, d), { recursive: true })
    const passwd = path.join(root, `passwd${n++}`)
    await fsp.writeFile(passwd, [
      'root:x:0:0:root:/root:/bin/bash',
      '# a comment, then lines that name no usable home',
      'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
      'sysd:x:998:998::/:/usr/sbin/nologin',
      'gone:x:1001:1001::/var/tmp/arbor-no-such-home-d41d8c:/bin/sh',
      'broken line',
      `alice:x:1000:1000:Alice,,,:${other}:/bin/bash`
    ].join('\n') + '\n')
    const s = await scene(passwd)
    const cases: Array<[string, RegExp]> = [
      [other, /is the home directory of the account alice; tools could change its shell start-up files there, which run outside the sandbox/],
      [path.dirname(other), /contains .*, the home directory of the account alice/],
      [path.join(other, '.config'), /holds the account alice's programs' settings and start-up files, which run outside the sandbox/],
      [path.join(other, '.local/bin/sub'), /is inside .*\.local\/bin, which holds commands found on the account alice's PATH/]
    ]
    for (const [cwd, why] of cases) {
      const b = await s.bash.run({ command: 'touch planted-by-sandbox' }, ctx(cwd))
      expect(b.status, `${cwd}: ${b.output}`).toBe('error')
      expect(b.output, cwd).toMatch(why)
      expect(fs.existsSync(path.join(cwd, 'planted-by-sandbox')), cwd).toBe(false)
      const w = await (s.files.write_file as Tool).run({ path: '.profile', content: 'planted' }, ctx(cwd))
      expect(w.status, `${cwd}: ${w.output}`).toBe('error')
      expect(w.output, cwd).toMatch(why)
    }
    for (const [cwd] of cases) expect(fs.existsSync(path.join(cwd, '.profile')), cwd).toBe(false)
    // a project inside that home is the person's to share with the agent
    const ok: ToolResult = await s.bash.run({ command: 'echo ok > f && cat f' }, ctx(path.join(other, 'proj')))
    expect(ok.status, ok.output).toBe('ok')
  })

  it('a real account of this machine (from /etc/passwd) is refused: its home cannot be listed', async () => {
    // read-only on purpose: this home is not ours to write in, whatever the outcome
    const mine = new Set([os.homedir(), process.env.HOME].filter((h): h is string => h !== undefined).map(h => fs.realpathSync(h)))
    const account = fs.readFileSync('/etc/passwd', 'utf8').split('\n').map(l => l.split(':')).find(f => {
      const home = f[5]
      if (f.length < 7 || home === undefined || !home.startsWith('/') || home === '/' || home === '/nonexistent') return false
      try { return fs.statSync(home).isDirectory() && !mine.has(fs.realpathSync(home)) && fs.realpathSync(home) !== '/' } catch { return false }
    })
    if (account === undefined) return // no other account with a home on this machine
    const s = await scene()
    const home = fs.realpathSync(account[5] as string)
    const r = await (s.files.list_dir as Tool).run({ path: '.' }, ctx(home))
    expect(r.status, `${home}: ${r.output}`).toBe('error')
    expect(r.output).toMatch(new RegExp(`the home directory of the account ${account[0] as string}`))
  })
})
