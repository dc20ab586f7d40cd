/**
 * Escape attempts against the real bubblewrap sandbox of the bash tool. Every attempt must
 * fail, and each test checks the concrete failure (the error the command got, and that the
 * host was not touched). The fake home and data directory live under /var/tmp, not /tmp:
 * the sandbox's private /tmp would hide them anyway and prove nothing.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBashTool, UNSANDBOXED_WARNING } from '../../../../src/main/tools/bash-tool'
import { createFileTools } from '../../../../src/main/tools/file-tools'
import type { Tool, ToolContext, ToolResult } from '../../../../src/main/tools/tool'
import { until } from '../../../helpers/temp-dir'

const haveBwrap = spawnSync('bwrap', ['--version']).status === 0
if (!haveBwrap && process.env.CI !== undefined) throw new Error('bwrap is missing on CI: install bubblewrap')

const R = `${process.pid}-${Date.now()}` // unique names for host-side checks
const SECRET_KEY = 'FAKE-PRIVATE-KEY-d41d8cd9'
const SECRET_DATA = 'ARBOR-DATA-8f00b204'
const SECRET_ENV = 'sk-test-e9800998'

let root: string
let home: string
let dataDir: string
let proj: string
let outside: string
let bash: Tool
let files: Record<string, Tool>
const hostChildren: ChildProcess[] = []

beforeAll(async () => {
  root = await fsp.realpath(await fsp.mkdtemp('/var/tmp/arbor-escape-'))
  home = path.join(root, 'home')
  dataDir = path.join(root, 'data')
  proj = path.join(root, 'proj')
  outside = path.join(root, 'outside')
  for (const d of [path.join(home, '.ssh'), path.join(home, '.aws'), path.join(home, '.config', 'Arbor'), path.join(dataDir, 'feeds'), proj, outside]) {
    await fsp.mkdir(d, { recursive: true })
  }
  await fsp.writeFile(path.join(home, '.ssh', 'id_rsa'), SECRET_KEY)
  await fsp.writeFile(path.join(home, '.aws', 'credentials'), SECRET_KEY)
  await fsp.writeFile(path.join(home, '.netrc'), SECRET_KEY)
  await fsp.writeFile(path.join(home, '.config', 'Arbor', 'config.json'), SECRET_DATA)
  await fsp.writeFile(path.join(dataDir, 'feeds', 'entries'), SECRET_DATA)
  await fsp.writeFile(path.join(outside, 'target.txt'), 'ORIGINAL')
  const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', OPENAI_API_KEY: SECRET_ENV, SSH_AUTH_SOCK: '/run/ssh.sock' }
  bash = createBashTool({ home, dataDir, env })
  files = Object.fromEntries(createFileTools({ home, dataDir }).map(t => [t.name, t]))
})

afterAll(async () => {
  for (const c of hostChildren) if (c.exitCode === null) c.kill('SIGKILL')
  if (root !== undefined) await fsp.rm(root, { recursive: true, force: true })
})

function ctx (over: Partial<ToolContext> = {}): ToolContext {
  return { cwd: proj, signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: true, cwd: proj, hidden: [] }, ...over }
}

async function sh (command: string, over: Partial<ToolContext> = {}): Promise<ToolResult> {
  return bash.run({ command }, ctx(over))
}

function noSecrets (out: string): void {
  expect(out).not.toContain(SECRET_KEY)
  expect(out).not.toContain(SECRET_DATA)
  expect(out).not.toContain(SECRET_ENV)
}

/** Host processes whose command line contains `needle`. */
function hostProcesses (needle: string): number[] {
  const found: number[] = []
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').includes(needle)) found.push(Number(name))
    } catch { /* gone */ }
  }
  return found
}

