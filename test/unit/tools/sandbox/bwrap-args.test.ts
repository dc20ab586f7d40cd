import { describe, expect, it } from 'vitest'
import {
  allHidden, buildBwrapArgs, defaultHiddenPaths, hiddenAncestors, hiddenMounts, isSecretEnvName, SandboxPolicyError, sandboxEnv
} from '../../../../src/main/tools/sandbox/bwrap-args'
import { canonicalPath } from '../../../../src/main/tools/sandbox/hidden-paths'
import { fakeFs } from '../../../fixtures/tools/fake-fs'

const HOME = '/home/u'
const fs = fakeFs({
  '/home/u/proj/src/a.ts': 'file',
  '/home/u/proj/.git/hooks': 'dir',
  '/home/u/proj/.git/config': 'file',
  '/home/u/proj/.ssh-like': 'dir',
  '/home/u/.ssh/id_rsa': 'file',
  '/home/u/.netrc': 'file',
  '/home/u/.aws': '->/data/aws', // a symlinked secret dir
  '/data/aws/credentials': 'file',
  '/home/u/.config/Arbor/feeds': 'dir',
  '/home/u/.docker/config.json': '->/data/docker.json',
  '/data/docker.json': 'file',
  '/tmp/work/x': 'file',
  '/tmp/arbor-data/f': 'file',
  '/home/u/link-to-proj': '->/home/u/proj'
})
const policy = { enabled: true, cwd: '/home/u/proj', hidden: [] as string[] }

function pairs (args: string[], flag: string): string[] {
  const out: string[] = []
  args.forEach((a, i) => { if (a === flag) out.push(args[i + 1] ?? '') })
  return out
}

