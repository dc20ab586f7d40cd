/**
 * Attacks on the spare sandbox (sandbox/spare-sandbox.ts, real bwrap): the next call's
 * sandbox is set up after a call ends and waits for its command, so whatever changes on the
 * host in between must not reach a call through a sandbox planned before the change. Each
 * attack makes a spare, waits until it is ready, changes the host, and asserts that the next
 * call sees what a freshly made sandbox shows (and that the spare was dropped for that
 * reason). Each got through with the check it names turned off. Everything lives under
 * /var/tmp: the sandbox's private /tmp would hide it anyway and prove nothing.
 */
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createBashTool } from '../../../../src/main/tools/bash-tool'
import { closeSpareSandboxes, spareSandboxes, type SpareDrop } from '../../../../src/main/tools/sandbox/spare-sandbox'
import type { Tool, ToolContext } from '../../../../src/main/tools/tool'
import { until } from '../../../helpers/temp-dir'
import { ROOT } from '../../../helpers/paths'

const haveBwrap = spawnSync('bwrap', ['--version']).status === 0
if (!haveBwrap && process.env.CI !== undefined) throw new Error('bwrap is missing on CI: install bubblewrap')
const haveGit = spawnSync('git', ['--version']).status === 0
const canMount = process.getuid?.() === 0 && spawnSync('mount', ['--version']).status === 0
const CHILD = path.join(ROOT, 'test/e2e/fixtures/bash-with-fds.ts')

const SECRET = 'SPARE-SECRET-41d7a2'
let root: string
let home: string
let bash: Tool

beforeAll(async () => {
  root = await fsp.realpath(await fsp.mkdtemp('/var/tmp/arbor-attack-spare-'))
  home = path.join(root, 'home')
  await fsp.mkdir(home)
  bash = createBashTool({ home, env: env() })
})

afterEach(() => closeSpareSandboxes())

afterAll(async () => {
  await closeSpareSandboxes()
  if (root !== undefined) await fsp.rm(root, { recursive: true, force: true })
})

function env (): Record<string, string | undefined> {
  return { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }
}

function ctx (cwd: string, hidden: string[] = []): ToolContext {
  return { cwd, signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: true, cwd, hidden } }
}

async function project (name: string): Promise<string> {
  const p = path.join(root, name)
  await fsp.mkdir(p, { recursive: true })
  return p
}

async function write (file: string, text = SECRET): Promise<void> {
  await fsp.mkdir(path.dirname(file), { recursive: true })
  await fsp.writeFile(file, text)
}

const dropped = (why: SpareDrop): number => spareSandboxes.stats.dropped[why] ?? 0

/** One call in `cwd`, then the spare it leaves, set up and waiting. */
async function spareAfterACall (cwd: string, hidden: string[] = []): Promise<void> {
  const r = await bash.run({ command: 'true' }, ctx(cwd, hidden))
  expect(r.exitCode).toBe(0)
  await until(() => spareSandboxes.readyIn(cwd), 'the spare sandbox to be ready', 10_000)
}