describe.skipIf(!haveBwrap)('sandbox escapes (real bwrap)', () => {
  it('cannot write outside the working directory', async () => {
    const r = await sh([
      `touch /etc/arbor-escape-${R}`,
      `echo x > "$HOME/escape-${R}"`,
      `echo x > /root/arbor-escape-${R}`,
      `echo x > ${outside}/new-${R}`,
      `echo x > /tmp/arbor-escape-${R} && echo "tmp write stayed inside"`,
      `echo x > /dev/shm/arbor-escape-${R} && echo "shm write stayed inside"`,
      `echo x > /var/tmp/arbor-escape-${R}`
    ].join('; '))
    expect(r.output).toContain(`touch: cannot touch '/etc/arbor-escape-${R}': Read-only file system`)
    expect(r.output).toContain(`${home}/escape-${R}: Read-only file system`)
    expect(r.output).toContain(`/root/arbor-escape-${R}: Read-only file system`)
    expect(r.output).toContain(`${outside}/new-${R}: Read-only file system`)
    expect(r.output).toContain(`/var/tmp/arbor-escape-${R}: Read-only file system`)
    expect(r.output).toContain('tmp write stayed inside')
    for (const p of [`/etc/arbor-escape-${R}`, `${home}/escape-${R}`, `/root/arbor-escape-${R}`, `${outside}/new-${R}`,
      `/tmp/arbor-escape-${R}`, `/dev/shm/arbor-escape-${R}`, `/var/tmp/arbor-escape-${R}`]) {
      expect(fs.existsSync(p), p).toBe(false)
    }
  })

  it('cannot read hidden paths: they read as empty or absent', async () => {
    const r = await sh([
      'cat "$HOME/.ssh/id_rsa"', 'ls -A "$HOME/.ssh" | wc -l', 'cat "$HOME/.aws/credentials"',
      'echo "netrc=[$(cat "$HOME/.netrc")]"', `cat ${dataDir}/feeds/entries`, `ls -A ${dataDir} | wc -l`,
      'cat "$HOME/.config/Arbor/config.json"', 'env',
      'echo key > "$HOME/.ssh/authorized_keys"'
    ].join('; '))
    noSecrets(r.output)
    expect(r.output).toContain(`cat: ${home}/.ssh/id_rsa: No such file or directory`)
    expect(r.output).toContain(`cat: ${home}/.aws/credentials: No such file or directory`)
    expect(r.output).toContain('netrc=[]')
    expect(r.output).toContain(`cat: ${dataDir}/feeds/entries: No such file or directory`)
    expect(r.output).toContain(`cat: ${home}/.config/Arbor/config.json: No such file or directory`)
    expect(r.output).toContain(`${home}/.ssh/authorized_keys: Read-only file system`)
    expect(r.output).not.toContain('SSH_AUTH_SOCK')
    expect(r.output).not.toContain('OPENAI_API_KEY')
    expect(fs.existsSync(path.join(home, '.ssh', 'authorized_keys'))).toBe(false)
  })

  it('cannot reach the host or the outside network', async () => {
    let connections = 0
    const server = net.createServer(s => { connections++; s.destroy() })
    server.listen(0, '0.0.0.0')
    await once(server, 'listening')
    const port = (server.address() as net.AddressInfo).port
    const external = Object.values(os.networkInterfaces()).flat().find(i => i?.family === 'IPv4' && !i.internal)?.address
    try {
      const r = await sh([
        `exec 3<>/dev/tcp/127.0.0.1/${port}`,
        external !== undefined ? `exec 4<>/dev/tcp/${external}/${port}` : 'echo "bash: connect: Network is unreachable"',
        'exec 5<>/dev/tcp/1.1.1.1/53',
        'getent hosts example.com; echo "dns rc=$?"',
        'ip -o link 2>/dev/null | wc -l || true'
      ].join('; '))
      expect(r.output).toContain(`/dev/tcp/127.0.0.1/${port}: Connection refused`)
      expect(r.output).toContain('/dev/tcp/1.1.1.1/53: Network is unreachable')
      if (external !== undefined) expect(r.output).toContain(`/dev/tcp/${external}/${port}: Network is unreachable`)
      expect(r.output).toContain('dns rc=2')
      expect(connections).toBe(0)
    } finally {
      server.close()
    }
  })

  it('cannot see or signal host processes', async () => {
    const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' })
    hostChildren.push(sleeper)
    const pid = sleeper.pid as number
    const r = await sh([
      `kill -0 ${process.pid}`, `kill -9 ${pid}`,
      'echo "pids=$(ls /proc | grep -E "^[0-9]+$" | tr "\\n" " ")"',
      `ls /proc/${pid}/cwd`, `cat /proc/${process.pid}/environ`
    ].join('; '))
    expect(r.output).toContain(`kill: (${process.pid}) - No such process`)
    expect(r.output).toContain(`kill: (${pid}) - No such process`)
    expect(r.output).toContain(`ls: cannot access '/proc/${pid}/cwd': No such file or directory`)
    const pids = (/pids=([\d ]*)/.exec(r.output)?.[1] ?? '').trim().split(' ').map(Number)
    expect(pids.length).toBeGreaterThan(0)
    expect(pids.length).toBeLessThan(10)
    expect(pids).not.toContain(process.pid)
    expect(pids).not.toContain(pid)
    expect(sleeper.exitCode).toBeNull()
    expect(() => process.kill(pid, 0)).not.toThrow()
    sleeper.kill('SIGKILL')
  })

  it('symlink tricks do not reach the host or hidden paths', async () => {
    const r = await sh([
      'ln -s /etc/passwd passwd-link && true >> passwd-link',
      `ln -s ${outside}/target.txt target-link && echo pwned > target-link`,
      `ln -s ${home}/.ssh ssh-link && cat ssh-link/id_rsa`,
      `ln ${outside}/target.txt hard-link`,
      `ln -s ${outside} out-dir && echo x > out-dir/via-dir-${R}`
    ].join('; '))
    expect(r.output).toContain('passwd-link: Read-only file system')
    expect(r.output).toContain('target-link: Read-only file system')
    expect(r.output).toContain('cat: ssh-link/id_rsa: No such file or directory')
    expect(r.output).toMatch(/ln: failed to create hard link 'hard-link' => '.*target\.txt': (Invalid cross-device link|Operation not permitted)/)
    expect(r.output).toContain(`out-dir/via-dir-${R}: Read-only file system`)
    expect(await fsp.readFile(path.join(outside, 'target.txt'), 'utf8')).toBe('ORIGINAL')
    expect(fs.existsSync(path.join(proj, 'hard-link'))).toBe(false)
    expect(fs.existsSync(path.join(outside, `via-dir-${R}`))).toBe(false)
    noSecrets(r.output)
  })

  it('/proc tricks see only the sandbox', async () => {
    const r = await sh([
      `cat /proc/1/root${home}/.ssh/id_rsa`, `cat /proc/self/root${home}/.ssh/id_rsa`,
      `touch /proc/1/root/etc/arbor-escape-${R}`, `ls /proc/${process.pid}/cwd/`,
      `cat /proc/1/root${dataDir}/feeds/entries`
    ].join('; '))
    expect(r.output).toContain(`cat: /proc/1/root${home}/.ssh/id_rsa: No such file or directory`)
    expect(r.output).toContain(`cat: /proc/self/root${home}/.ssh/id_rsa: No such file or directory`)
    expect(r.output).toMatch(new RegExp(`touch: cannot touch '/proc/1/root/etc/arbor-escape-${R}': (Read-only file system|Permission denied)`))
    expect(r.output).toContain(`ls: cannot access '/proc/${process.pid}/cwd/': No such file or directory`)
    expect(fs.existsSync(`/etc/arbor-escape-${R}`)).toBe(false)
    noSecrets(r.output)
  })

  it('has no capabilities: mount, umount and unshare fail', async () => {
    const r = await sh([
      'grep CapEff /proc/self/status', 'grep CapBnd /proc/self/status',
      'mount -t tmpfs none /mnt; echo "mount rc=$?"',
      `umount ${home}/.ssh; echo "umount rc=$?"`,
      'unshare -m true; echo "unshare-m rc=$?"',
      'unshare -U true; echo "unshare-U rc=$?"',
      'unshare -n true; echo "unshare-n rc=$?"'
    ].join('; '))
    expect(r.output).toMatch(/CapEff:\s+0000000000000000/)
    expect(r.output).toMatch(/CapBnd:\s+0000000000000000/)
    for (const what of ['mount', 'umount', 'unshare-m', 'unshare-U', 'unshare-n']) expect(r.output).toMatch(new RegExp(`${what} rc=[1-9]`))
    expect(r.output).toContain('unshare: unshare failed')
  })

  it('nothing started inside survives an abort', async () => {
    const tag = `${(Math.random() * 1000 + 1000).toFixed(4)}`
    const ac = new AbortController()
    let seen = ''
    const p = bash.run({ command: `sleep ${tag} & setsid sleep ${tag} & (nohup sleep ${tag} >/dev/null 2>&1 &); echo started; wait` },
      ctx({ signal: ac.signal, onOutput: c => { seen += c; if (seen.includes('started')) ac.abort() } }))
    const r = await p
    expect(r.output).toBe('started\n[cancelled; the command and everything it started were killed]')
    await until(() => hostProcesses(`sleep ${tag}`).length === 0, `the sandbox's sleeps to be gone (${hostProcesses(`sleep ${tag}`).join(',')})`, 2000)
  })

  it('nothing started inside survives the command\'s end', async () => {
    const tag = `${(Math.random() * 1000 + 2000).toFixed(4)}`
    const r = await sh(`setsid sleep ${tag} > /dev/null 2>&1 & disown; echo done`)
    expect(r.output).toBe('done\n[exit code 0]')
    await until(() => hostProcesses(`sleep ${tag}`).length === 0, 'the detached sleep to be gone', 2000)
  })

  it('the file tools refuse the same paths', async () => {
    await fsp.symlink('/etc/passwd', path.join(proj, 'ft-passwd'))
    await fsp.symlink(path.join(home, '.ssh'), path.join(proj, 'ft-ssh'))
    await fsp.symlink(outside, path.join(proj, 'ft-out'))
    const c = ctx()
    const run = (name: string, args: unknown): Promise<ToolResult> => (files[name] as Tool).run(args, c)
    const refusals: Array<[string, unknown, RegExp]> = [
      ['read_file', { path: '/etc/passwd' }, /outside the working directory/],
      ['read_file', { path: `${home}/.ssh/id_rsa` }, /outside|hidden/],
      ['read_file', { path: 'ft-passwd' }, /resolves to \/etc\/passwd through a symlink/],
      ['read_file', { path: 'ft-ssh/id_rsa' }, /outside|hidden/],
      ['read_file', { path: `/proc/self/root${home}/.ssh/id_rsa` }, /outside|hidden/],
      ['read_file', { path: `/proc/1/root${dataDir}/feeds/entries` }, /outside|hidden/],
      ['read_file', { path: '../outside/target.txt' }, /outside/],
      ['write_file', { path: 'ft-out/new.txt', content: 'x' }, /outside/],
      ['write_file', { path: 'ft-passwd', content: 'x' }, /outside/],
      ['write_file', { path: `/tmp/arbor-escape-${R}`, content: 'x' }, /outside/],
      ['edit_file', { path: 'ft-out/target.txt', old: 'ORIGINAL', new: 'pwned' }, /outside/],
      ['write_file', { path: '.git/hooks/post-checkout', content: 'x' }, /read-only for tools/],
      ['list_dir', { path: 'ft-ssh' }, /outside|hidden/],
      ['list_dir', { path: dataDir }, /outside|hidden/]
    ]
    for (const [name, args, why] of refusals) {
      const r = await run(name, args)
      expect(r.status, `${name} ${JSON.stringify(args)}`).toBe('error')
      expect(r.output, `${name} ${JSON.stringify(args)}`).toMatch(why)
      noSecrets(r.output)
    }
    expect(await fsp.readFile(path.join(outside, 'target.txt'), 'utf8')).toBe('ORIGINAL')
    expect(fs.existsSync(path.join(outside, 'new.txt'))).toBe(false)
    // the home directory (or a parent of it) is refused as a working directory: tools could plant start-up files there
    const inHome = ctx({ cwd: home, sandbox: { enabled: true, cwd: home, hidden: [] } })
    expect((await (files.read_file as Tool).run({ path: '.ssh/id_rsa' }, inHome)).output).toMatch(/is your home directory/)
    expect((await (files.write_file as Tool).run({ path: '.bashrc', content: 'x' }, inHome)).output).toMatch(/is your home directory/)
    const b = await sh('echo x > .bashrc', { cwd: home, sandbox: { enabled: true, cwd: home, hidden: [] } })
    expect(b.status).toBe('error')
    expect(b.output).toMatch(/is your home directory/)
    const parent = await sh('echo x > home/.bashrc', { cwd: root, sandbox: { enabled: true, cwd: root, hidden: [] } })
    expect(parent.output).toMatch(/a parent of your home directory/)
    expect(fs.existsSync(path.join(home, '.bashrc'))).toBe(false)
  })
})

