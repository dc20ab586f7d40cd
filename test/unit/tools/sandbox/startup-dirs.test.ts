import fs from 'node:fs/promises'
import path from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { SandboxPolicyError, sandboxCwd } from '../../../../src/main/tools/sandbox/bwrap-args'
import {
  homeStartupDirs, machineAccounts, parsePasswd, resolveStartupDirs, startupRefusal, startupRefusalMessage, type HostHomes, type StartupDir
} from '../../../../src/main/tools/sandbox/startup-dirs'
import { fakeFs } from '../../../fixtures/tools/fake-fs'
import { tempDirs } from '../../../helpers/temp-dir'

const dirs = tempDirs('arbor-startup-')
afterAll(() => dirs.cleanup())

const fsx = fakeFs({
  '/home/u/proj/src': 'dir',
  '/home/u/.config/nvim': 'dir',
  '/home/u/.config/autostart/x': 'dir',
  '/home/u/.local/bin/sub': 'dir',
  '/home/u/dotfiles/cfg': 'dir',
  '/home/v/.config': '->/home/u/dotfiles/cfg', // another user's ~/.config, a link into a directory of u's
  '/home/v/work': 'dir',
  '/srv/svc/.config': 'dir',
  '/srv/svc/data': 'dir',
  '/etc/xdg/autostart': 'dir',
  '/work/x': 'dir'
})
const homes = (over: Partial<HostHomes> = {}): HostHomes => ({ yours: ['/home/u'], xdgConfig: [], others: [], ...over })
const cwdOf = (cwd: string, h: HostHomes): string => sandboxCwd({ enabled: true, cwd, hidden: [] }, [], fsx, '/home/u', h)