describe.skipIf(!haveBwrap)('spare sandboxes: what changed on the host since the spare was planned (real bwrap)', () => {
  it('the control: the next call runs in the spare, exactly as in a sandbox started for it', async () => {
    const proj = await project('same')
    const probe = 'echo "$0 $$ $PPID $SHLVL $PWD"; ls /proc/self/fd | sort -n | tr "\\n" " "; echo; env | sort; ulimit -u -t; ' +
      'grep -E "^(Seccomp|NoNewPrivs|CapEff|CapBnd):" /proc/self/status; sed "s/arbor-[0-9]*-[0-9]*/CALL/" /proc/self/cgroup; cat; ' +
      'echo "${BASH_EXECUTION_STRING:0:12}"; exit 3'
    const fresh = await createBashTool({ home, env: env(), spares: false }).run({ command: probe }, ctx(proj))
    await spareAfterACall(proj)
    const used = spareSandboxes.stats.used
    const viaSpare = await bash.run({ command: probe }, ctx(proj))
    expect(spareSandboxes.stats.used).toBe(used + 1)
    expect(viaSpare).toEqual(fresh)
    expect(viaSpare.exitCode).toBe(3)
    expect(viaSpare.output).toMatch(/^bash 2 1 1 /)
    // and in namespaces of its own, every one
    await until(() => spareSandboxes.readyIn(proj), 'the next spare to be ready', 10_000)
    const kinds = ['user', 'mnt', 'pid', 'net', 'ipc', 'uts', 'cgroup']
    const ns = await bash.run({ command: kinds.map(k => `readlink /proc/self/ns/${k}`).join('; ') }, ctx(proj))
    expect(spareSandboxes.stats.used).toBe(used + 2)
    const inside = ns.output.split('\n').slice(0, kinds.length)
    expect(inside).toEqual(kinds.map(k => expect.stringMatching(new RegExp(`^${k}:\\[\\d+\\]$`))))
    for (const [i, k] of kinds.entries()) expect(inside[i], k).not.toBe(fs.readlinkSync(`/proc/self/ns/${k}`))
  })

  it('a hidden path made on the host after the spare was planned is hidden from the next call (its plan differs)', async () => {
    const proj = await project('plan-hidden')
    const hidden = [path.join(proj, 'secrets'), path.join(proj, 'token')]
    await spareAfterACall(proj, hidden)
    const before = dropped('plan')
    await write(path.join(proj, 'secrets', 'key'))
    await write(path.join(proj, 'token'))
    const r = await bash.run({ command: 'cat secrets/key token; ls -A secrets; true' }, ctx(proj, hidden))
    expect(r.output).not.toContain(SECRET)
    expect(dropped('plan')).toBe(before + 1)
  })

  it('a spare made under other limits is not used: the call gets its own /tmp size and process limit', async () => {
    const proj = await project('limits')
    await spareAfterACall(proj) // under the default limits: /tmp of 1 GiB, 512 processes
    const before = dropped('plan')
    const small = createBashTool({ home, env: env(), resourceLimits: { tmpBytes: 4 * 1024 * 1024, processes: 32 } })
    const r = await small.run({ command: 'head -c 16M /dev/zero > /tmp/fill; stat -c "size=%s" /tmp/fill; ulimit -u' }, ctx(proj))
    expect(Number(/^size=(\d+)$/m.exec(r.output)?.[1])).toBeLessThanOrEqual(4 * 1024 * 1024)
    expect(r.output).toMatch(/^32$/m)
    expect(dropped('plan')).toBe(before + 1)
  })

  it('a hidden directory or file renamed away and replaced on the host stays hidden (the mounted path\'s identity changed)', async () => {
    const proj = await project('identity')
    const hidden = [path.join(proj, 'secrets'), path.join(proj, 'token')]
    await write(path.join(proj, 'secrets', 'old'), 'old')
    await write(path.join(proj, 'token'), 'old')
    await spareAfterACall(proj, hidden)
    const before = dropped('changed')
    await fsp.rename(path.join(proj, 'secrets'), path.join(proj, 'secrets.old'))
    await write(path.join(proj, 'secrets', 'key'))
    await write(path.join(proj, 'token.new'))
    await fsp.rename(path.join(proj, 'token.new'), path.join(proj, 'token'))
    const r = await bash.run({ command: 'cat secrets/key token; ls -A secrets; true' }, ctx(proj, hidden))
    expect(r.output).not.toContain(SECRET)
    expect(dropped('changed')).toBe(before + 1)
  })

  it.skipIf(!haveGit)('a repository made on the host after the spare was planned cannot be given hooks or config by the next call', async () => {
    const proj = await project('new-repo')
    await spareAfterACall(proj)
    const before = dropped('plan')
    expect(spawnSync('git', ['init', '-q', proj]).status).toBe(0) // the user starts a repository in the working directory
    const config = await fsp.readFile(path.join(proj, '.git', 'config'), 'utf8')
    const r = await bash.run({
      command: 'printf "[core]\\n\\tfsmonitor = touch /var/tmp/owned\\n" >> .git/config; echo "config rc=$?"; ' +
        'echo "touch /var/tmp/owned" > .git/hooks/pre-commit; echo "hook rc=$?"; mv .git .git-old; echo "mv rc=$?"'
    }, ctx(proj))
    expect(r.output).toMatch(/^config rc=1$/m)
    expect(r.output).toMatch(/^hook rc=1$/m)
    expect(r.output).toMatch(/^mv rc=1$/m)
    expect(r.output).toContain('Read-only file system')
    expect(await fsp.readFile(path.join(proj, '.git', 'config'), 'utf8')).toBe(config)
    expect(fs.readdirSync(path.join(proj, '.git', 'hooks')).filter(n => !n.endsWith('.sample'))).toEqual([])
    expect(dropped('plan')).toBe(before + 1)
  })

  it.skipIf(!canMount)('a mount made on the host after the spare was planned is read-only in the next call (the host\'s mount table changed)', async () => {
    // a shared mount (as systemd makes /): what is mounted under it later propagates into
    // sandboxes already running, without bwrap's read-only remount
    const proj = await project('mounts')
    const shared = path.join(root, 'shared')
    const sub = path.join(shared, 'sub')
    await fsp.mkdir(sub, { recursive: true })
    const mounted: string[] = []
    const mount = (...a: string[]): void => {
      const m = spawnSync('mount', a, { encoding: 'utf8' })
      if (m.status !== 0) throw new Error(`mount ${a.join(' ')}: ${m.stderr}`)
    }
    try {
      mount('--bind', shared, shared)
      mounted.push(shared)
      mount('--make-shared', shared)
      await spareAfterACall(proj)
      const before = dropped('changed')
      mount('-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', sub)
      mounted.push(sub)
      const r = await bash.run({ command: `echo x > ${sub}/planted; echo "rc=$?"` }, ctx(proj))
      expect(r.output).toMatch(/^rc=1$/m)
      expect(r.output).toContain('Read-only file system')
      expect(fs.existsSync(path.join(sub, 'planted'))).toBe(false)
      expect(dropped('changed')).toBe(before + 1)
    } finally {
      for (const m of mounted.reverse()) spawnSync('umount', [m])
    }
  })
})

