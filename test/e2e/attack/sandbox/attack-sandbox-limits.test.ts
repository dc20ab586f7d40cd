/**
 * Attacks on the bash sandbox's resource limits and seccomp filter, through real bwrap:
 * a fork bomb, full tmpfs mounts, a memory hog, a CPU loop, leaving the call's cgroup, and
 * the kernel calls a sandboxed shell has no use for (terminal injection, namespaces, the
 * keyring, mounts, Unix sockets to a listener on the host, tracing bwrap's init, another
 * architecture's system calls). Each asserts the safe outcome; each got through on the
 * code before the limits and the filter existed. The kernel-call attacks are raw syscalls
 * from test/e2e/fixtures/sandbox-attacks.py. Limits are set small so the attacks end fast.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import net from 'node:net'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBashTool } from '../../../../src/main/tools/bash-tool'
import { buildBwrapArgs } from '../../../../src/main/tools/sandbox/bwrap-args'
import { CallCgroup, parseCgroupMounts, parseProcCgroup, v1Dir } from '../../../../src/main/tools/sandbox/resource-cgroups'
import { resolveResourceLimits } from '../../../../src/main/tools/sandbox/resource-limits'
import { clearSandboxProbeCache, sandboxProbe } from '../../../../src/main/tools/sandbox/sandbox-probe'
import { SECCOMP_FD, spawnSandbox } from '../../../../src/main/tools/sandbox/spawn-sandbox'
import { closeSpareSandboxes } from '../../../../src/main/tools/sandbox/spare-sandbox'
import type { Tool, ToolContext, ToolResult } from '../../../../src/main/tools/tool'
import { until } from '../../../helpers/temp-dir'
import { E2E_FIXTURES } from '../../../helpers/paths'

const haveBwrap = spawnSync('bwrap', ['--version']).status === 0
if (!haveBwrap && process.env.CI !== undefined) throw new Error('bwrap is missing on CI: install bubblewrap')
const PYTHON = '/usr/bin/python3'
const ATTACKS_SOURCE = path.join(E2E_FIXTURES, 'sandbox-attacks.py')
/** the attacks, copied beside the project: a checkout under /tmp is not visible inside (the sandbox has its own /tmp) */
let ATTACKS: string
const MiB = 1024 * 1024
const LIMITS = { processes: 64, memoryBytes: 256 * MiB, tmpBytes: 32 * MiB, shmBytes: 16 * MiB, runBytes: 4 * MiB }

let root: string
let home: string
let proj: string
let bash: Tool
const env = { PATH: process.env.PATH, LANG: 'C.UTF-8' }

/**
 * A fence for this test process: a pids cgroup of its own (where v1 allows) with room for
 * a few calls' limits, so a regression in the limits cannot fork-bomb the shared machine.
 * The calls' cgroups are made below it. Undone in afterAll.
 */
let fence: { dir: string; back: string } | undefined
function putUpFence (): void {
  const mounts = parseCgroupMounts(fs.readFileSync('/proc/self/mountinfo', 'utf8'))
  const dir = v1Dir('pids', mounts, parseProcCgroup(fs.readFileSync('/proc/self/cgroup', 'utf8')))
  if (dir === undefined) return
  const mine = path.join(dir, `arbor-fence-${process.pid}`)
  try {
    fs.mkdirSync(mine)
    fs.writeFileSync(path.join(mine, 'pids.max'), String(LIMITS.processes * 8))
    fs.writeFileSync(path.join(mine, 'cgroup.procs'), String(process.pid))
    fence = { dir: mine, back: dir }
  } catch {
    try { fs.rmdirSync(mine) } catch { /* not made */ }
  }
}

beforeAll(async () => {
  putUpFence()
  // under /var/tmp: the sandbox has its own /tmp, and the Unix socket below must be visible inside
  root = await fsp.realpath(await fsp.mkdtemp('/var/tmp/arbor-limits-'))
  home = path.join(root, 'home')
  proj = path.join(root, 'proj')
  await fsp.mkdir(home)
  await fsp.mkdir(proj)
  ATTACKS = path.join(root, 'sandbox-attacks.py')
  await fsp.copyFile(ATTACKS_SOURCE, ATTACKS)
  bash = createBashTool({ home, env, resourceLimits: LIMITS })
})