describe('without bwrap', () => {
  it('refuses to run and says how to install it', async () => {
    const missing = createBashTool({ bwrapPath: '/nonexistent/bwrap', env: { PATH: process.env.PATH } })
    const marker = path.join(os.tmpdir(), `arbor-not-run-${R}`)
    const cwd = os.tmpdir()
    const r = await missing.run({ command: `touch ${marker}` }, { cwd, signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: true, cwd, hidden: [] } })
    expect(r.status).toBe('error')
    expect(r.output).toMatch(/^The command did not run: .*bwrap was not found at \/nonexistent\/bwrap\. Install bubblewrap \(Debian\/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap/)
    expect(fs.existsSync(marker)).toBe(false)

    const noPath = createBashTool({ env: { PATH: '/nonexistent-bin' } })
    const r2 = await noPath.run({ command: `touch ${marker}` }, { cwd, signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: true, cwd, hidden: [] } })
    expect(r2.output).toMatch(/bwrap was not found on PATH/)
    expect(fs.existsSync(marker)).toBe(false)
  })

  it('runs unsandboxed, with the warning, when the user turned the sandbox off', async () => {
    const missing = createBashTool({ bwrapPath: '/nonexistent/bwrap', env: { PATH: process.env.PATH } })
    const marker = path.join(os.tmpdir(), `arbor-ran-${R}`)
    const cwd = os.tmpdir()
    try {
      const r = await missing.run({ command: `touch ${marker} && echo ran` }, { cwd, signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: false, cwd, hidden: [] } })
      expect(r).toEqual({ status: 'ok', output: `${UNSANDBOXED_WARNING}\nran\n[exit code 0]`, exitCode: 0 })
      expect(fs.existsSync(marker)).toBe(true)
    } finally {
      fs.rmSync(marker, { force: true })
    }
  })
})
