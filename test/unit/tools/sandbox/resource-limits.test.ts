import { describe, expect, it } from 'vitest'
import { kernelCountsNprocPerNamespace, LAUNCHER_SCRIPT, launcherArgv, parseCgroupMounts, parseProcCgroup, v1Dir } from '../../../../src/main/tools/sandbox/resource-cgroups'
import {
  defaultResourceLimits, enforcementWarnings, GiB, limitNotes, MiB, parseProcLimits, resolveResourceLimits, ResourceLimitsError, ulimitPrefix, type LimitEnforcement
} from '../../../../src/main/tools/sandbox/resource-limits'

describe('resource limits', () => {
  it('defaults to 512 tasks, 4 GiB or half the memory, sized tmpfs mounts', () => {
    expect(defaultResourceLimits(24 * GiB)).toEqual({ processes: 512, memoryBytes: 4 * GiB, tmpBytes: 1 * GiB, shmBytes: 256 * MiB, runBytes: 16 * MiB })
    expect(defaultResourceLimits(4 * GiB).memoryBytes).toBe(2 * GiB)
    expect(resolveResourceLimits({ processes: 64, cpuTimeMs: 1500 }, 24 * GiB)).toMatchObject({ processes: 64, cpuTimeMs: 1500, memoryBytes: 4 * GiB })
  })

  it('refuses bad values, saying which', () => {
    expect(() => resolveResourceLimits({ processes: 0 })).toThrow(/processes must be a positive whole number, not 0/)
    expect(() => resolveResourceLimits({ memoryBytes: 1.5 })).toThrow(ResourceLimitsError)
    expect(() => resolveResourceLimits({ tmpBytes: 'big' as unknown as number })).toThrow(/tmpBytes/)
    expect(() => resolveResourceLimits({ processes: 4 })).toThrow(/at least 8/)
    expect(() => resolveResourceLimits({ memoryBytes: MiB })).toThrow(/at least 32 MiB/)
    expect(() => resolveResourceLimits({ nice: 3 } as never)).toThrow(/unknown resource limit nice/)
  })

  const cg: LimitEnforcement = { nprocRlimit: false, cgroup: { version: 1, pids: true, memory: true, cpuAccounting: true } }
  it('writes one ulimit line: tasks and CPU hard, CPU soft a second earlier, data only without a memory cgroup', () => {
    const l = resolveResourceLimits({}, 24 * GiB)
    expect(ulimitPrefix(l, 120_000, cg)).toBe('ulimit -u 512 -t 121 && ulimit -S -t 120 || exit 125; ')
    expect(ulimitPrefix(l, 1500, { nprocRlimit: true })).toBe(`ulimit -u 512 -t 3 -d ${4 * 1024 * 1024} && ulimit -S -t 2 || exit 125; `)
    // never above what the sandbox inherits (raising a hard limit would fail the command)
    expect(ulimitPrefix(l, 120_000, { ...cg, inherited: { processes: 100, cpuSeconds: 60 } })).toBe('ulimit -u 100 -t 60 && ulimit -S -t 59 || exit 125; ')
    expect(ulimitPrefix(l, 120_000, cg)).not.toContain('\n')
  })

  it('reads the inherited hard limits from /proc/self/limits', () => {
    const text = [
      'Limit                     Soft Limit           Hard Limit           Units',
      'Max cpu time              unlimited            unlimited            seconds',
      'Max data size             unlimited            8589934592           bytes',
      'Max processes             96363                96363                processes'
    ].join('\n')
    expect(parseProcLimits(text)).toEqual({ processes: 96363, dataBytes: 8589934592 })
  })

  it('says what cannot be enforced, and why', () => {
    const none = { nprocRlimit: false, cgroupProblem: 'cgroup v1: pids: EACCES' }
    const root = enforcementWarnings(none, 0).join('\n')
    expect(root).toMatch(/cannot limit the number of processes here: Arbor runs as root.*\(cgroup v1: pids: EACCES\)/)
    expect(root).toMatch(/limits memory per process only/)
    expect(root).toMatch(/CPU time per process/)
    const user = enforcementWarnings({ nprocRlimit: true, cgroupProblem: 'cgroup v2: systemd-run exited with 1' }, 1000).join('\n')
    expect(user).not.toMatch(/number of processes/)
    expect(user).toMatch(/systemd user session with cgroup delegation/)
    expect(enforcementWarnings(cg, 0)).toEqual([])
    expect(enforcementWarnings({ nprocRlimit: false }, 1000).join('\n')).toMatch(/before 5\.14/)
  })

  it('words the limits a call ran into', () => {
    const l = resolveResourceLimits({ processes: 64, memoryBytes: 256 * MiB }, 24 * GiB)
    expect(limitNotes(l, { pidsMax: 12, oomKills: 1 }, 137, 1000)).toEqual([
      '[the command reached its limit of 64 processes: 12 process creations were refused (a fork bomb, or too much parallelism)]',
      "[a process was killed for exceeding the command's memory limit of 256 MiB]"
    ])
    expect(limitNotes(l, { oomKills: 3 }, 0, 1000)).toEqual(["[3 processes were killed for exceeding the command's memory limit of 256 MiB]"])
    expect(limitNotes(l, {}, 152, 1500)).toEqual(["[the command's shell ran out of CPU time: SIGXCPU at the per-process limit of 2 s]"])
    expect(limitNotes(l, { pidsMax: 0, oomKills: 0, memoryMax: 5 }, 0, 1000)).toEqual([])
  })
})