afterAll(async () => {
  await closeSpareSandboxes() // their cgroups are inside the fence
  if (root !== undefined) await fsp.rm(root, { recursive: true, force: true })
  if (fence !== undefined) {
    fs.writeFileSync(path.join(fence.back, 'cgroup.procs'), String(process.pid))
    fs.rmdirSync(fence.dir)
  }
})

function ctx (over: Partial<ToolContext> = {}): ToolContext {
  return { cwd: proj, signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: true, cwd: proj, hidden: [] }, ...over }
}

/** This process's descendants, from /proc (the sandbox's processes included). */
function descendants (): number[] {
  const children = new Map<number, number[]>()
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    let stat: string
    try { stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8') } catch { continue }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    const list = children.get(ppid) ?? []
    list.push(Number(name))
    children.set(ppid, list)
  }
  const out: number[] = []
  const todo = [process.pid]
  while (todo.length > 0) {
    for (const c of children.get(todo.pop() as number) ?? []) {
      out.push(c)
      todo.push(c)
    }
  }
  return out
}

/** Cgroups this process made for calls (named arbor-PID-N) that still exist. */
function leftoverCgroups (): string[] {
  const mounts = parseCgroupMounts(fs.readFileSync('/proc/self/mountinfo', 'utf8'))
  const own = parseProcCgroup(fs.readFileSync('/proc/self/cgroup', 'utf8'))
  const out: string[] = []
  for (const c of ['pids', 'memory', 'cpuacct']) {
    const dir = v1Dir(c, mounts, own)
    if (dir === undefined || !fs.existsSync(dir)) continue
    for (const e of fs.readdirSync(dir)) if (e.startsWith(`arbor-${process.pid}-`)) out.push(path.join(dir, e))
  }
  return out
}

async function quiet (): Promise<void> {
  await closeSpareSandboxes() // the next call's sandbox, set up ahead (spare-sandbox.ts), is not part of this call
  const deadline = Date.now() + 3000
  while (descendants().length > 0 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 20))
  expect(descendants()).toEqual([])
  expect(leftoverCgroups()).toEqual([])
}

