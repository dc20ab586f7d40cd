import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  classifyBwrapFailure, clearSandboxProbeCache, compareVersions, parseBwrapVersion, probeSandbox, sandboxProbe
} from '../../../../src/main/tools/sandbox/sandbox-probe'

describe('sandbox probe', () => {
  it('parses and compares versions', () => {
    expect(parseBwrapVersion('bubblewrap 0.8.0\n')).toBe('0.8.0')
    expect(compareVersions('0.8.0', '0.12.0')).toBe(-1)
    expect(compareVersions('0.12', '0.12.0')).toBe(0)
    expect(compareVersions('0.12.1', '0.12.0')).toBe(1)
  })

  it('says how to install bwrap when it is missing', async () => {
    const r = await probeSandbox({ bwrapPath: '/nonexistent/bwrap' })
    expect(r).toMatchObject({ ok: false, reason: 'missing' })
    if (!r.ok) {
      expect(r.message).toContain('at /nonexistent/bwrap')
      expect(r.message).toContain('apt-get install bubblewrap')
      expect(r.message).toContain('dnf install bubblewrap')
    }
    const onPath = await probeSandbox({ env: { PATH: '/nonexistent' } })
    expect(onPath).toMatchObject({ ok: false, reason: 'missing' })
    if (!onPath.ok) expect(onPath.message).toContain('bwrap was not found on PATH')
  })

  it('explains blocked user namespaces with the setting to change', () => {
    const apparmor = classifyBwrapFailure('bwrap: setting up uid map: Permission denied\n', { apparmorRestrictsUserns: true })
    expect(apparmor.reason).toBe('userns-blocked')
    expect(apparmor.message).toContain('kernel.apparmor_restrict_unprivileged_userns=0')
    expect(apparmor.message).toContain('profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }')
    expect(apparmor.message).toContain('bwrap said: "bwrap: setting up uid map: Permission denied"')
    const clone = classifyBwrapFailure('bwrap: No permissions to creating new namespace', { usernsCloneDisabled: true })
    expect(clone.message).toContain('kernel.unprivileged_userns_clone=1')
    const max = classifyBwrapFailure('bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted', { maxUserNamespacesZero: true })
    expect(max.message).toContain('user.max_user_namespaces')
    const unknown = classifyBwrapFailure('bwrap: setting up uid map: Permission denied', {})
    expect(unknown.message).toMatch(/apparmor_restrict_unprivileged_userns.*unprivileged_userns_clone.*max_user_namespaces/)
  })

  it('says so when a container blocks the namespaces', () => {
    const r = classifyBwrapFailure('bwrap: Creating new namespace failed: Operation not permitted', { container: 'docker', capSysAdmin: false })
    expect(r.reason).toBe('container')
    expect(r.message).toContain('runs in a container (docker)')
    expect(r.message).toContain('no CAP_SYS_ADMIN')
    expect(r.message).toContain('seccomp=unconfined')
    expect(classifyBwrapFailure("bwrap: Can't mount proc on /newroot/proc: Operation not permitted", { container: 'kubepods' }).reason).toBe('container')
    expect(classifyBwrapFailure('bwrap: something else entirely', {}).reason).toBe('failed')
  })

  it('caches one probe per bwrap path', async () => {
    clearSandboxProbeCache()
    const a = sandboxProbe({ bwrapPath: '/nonexistent/bwrap2' })
    expect(sandboxProbe({ bwrapPath: '/nonexistent/bwrap2' })).toBe(a)
    await a
    clearSandboxProbeCache()
    expect(sandboxProbe({ bwrapPath: '/nonexistent/bwrap2' })).not.toBe(a)
  })

  it('passes on this machine when bwrap works, and warns below 0.12', async () => {
    const r = await probeSandbox()
    if (!r.ok && r.reason === 'missing') return // bwrap absent: covered above
    expect(r.ok).toBe(true)
    if (r.ok && r.version !== undefined && compareVersions(r.version, '0.12.0') < 0) {
      expect(r.warnings.join(' ')).toContain('GHSA-pxhw-h44j-8pfx')
    }
  })

  it('runs without what bwrap refuses (the filter, tmpfs sizes) and says so', async () => {
    const r0 = await probeSandbox({ cgroups: false })
    if (!r0.ok) return // no working bwrap here: covered above
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbor-fake-bwrap-'))
    const fake = path.join(dir, 'bwrap')
    // a bwrap that knows neither --add-seccomp-fd nor --size, like an old or setuid one
    fs.writeFileSync(fake, `#!/bin/sh\nfor a do case "$a" in --add-seccomp-fd|--size) echo "bwrap: Unknown option $a" >&2; exit 1;; esac; done\nexec ${r0.bwrapPath} "$@"\n`, { mode: 0o755 })
    try {
      const r = await probeSandbox({ bwrapPath: fake, cgroups: false })
      expect(r.ok).toBe(true)
      if (r.ok) {
        expect(r.seccomp).toBeUndefined()
        expect(r.tmpfsSizes).toBe(false)
        expect(r.warnings.join('\n')).toMatch(/refused the seccomp filter \(bwrap: Unknown option --add-seccomp-fd\)/)
        expect(r.warnings.join('\n')).toMatch(/refused sizes for its tmpfs mounts/)
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('has the filter and sized mounts on this machine, and a per-call cgroup where root can make one', async () => {
    const r = await probeSandbox()
    if (!r.ok) return
    if (process.arch === 'x64' || process.arch === 'arm64') expect(r.seccomp).toBeInstanceOf(Buffer)
    expect(r.tmpfsSizes).toBe(true)
    if (process.getuid?.() === 0 && fs.existsSync('/sys/fs/cgroup/pids/cgroup.procs')) expect(r.limits.cgroup).toMatchObject({ version: 1, pids: true })
  })
})