describe('cgroup discovery', () => {
  const mountinfo = [
    '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
    '33 31 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct',
    '35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
    '39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
    '41 31 0:38 / /sys/fs/cgroup/un\\040ified rw,relatime - cgroup2 cgroup2 rw'
  ].join('\n')
  const own = '8:pids:/user/x\n4:memory:/docker/abc/sub\n2:cpu,cpuacct:/\n0::/init.scope\n'

  it('parses mountinfo and /proc/self/cgroup', () => {
    const m = parseCgroupMounts(mountinfo)
    expect(m.map(x => [x.mountPoint, x.fstype, x.root])).toEqual([
      ['/sys/fs/cgroup/cpu,cpuacct', 'cgroup', '/'], ['/sys/fs/cgroup/memory', 'cgroup', '/docker/abc'],
      ['/sys/fs/cgroup/pids', 'cgroup', '/'], ['/sys/fs/cgroup/un ified', 'cgroup2', '/']
    ])
    expect(parseProcCgroup(own)).toEqual([
      { id: '8', controllers: ['pids'], path: '/user/x' }, { id: '4', controllers: ['memory'], path: '/docker/abc/sub' },
      { id: '2', controllers: ['cpu', 'cpuacct'], path: '/' }, { id: '0', controllers: [], path: '/init.scope' }
    ])
  })

  it('finds our own directory in each v1 hierarchy, inside a container\'s mount root too', () => {
    const m = parseCgroupMounts(mountinfo)
    const o = parseProcCgroup(own)
    expect(v1Dir('pids', m, o)).toBe('/sys/fs/cgroup/pids/user/x')
    expect(v1Dir('memory', m, o)).toBe('/sys/fs/cgroup/memory/sub')
    expect(v1Dir('cpuacct', m, o)).toBe('/sys/fs/cgroup/cpu,cpuacct')
    expect(v1Dir('blkio', m, o)).toBeUndefined()
    expect(v1Dir('memory', m, parseProcCgroup('4:memory:/elsewhere\n'))).toBeUndefined()
  })

  it('knows when RLIMIT_NPROC counts per user namespace', () => {
    expect(kernelCountsNprocPerNamespace('6.1.0-28-amd64')).toBe(true)
    expect(kernelCountsNprocPerNamespace('5.14.0-427.el9.x86_64')).toBe(true)
    expect(kernelCountsNprocPerNamespace('5.10.0-30-amd64')).toBe(false)
    expect(kernelCountsNprocPerNamespace('4.19.0')).toBe(false)
    expect(kernelCountsNprocPerNamespace('weird')).toBe(false)
  })

  it('the launcher moves itself into every cgroup, then becomes the command', () => {
    expect(launcherArgv(['/a/cgroup.procs', '/b/cgroup.procs'], 'bwrap', ['--x', '--'])).toEqual({
      file: '/bin/sh', args: ['-c', LAUNCHER_SCRIPT, 'arbor-sandbox', '/a/cgroup.procs', '/b/cgroup.procs', '--', 'bwrap', '--x', '--']
    })
  })
})