describe.skipIf(!haveBwrap)('resource limits (real bwrap)', () => {
  it('a fork bomb stops at the process limit; the node stays responsive, the machine can fork, and the call says why it ended', async () => {
    const p = await sandboxProbe()
    expect(p.ok && (p.limits.cgroup?.pids === true || p.limits.nprocRlimit), 'this machine can limit the processes of a call').toBe(true)
    let maxSeen = 0
    let maxLagMs = 0
    let forkFailures = 0
    let last = performance.now()
    const sampler = setInterval(() => {
      const now = performance.now()
      maxLagMs = Math.max(maxLagMs, now - last - 50)
      last = now
      maxSeen = Math.max(maxSeen, descendants().length)
      if (spawnSync('true').status !== 0) forkFailures++
    }, 50)
    let r: ToolResult
    try {
      r = await bash.run({ command: ':(){ :|:& };:; sleep 10', timeoutMs: 4000 }, ctx()) // the shell stays, or its end would end the bomb
    } finally {
      clearInterval(sampler)
    }
    expect(maxSeen).toBeGreaterThan(LIMITS.processes / 2) // the bomb did run
    expect(maxSeen).toBeLessThanOrEqual(LIMITS.processes)
    expect(forkFailures).toBe(0)
    expect(maxLagMs).toBeLessThan(1000)
    expect(r.output).toMatch(/\[the command reached its limit of 64 processes: \d+ process creations were refused/)
    expect(r.output).toMatch(/\[timed out after 4000 ms; the command and everything it started were killed\]$/)
    await quiet()
  })

  it('filling /tmp, /dev/shm and /run stops at their sizes; /dev is read-only', async () => {
    const r = await bash.run({
      command: 'for d in /tmp /dev/shm /run; do head -c 100M /dev/zero > $d/fill; echo "$d rc=$? size=$(stat -c %s $d/fill)"; done; ' +
        'echo x > /dev/planted; echo "dev rc=$?"'
    }, ctx())
    const size = (d: string): number => Number(new RegExp(`^${d} rc=1 size=(\\d+)$`, 'm').exec(r.output)?.[1] ?? NaN)
    expect(r.output).toContain('No space left on device')
    expect(size('/tmp')).toBeLessThanOrEqual(LIMITS.tmpBytes)
    expect(size('/tmp')).toBeGreaterThan(LIMITS.tmpBytes - MiB)
    expect(size('/dev/shm')).toBeLessThanOrEqual(LIMITS.shmBytes)
    expect(size('/run')).toBeLessThanOrEqual(LIMITS.runBytes)
    // stdout and stderr are two pipes: their lines may interleave either way
    expect(r.output).toContain('/dev/planted: Read-only file system')
    expect(r.output).toMatch(/^dev rc=1$/m)
    await quiet()
  })

  it('a memory hog is killed at the memory limit, with a clear message', async () => {
    const r = await bash.run({ command: `${PYTHON} -c "b = b'x' * (1024 << 20)"; echo "rc=$?"` }, ctx())
    expect(r.output).toContain('Killed') // bash's word, on stderr: its place among stdout's lines may vary
    expect(r.output).toMatch(/^rc=137$/m)
    expect(r.output).toContain("[a process was killed for exceeding the command's memory limit of 256 MiB]")
    expect(r.exitCode).toBe(0)
    await quiet()
  })

  it('a CPU loop, alone or spread over processes, is stopped at the CPU time limit of the whole call', async () => {
    const cpu = createBashTool({ home, env, resourceLimits: { ...LIMITS, cpuTimeMs: 1500 } })
    // the words come from the call's summed CPU time (a per-process limit would kill each loop by SIGXCPU);
    // wall time is not asserted: on a loaded machine 1.5 s of CPU can take much longer
    for (const command of ['while :; do :; done', 'for i in 1 2 3 4; do (while :; do :; done) & done; wait']) {
      const r = await cpu.run({ command, timeoutMs: 25_000 }, ctx())
      expect(r.output).toBe('[the command used up its CPU time limit of 1.5 s (the CPU time of all its processes; a longer timeoutMs gives more); ' +
        'the command and everything it started were killed]')
      await quiet()
    }
  }, 60_000)

  it('without cgroups, rlimits still bound CPU time and memory per process, and the tmpfs sizes hold', async () => {
    const plain = createBashTool({ home, env, resourceLimits: { ...LIMITS, cpuTimeMs: 1500 }, cgroups: false })
    const loop = await plain.run({ command: 'while :; do :; done', timeoutMs: 25_000 }, ctx())
    expect(loop.output).toContain('[the command\'s shell ran out of CPU time: SIGXCPU at the per-process limit of 2 s]')
    expect(loop.exitCode).toBe(152)
    const hog = await plain.run({ command: `${PYTHON} -c "b = b'x' * (1024 << 20)"` }, ctx())
    expect(hog.output).toContain('MemoryError')
    const tmp = await plain.run({ command: 'head -c 100M /dev/zero > /tmp/fill; stat -c %s /tmp/fill' }, ctx())
    expect(Number(/^(\d+)$/m.exec(tmp.output)?.[1])).toBeLessThanOrEqual(LIMITS.tmpBytes)
    // and says up front what it cannot hold
    clearSandboxProbeCache()
    const p = await sandboxProbe({ cgroups: false })
    expect(p.ok).toBe(true)
    if (p.ok && process.getuid?.() === 0) expect(p.warnings.join('\n')).toMatch(/cannot limit the number of processes here: Arbor runs as root/)
    if (p.ok) expect(p.warnings.join('\n')).toMatch(/limits memory per process only \(RLIMIT_DATA\)/)
    await quiet()
  }, 60_000)

  it('the call runs in its own cgroup, cannot leave it from inside, and the cgroup is gone after the call', async () => {
    let inside: string[] = []
    const r = await bash.run({
      command: 'for f in /sys/fs/cgroup/pids/cgroup.procs /sys/fs/cgroup/memory/cgroup.procs /sys/fs/cgroup/unified/cgroup.procs; do echo $$ > $f; echo "rc=$?"; done; ' +
        'mount -t cgroup -o pids none /mnt; echo "mount rc=$?"; echo ready; sleep 1'
    }, ctx({
      onOutput: c => {
        if (!c.includes('ready')) return
        inside = descendants().map(pid => { try { return fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8') } catch { return '' } })
      }
    }))
    expect(r.output).not.toMatch(/^rc=0$/m)
    expect(r.output).toMatch(/Read-only file system/)
    expect(r.output).toContain('mount rc=32')
    expect(inside.length).toBeGreaterThan(0)
    for (const cg of inside.filter(c => c !== '')) {
      expect(cg).toMatch(new RegExp(`^\\d+:pids:.*/arbor-${process.pid}-\\d+$`, 'm'))
      expect(cg).toMatch(new RegExp(`^\\d+:memory:.*/arbor-${process.pid}-\\d+$`, 'm'))
    }
    await quiet()
  })
})

describe.skipIf(!haveBwrap)('joining the call\'s cgroup', () => {
  it('moved from outside while bwrap reads its filter (the cgroup v2 way), no process of the call starts outside', async () => {
    const p = await sandboxProbe()
    if (!p.ok || p.cgroupBase === undefined || p.seccomp === undefined) return
    const cg = CallCgroup.create(p.cgroupBase, resolveResourceLimits(LIMITS))
    const name = path.basename(cg.paths[0] as string)
    const args = buildBwrapArgs({ policy: { enabled: true, cwd: proj, hidden: [] }, command: 'sleep 0.3', env, home, seccompFd: SECCOMP_FD })
    const child = spawnSandbox({ file: p.bwrapPath, args, seccomp: p.seccomp, cgroup: cg, join: 'move', stdio: ['ignore', 'ignore', 'ignore'] })
    await until(() => descendants().some(pid => { try { return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep') } catch { return false } }), 'the sleep to start', 5000)
    const outside = descendants().filter(pid => { try { return !fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').includes(`/${name}\n`) } catch { return false } })
    await new Promise(resolve => child.on('exit', resolve))
    await cg.remove()
    expect(outside).toEqual([])
    await quiet()
  })
})

/** Runs attacks from the fixture in one call; NAME → result, or KILLED(rc) when python died. */
async function attack (names: string[], arg = ''): Promise<Record<string, string>> {
  const r = await bash.run({ command: names.map(n => `${PYTHON} ${ATTACKS} ${n} ${arg}; echo "${n} rc=$?"`).join('; ') }, ctx())
  const out: Record<string, string> = {}
  for (const n of names) {
    const line = new RegExp(`^${n}=(\\S+)$`, 'm').exec(r.output)?.[1]
    out[n] = line ?? `KILLED(${new RegExp(`^${n} rc=(\\d+)$`, 'm').exec(r.output)?.[1] ?? '?'})`
  }
  return out
}

const havePython = fs.existsSync(PYTHON)
if (!havePython && process.env.CI !== undefined) throw new Error(`${PYTHON} is missing on CI: the seccomp attacks need it`)

describe.skipIf(!haveBwrap || !havePython)('the seccomp filter (real bwrap)', () => {
  it('TIOCSTI and TIOCLINUX cannot push input into a terminal, whatever the high bits of the request', async () => {
    expect(await attack(['tiocsti', 'tiocsti-high', 'tioclinux'])).toEqual({ tiocsti: 'EPERM', 'tiocsti-high': 'EPERM', tioclinux: 'EPERM' })
  })

  it('no new namespaces: unshare, clone with namespace flags, clone3 (ENOSYS, so libc falls back)', async () => {
    expect(await attack(['unshare-user', 'unshare-net', 'clone-newuser', 'clone3'])).toEqual({
      'unshare-user': 'EPERM', 'unshare-net': 'EPERM', 'clone-newuser': 'EPERM', clone3: 'ENOSYS'
    })
    const r = await bash.run({ command: 'unshare -U true' }, ctx())
    expect(r.output).toContain('unshare: unshare failed: Operation not permitted')
    // threads and processes still start (clone without namespace flags; clone3 falls back)
    expect((await bash.run({ command: `${PYTHON} -u -c "import threading, subprocess; t = threading.Thread(target=print, args=('thread',)); t.start(); t.join(); subprocess.run(['echo', 'child'])"` }, ctx())).output)
      .toBe('thread\nchild\n[exit code 0]')
  })

  it('no kernel keyring: keyctl and add_key fail', async () => {
    expect(await attack(['keyctl', 'add_key'])).toEqual({ keyctl: 'EPERM', add_key: 'EPERM' })
  })

  it('no mounts, through the old or the new mount API', async () => {
    expect(await attack(['mount', 'fsopen', 'open_tree'])).toEqual({ mount: 'EPERM', fsopen: 'ENOSYS', open_tree: 'ENOSYS' })
  })

  it('no Unix socket reaches a listener on the host; socketpair and the private loopback still work', async () => {
    const sock = path.join(root, 'host.sock')
    let connections = 0
    const server = net.createServer(s => { connections++; s.destroy() })
    await new Promise<void>(resolve => server.listen(sock, resolve))
    try {
      expect(await attack(['unix-connect'], sock)).toEqual({ 'unix-connect': 'EPERM' })
      expect(await attack(['socketpair', 'inet', 'vsock', 'alg'])).toEqual({ socketpair: 'OK', inet: 'OK', vsock: 'EAFNOSUPPORT', alg: 'EAFNOSUPPORT' })
      expect(connections).toBe(0)
    } finally {
      await new Promise(resolve => server.close(resolve))
    }
  })

  it('bwrap\'s init (pid 1) cannot be traced or written; the call\'s own processes can be traced', async () => {
    const a = await attack(['ptrace-init', 'ptrace-init-high', 'init-mem'])
    expect(a).toMatchObject({ 'ptrace-init': 'EPERM', 'ptrace-init-high': 'EPERM' })
    expect(a['init-mem']).not.toBe('OK')
    if (fs.existsSync('/usr/bin/strace')) {
      expect((await bash.run({ command: 'strace -f -qq -e trace=none echo traced' }, ctx())).output).toBe('traced\n[exit code 0]')
    }
  })

  it('no switching ASLR off, no io_uring, no userfaultfd', async () => {
    expect(await attack(['personality-norandom', 'personality-query', 'io_uring', 'userfaultfd'])).toEqual({
      'personality-norandom': 'EPERM', 'personality-query': 'OK', io_uring: 'ENOSYS', userfaultfd: 'EPERM'
    })
    expect((await bash.run({ command: 'setarch -R true' }, ctx())).output).toMatch(/Operation not permitted/)
  })

  it.skipIf(process.arch !== 'x64')('another ABI\'s system calls (i386 int 0x80, x32) kill the process', async () => {
    // Some kernels (a VM without 32-bit entry points) fault on int 0x80 before any filter sees it:
    // there the same call outside the sandbox dies of SIGSEGV too, and nothing can get through.
    const host = spawnSync(PYTHON, [ATTACKS, 'int80'], { encoding: 'utf8' })
    const int80 = host.status === 0 ? 'KILLED(159)' : `KILLED(${128 + 11})`
    if (host.status !== 0) expect(host.signal).toBe('SIGSEGV')
    // 128 + SIGSYS
    expect(await attack(['int80', 'x32'])).toEqual({ int80, x32: 'KILLED(159)' })
  })
})