describe('bwrap arguments', () => {
  it('isolates, mounts in the documented order, and ends with bash -c', () => {
    const args = buildBwrapArgs({ policy, command: 'echo hi', env: {}, home: HOME, fs })
    expect(args.slice(0, 12)).toEqual([
      '--die-with-parent', '--new-session', '--unshare-user', '--disable-userns', '--unshare-pid', '--unshare-ipc',
      '--unshare-uts', '--unshare-cgroup-try', '--unshare-net', '--cap-drop', 'ALL', '--ro-bind'
    ])
    const s = args.join(' ')
    expect(s).toContain('--ro-bind / / --tmpfs /tmp --dev /dev --proc /proc --ro-bind /dev/null /proc/1/mem --ro-bind /dev/null /proc/1/task/1/mem ' +
      '--tmpfs /dev/shm --remount-ro /dev --tmpfs /run --bind /home/u/proj /home/u/proj')
    expect(args.slice(-4)).toEqual(['--', 'bash', '-c', 'echo hi'])
    expect(pairs(args, '--chdir')).toEqual(['/home/u/proj'])
    // masks after the cwd bind, chdir after masks
    const bind = args.indexOf('--bind')
    expect(args.indexOf('--tmpfs', bind)).toBeGreaterThan(bind)
    expect(args.indexOf('--chdir')).toBeGreaterThan(args.lastIndexOf('--remount-ro'))
  })

  it('sizes the writable tmpfs mounts and reads the seccomp program from the given fd', () => {
    const args = buildBwrapArgs({ policy, command: 'true', env: {}, home: HOME, fs, tmpfsSizes: { tmp: 1000, shm: 200, run: 30 }, seccompFd: 3 })
    const s = args.join(' ')
    expect(s).toContain('--size 1000 --tmpfs /tmp --dev /dev')
    expect(s).toContain('--size 200 --tmpfs /dev/shm --remount-ro /dev --size 30 --tmpfs /run')
    expect(args.slice(-6)).toEqual(['--add-seccomp-fd', '3', '--', 'bash', '-c', 'true'])
  })

  it('binds a working directory under /tmp after the fresh /tmp', () => {
    const args = buildBwrapArgs({ policy: { ...policy, cwd: '/tmp/work' }, command: 'true', env: {}, home: HOME, fs })
    const tmp = args.indexOf('/tmp')
    expect(args[tmp - 1]).toBe('--tmpfs')
    expect(args.indexOf('--bind')).toBeGreaterThan(tmp)
    expect(pairs(args, '--bind')).toEqual(['/tmp/work'])
  })

  it('hides existing secrets, resolving symlinks, and skips the missing ones', () => {
    const args = buildBwrapArgs({ policy, command: 'true', env: {}, home: HOME, dataDir: '/home/u/.config/Arbor', fs })
    const dirs = pairs(args, '--tmpfs')
    expect(dirs).toEqual(expect.arrayContaining(['/home/u/.ssh', '/data/aws', '/home/u/.config/Arbor']))
    expect(dirs).not.toContain('/home/u/.aws') // bwrap cannot mount onto a symlink
    const files = args.flatMap((a, i) => (a === '--ro-bind' && args[i + 1] === '/dev/null' ? [args[i + 2]] : []))
    expect(files).toEqual(expect.arrayContaining(['/home/u/.netrc', '/data/docker.json']))
    expect(args).not.toContain('/home/u/.kube') // absent: skipped
    expect(args).not.toContain('/home/u/.gnupg')
    for (const d of ['/home/u/.ssh', '/data/aws']) expect(pairs(args, '--remount-ro')).toContain(d)
  })

  it('hides paths from the policy too, and skips hidden paths already under the fresh /tmp', () => {
    const args = buildBwrapArgs({ policy: { ...policy, hidden: ['/home/u/proj/.ssh-like', '/tmp/arbor-data'] }, command: 'true', env: {}, home: HOME, fs })
    expect(pairs(args, '--tmpfs')).toContain('/home/u/proj/.ssh-like')
    expect(args).not.toContain('/tmp/arbor-data')
    // but inside a cwd under /tmp it must be masked
    const inTmp = buildBwrapArgs({ policy: { ...policy, cwd: '/tmp', hidden: ['/tmp/arbor-data'] }, command: 'true', env: {}, home: HOME, fs })
    expect(pairs(inTmp, '--tmpfs')).toContain('/tmp/arbor-data')
  })

  it('keeps git hooks and config in the working directory read-only, and .git itself unrenamable', () => {
    const args = buildBwrapArgs({ policy, command: 'true', env: {}, home: HOME, fs })
    expect(pairs(args, '--ro-bind')).toEqual(expect.arrayContaining(['/home/u/proj/.git/hooks', '/home/u/proj/.git/config']))
    // the cwd, then .git onto itself (a mount point cannot be renamed), then what is read-only inside it
    expect(pairs(args, '--bind')).toEqual(['/home/u/proj', '/home/u/proj/.git'])
    expect(args.indexOf('/home/u/proj/.git/hooks')).toBeGreaterThan(args.lastIndexOf('--bind'))
  })

  it('binds the parents of a hidden path inside the working directory onto themselves (no renaming them away)', () => {
    const f = fakeFs({ '/w/a/b/secrets/key': 'file', '/w/a/token': 'file', '/w/x': 'file' })
    const args = buildBwrapArgs({ policy: { enabled: true, cwd: '/w', hidden: ['/w/a/b/secrets', '/w/a/token'] }, command: 'true', env: {}, home: HOME, fs: f })
    expect(pairs(args, '--bind')).toEqual(['/w', '/w/a', '/w/a/b'])
    expect(args.indexOf('--tmpfs', args.indexOf('/w/a/b'))).toBeGreaterThan(args.lastIndexOf('--bind'))
    expect(hiddenAncestors([{ path: '/w/a/b/s', kind: 'dir' }, { path: '/elsewhere/s', kind: 'dir' }, { path: '/w/t', kind: 'file' }], '/w')).toEqual(['/w/a/b', '/w/a'])
  })

  it('hides the data directories of the other nodes in the registry, and the registry', () => {
    const f = fakeFs({ '/srv/arbor2/feeds': 'dir', '/home/u/proj/x': 'file' }, {
      '/home/u/.config/Arbor/nodes/a.json': JSON.stringify({ dataDir: '/srv/arbor2' }),
      '/home/u/.config/Arbor/nodes/b.json': JSON.stringify({ dataDir: '/srv/gone' }),
      '/home/u/.config/Arbor/nodes/c.json': 'not json'
    })
    const args = buildBwrapArgs({ policy, command: 'true', env: {}, home: HOME, fs: f })
    expect(pairs(args, '--tmpfs')).toEqual(expect.arrayContaining(['/srv/arbor2', '/home/u/.config/Arbor']))
    expect(args).not.toContain('/srv/gone')
    expect(allHidden(policy, HOME, undefined, f)).toEqual(expect.arrayContaining(['/srv/arbor2', '/home/u/.config/Arbor/nodes']))
  })

  it('uses the canonical working directory and refuses one that is hidden, missing or /', () => {
    const args = buildBwrapArgs({ policy: { ...policy, cwd: '/home/u/link-to-proj' }, command: 'true', env: {}, home: HOME, fs })
    expect(pairs(args, '--bind')[0]).toBe('/home/u/proj')
    expect(() => buildBwrapArgs({ policy: { ...policy, cwd: '/home/u/.ssh' }, command: 'true', env: {}, home: HOME, fs }))
      .toThrow(/inside \/home\/u\/\.ssh, which is hidden/)
    expect(() => buildBwrapArgs({ policy: { ...policy, cwd: '/data/aws' }, command: 'true', env: {}, home: HOME, fs }))
      .toThrow(SandboxPolicyError)
    expect(() => buildBwrapArgs({ policy: { ...policy, cwd: '/nope' }, command: 'true', env: {}, home: HOME, fs })).toThrow(/does not exist/)
    expect(() => buildBwrapArgs({ policy: { ...policy, cwd: '/' }, command: 'true', env: {}, home: HOME, fs })).toThrow(/root/)
    expect(() => buildBwrapArgs({ policy, chdir: '/home/u', command: 'true', env: {}, home: HOME, fs })).toThrow(/outside/)
    expect(pairs(buildBwrapArgs({ policy, chdir: '/home/u/proj/src', command: 'true', env: {}, home: HOME, fs }), '--chdir')).toEqual(['/home/u/proj/src'])
  })

  it('clears the environment to an allowlist and unsets secrets', () => {
    const env = { PATH: '/usr/bin', LANG: 'C.UTF-8', TERM: 'xterm', USER: 'u', HOME: '/elsewhere', OPENAI_API_KEY: 'sk-1', GITHUB_TOKEN: 'g', AWS_PROFILE: 'p', SSH_AUTH_SOCK: '/s', EDITOR: 'vi' }
    const args = buildBwrapArgs({ policy, command: 'true', env, home: HOME, fs })
    expect(args).toContain('--clearenv')
    const set = args.flatMap((a, i) => (a === '--setenv' ? [`${args[i + 1]}=${args[i + 2]}`] : []))
    expect(set.sort()).toEqual(['HOME=/home/u', 'LANG=C.UTF-8', 'PATH=/usr/bin', 'TERM=xterm', 'USER=u'])
    expect(pairs(args, '--unsetenv')).toEqual(expect.arrayContaining(['OPENAI_API_KEY', 'GITHUB_TOKEN', 'AWS_PROFILE', 'SSH_AUTH_SOCK', 'DBUS_SESSION_BUS_ADDRESS']))
    expect(args.join(' ')).not.toContain('sk-1')
    expect(sandboxEnv({}, HOME).PATH).toMatch(/\/usr\/bin/)
    for (const n of ['X_KEY', 'NPM_TOKEN', 'AWS_REGION', 'OPENAI_BASE_URL', 'DBUS_SESSION_BUS_ADDRESS']) expect(isSecretEnvName(n)).toBe(true)
    for (const n of ['PATH', 'KEYBOARD', 'TOKENIZER']) expect(isSecretEnvName(n)).toBe(false)
  })

  it('has the default hidden set, /root included', () => {
    const h = defaultHiddenPaths('/home/u', '/var/lib/arbor', ['/srv/arbor2'])
    for (const p of ['/var/lib/arbor', '/srv/arbor2', '/home/u/.ssh', '/home/u/.aws', '/home/u/.gnupg', '/home/u/.config/gcloud', '/home/u/.azure',
      '/home/u/.kube', '/home/u/.docker/config.json', '/home/u/.netrc', '/home/u/.npmrc', '/home/u/.pypirc', '/home/u/.git-credentials',
      '/home/u/.config/Arbor', '/root/.ssh', '/root/.config/Arbor']) expect(h).toContain(p)
    expect(defaultHiddenPaths('/root').filter(p => p === '/root/.ssh')).toHaveLength(1)
  })

  it('drops masks inside masked directories', () => {
    const m = hiddenMounts(['/home/u/.ssh', '/home/u/.ssh/id_rsa', '/home/u/.netrc'], '/home/u/proj', fs)
    expect(m).toEqual([{ path: '/home/u/.netrc', kind: 'file' }, { path: '/home/u/.ssh', kind: 'dir' }])
  })

  it('resolves paths the way the kernel will, dangling links included', () => {
    const f = fakeFs({ '/w/out': '->/etc/new', '/w/d': '->/etc', '/etc/passwd': 'file' })
    expect(canonicalPath('/w/out', f)).toBe('/etc/new')
    expect(canonicalPath('/w/d/new/file', f)).toBe('/etc/new/file')
    expect(canonicalPath('/w/x/../d/passwd', f)).toBe('/etc/passwd')
  })
})