describe('start-up directories', () => {
  it('refuses a working directory that is, contains or lies in what the host runs, with what to do instead', () => {
    const h = homes({ others: [{ name: 'svc', home: '/srv/svc' }] })
    const refusals: Array<[string, RegExp]> = [
      ['/home/u', /is your home directory; tools could change your shell start-up files there\. Choose a project directory inside it instead/],
      ['/home', /is a parent of your home directory \/home\/u/],
      ['/home/u/.config', /^the working directory \/home\/u\/\.config holds your programs' settings and start-up files, which run outside the sandbox; choose a project directory instead$/],
      ['/home/u/.config/autostart/x', /is inside \/home\/u\/\.config\/autostart, which holds programs started at your login, outside the sandbox; choose a project directory instead/],
      ['/home/u/.local', /contains \/home\/u\/\.local\/share\/systemd, which holds your systemd services, which run outside the sandbox/],
      ['/home/u/.local/bin', /holds commands found on your PATH before the system's, which run outside the sandbox/],
      ['/home/u/.local/bin/sub', /is inside \/home\/u\/\.local\/bin/],
      ['/etc', /holds the system's settings and start-up files/],
      ['/etc/xdg/autostart', /holds programs started at every user's login/],
      ['/srv', /contains \/srv\/svc, the home directory of the account svc; tools could change its shell start-up files there/],
      ['/srv/svc', /is the home directory of the account svc/],
      ['/srv/svc/.config', /holds the account svc's programs' settings and start-up files/]
    ]
    for (const [cwd, why] of refusals) {
      expect(() => cwdOf(cwd, h), cwd).toThrow(SandboxPolicyError)
      expect(() => cwdOf(cwd, h), cwd).toThrow(why)
    }
    for (const cwd of ['/home/u/proj', '/home/u/proj/src', '/home/u/.config/nvim', '/srv/svc/data', '/work/x']) expect(cwdOf(cwd, h)).toBe(cwd)
  })

  it('resolves every directory canonically: a symlinked ~/.config is protected where it leads', () => {
    const h = homes({ others: [{ name: 'v', home: '/home/v' }] })
    expect(() => cwdOf('/home/u/dotfiles/cfg', h)).toThrow(/holds the account v's programs' settings/)
    expect(() => cwdOf('/home/u/dotfiles', h)).toThrow(/contains \/home\/u\/dotfiles\/cfg, which holds the account v's programs' settings/)
    expect(cwdOf('/home/v/work', h)).toBe('/home/v/work')
  })

  it('takes $XDG_CONFIG_HOME as a config directory besides ~/.config', () => {
    expect(cwdOf('/work/x', homes())).toBe('/work/x')
    expect(() => cwdOf('/work/x', homes({ xdgConfig: ['/work/x'] }))).toThrow(/holds your programs' settings/)
    expect(() => cwdOf('/work', homes({ xdgConfig: ['/work/x'] }))).toThrow(/contains \/work\/x, which holds your programs' settings/)
  })

  it('skips other accounts whose home is missing or the root, and says this user\'s home as theirs', () => {
    const dirsFor = (others: HostHomes['others']): StartupDir[] => resolveStartupDirs(homes({ others }), fsx)
    const base = dirsFor([]).length
    expect(dirsFor([{ name: 'gone', home: '/nope' }, { name: 'sys', home: '/' }, { name: 'me', home: '/home/u' }])).toHaveLength(base)
    expect(dirsFor([{ name: 'svc', home: '/srv/svc' }]).filter(d => d.account === 'svc').map(d => d.path)).toEqual(homeStartupDirs('/srv/svc', []).map(d => d.path))
    expect(() => cwdOf('/home/u', homes({ others: [{ name: 'me', home: '/home/u' }] }))).toThrow(/your home directory/)
  })

  it('a directory is refused exactly when it is or contains a protected one, or lies in one whose files all run (property)', () => {
    const seg = fc.constantFrom('a', 'b', '.config', 'bin')
    const absPath = fc.array(seg, { minLength: 1, maxLength: 4 }).map(s => '/' + s.join('/'))
    const dir = fc.record({ path: absPath, inside: fc.boolean(), kind: fc.constantFrom('config', 'bin', 'home') as fc.Arbitrary<StartupDir['kind']> })
    // the oracle compares components, not strings
    const parts = (p: string): string[] => p.split('/').filter(Boolean)
    const prefix = (a: string[], b: string[]): boolean => a.length <= b.length && a.every((x, i) => b[i] === x)
    fc.assert(fc.property(absPath, fc.array(dir, { maxLength: 6 }), (cwd, ds) => {
      const r = startupRefusal(cwd, ds)
      const expected = ds.some(d => prefix(parts(cwd), parts(d.path)) || (d.inside && prefix(parts(d.path), parts(cwd))))
      expect(r !== undefined).toBe(expected)
      if (r === undefined) return
      const c = parts(cwd)
      const p = parts(r.dir.path)
      if (r.relation === 'is') expect(r.dir.path).toBe(cwd)
      if (r.relation === 'contains') expect(prefix(c, p) && c.length < p.length).toBe(true)
      if (r.relation === 'inside') expect(r.dir.inside && prefix(p, c) && p.length < c.length).toBe(true)
      // the same protected directory refuses every parent of a directory that contains it
      if (r.relation !== 'inside' && cwd.lastIndexOf('/') > 0) expect(startupRefusal(path.dirname(cwd), ds)).toBeDefined()
      expect(startupRefusalMessage(cwd, r)).toMatch(/^the working directory .*(Choose|choose) a project directory/)
    }))
  })

  it('reads the accounts from passwd(5) text: usable homes only, malformed lines skipped (property)', () => {
    expect(parsePasswd([
      'root:x:0:0:root:/root:/bin/bash',
      '# comment:x:1:1::/c:/bin/sh',
      'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
      'sysd:x:998:998::/:/usr/sbin/nologin',
      'rel:x:5:5::relative/home:/bin/sh',
      'short:x:1',
      ':x:7:7::/nameless:/bin/sh',
      'alice:x:1000:1000:Alice,,,:/home/alice/:/bin/bash\r'
    ].join('\n'))).toEqual([{ name: 'root', home: '/root' }, { name: 'alice', home: '/home/alice' }])

    const name = fc.stringMatching(/^[a-z_][a-z0-9_-]{0,15}$/)
    const home = fc.array(fc.stringMatching(/^[a-z0-9._-]{1,8}$/).filter(s => s !== '.' && s !== '..'), { minLength: 1, maxLength: 4 }).map(s => '/' + s.join('/'))
    const junk = fc.constantFrom('', '#x:x:1:1::/h:/bin/sh', 'a:b', 'n:x:1:1::/:/bin/sh', 'n:x:1:1::/nonexistent:/bin/sh', 'n:x:1:1::rel:/bin/sh')
    fc.assert(fc.property(fc.array(fc.oneof(fc.record({ name, home }), junk), { maxLength: 20 }), lines => {
      const text = lines.map(l => typeof l === 'string' ? l : `${l.name}:x:1000:1000:gecos:${l.home}:/bin/sh`).join('\n')
      expect(parsePasswd(text)).toEqual(lines.filter((l): l is { name: string; home: string } => typeof l !== 'string'))
    }))
  })

  it('reads the machine\'s accounts at most once a second, and none from a file it cannot read', async () => {
    const d = await dirs.make()
    const file = path.join(d, 'passwd')
    await fs.writeFile(file, 'a:x:1:1::/home/a:/bin/sh\n')
    const t = 1_000_000
    expect(machineAccounts(file, t)).toEqual([{ name: 'a', home: '/home/a' }])
    await fs.writeFile(file, 'b:x:1:1::/home/b:/bin/sh\n')
    expect(machineAccounts(file, t + 1000)).toEqual([{ name: 'a', home: '/home/a' }])
    expect(machineAccounts(file, t + 1001)).toEqual([{ name: 'b', home: '/home/b' }])
    expect(machineAccounts(path.join(d, 'missing'), t)).toEqual([])
    expect(machineAccounts('/etc/passwd').length).toBeGreaterThan(0)
  })
})