describe.skipIf(!haveBwrap)('spare sandboxes: what other sandboxed calls do meanwhile (real bwrap)', () => {
  it('a call in an overlapping directory drops the spare, and none is made there while it runs', async () => {
    const outer = await project('overlap')
    const inner = path.join(outer, 'inner')
    await fsp.mkdir(inner)
    await spareAfterACall(outer)
    const overlap = dropped('overlap')
    const busy = dropped('busy')
    const running = bash.run({ command: 'echo started; sleep 1; echo done' }, { ...ctx(inner), onOutput: () => undefined })
    await until(() => dropped('overlap') === overlap + 1, 'the outer spare to be dropped', 5000)
    expect(spareSandboxes.readyIn(outer)).toBe(false)
    // a call in the outer directory ends while the inner one runs: its spare is not made
    expect((await bash.run({ command: 'true' }, ctx(outer))).exitCode).toBe(0)
    await spareSandboxes.prepared()
    expect(dropped('busy')).toBe(busy + 1)
    expect(spareSandboxes.readyIn(outer)).toBe(false)
    expect((await running).output).toBe('started\ndone\n[exit code 0]')
  })
})

describe.skipIf(!haveBwrap)('spare sandboxes and the node (real child process)', () => {
  it('an idle spare does not keep the node running, and ends with it', async () => {
    const proj = await project('node-exit')
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, proj, home, 'sandboxed-spare', 'echo hello'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout?.setEncoding('utf8').on('data', (s: string) => { out += s })
    child.stderr?.setEncoding('utf8').on('data', (s: string) => { err += s })
    const timer = setTimeout(() => child.kill('SIGKILL'), 25_000)
    const code = await new Promise<number | null>(resolve => child.on('close', resolve))
    clearTimeout(timer)
    expect(code, err).toBe(0)
    const r = JSON.parse(out.trim()) as { output: string; sparesUsed: number; sparesWaiting: number }
    expect(r.output).toBe('hello\n[exit code 0]')
    expect(r.sparesUsed).toBe(1)
    expect(r.sparesWaiting).toBe(1) // the one its last call left, when it returned
    // nothing of that spare outlives its node (bwrap's --die-with-parent)
    const left = (): number[] => fs.readdirSync('/proc').filter(n => /^\d+$/.test(n)).map(Number).filter(pid => {
      try { return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(proj) } catch { return false }
    })
    await until(() => left().length === 0, 'the spare to end with its node', 3000)
  })
})
