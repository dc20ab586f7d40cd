import { describe, expect, it } from 'vitest'
import { discoverRepo, gitWriteRefusal, planGitProtection, readConfigChain } from '../../../../src/main/tools/sandbox/git-guard'
import { fakeFs } from '../../../fixtures/tools/fake-fs'

const HOME = '/home/u'
/** a repository's git directory: HEAD, objects, refs (+ hooks with a sample, info, config) */
function repo (dir: string, config = '[core]\n\tbare = false\n'): Record<string, 'dir' | 'file'> {
  return { [`${dir}/HEAD`]: 'file', [`${dir}/objects`]: 'dir', [`${dir}/refs`]: 'dir', [`${dir}/hooks/pre-commit.sample`]: 'file', [`${dir}/info/exclude`]: 'file', ...(config === '' ? {} : { [`${dir}/config`]: 'file' }) }
}

describe('the git plan (what is mounted before a call)', () => {
  it('pins the repository of the working directory and makes its control files read-only', () => {
    const probe = fakeFs({ ...repo('/p/.git'), '/p/src/a.ts': 'file' }, { '/p/.git/config': '[core]\n\tbare = false\n' })
    const plan = planGitProtection('/p', { home: HOME, probe })
    expect(plan.repo).toEqual({ gitDir: '/p/.git', commonDir: '/p/.git', worktree: '/p' })
    expect(plan.pin).toEqual(['/p/.git'])
    expect(plan.readOnly).toEqual(['/p/.git/config', '/p/.git/hooks', '/p/.git/info'])
    expect(plan.watch).toEqual([])
    expect(plan.problems).toEqual([])
  })

  it('covers submodules (modules/**, nested names too) and linked worktrees', () => {
    const probe = fakeFs({
      ...repo('/p/.git'), ...repo('/p/.git/modules/a'), ...repo('/p/.git/modules/lib/b'), ...repo('/p/.git/modules/a/modules/c'),
      '/p/.git/worktrees/wt/HEAD': 'file', '/p/.git/worktrees/wt/commondir': 'file', '/p/.git/worktrees/wt/config.worktree': 'file'
    }, { '/p/.git/worktrees/wt/commondir': '../..\n' })
    const plan = planGitProtection('/p', { home: HOME, probe })
    expect(plan.pin).toEqual(['/p/.git', '/p/.git/modules/a', '/p/.git/modules/a/modules/c', '/p/.git/modules/lib/b', '/p/.git/worktrees/wt'])
    expect(plan.readOnly).toEqual(expect.arrayContaining(['/p/.git/modules/a/hooks', '/p/.git/modules/a/config', '/p/.git/modules/lib/b/config',
      '/p/.git/modules/a/modules/c/hooks', '/p/.git/worktrees/wt/commondir', '/p/.git/worktrees/wt/config.worktree']))
    const few = planGitProtection('/p', { home: HOME, probe, maxGitDirs: 2 })
    expect(few.pin).toHaveLength(2)
    expect(few.problems.join()).toMatch(/only 2 of the repository's git directories/)
  })

  it('a working directory inside a repository: nothing of the repository is inside, but its core.hooksPath may be', () => {
    const probe = fakeFs({ ...repo('/r/.git'), '/r/sub/hooks/pre-commit': 'file', '/r/sub/x': 'file' },
      { '/r/.git/config': '[core]\n\thooksPath = sub/hooks\n[include]\n\tpath = ../sub/local.cfg\n' })
    const plan = planGitProtection('/r/sub', { home: HOME, probe })
    expect(plan.repo?.gitDir).toBe('/r/.git')
    expect(plan.pin).toEqual([])
    expect(plan.readOnly).toEqual(['/r/sub/hooks'])
    expect(plan.watch).toEqual([{ path: '/r/sub/local.cfg', kind: 'config' }]) // an include that does not exist yet
  })

  it('core.hooksPath: relative to the worktree, absolute, ~/, from the user\'s config too; missing ones are watched', () => {
    const probe = fakeFs({ ...repo('/p/.git'), '/p/.githooks/pre-push': 'file', '/p/tools/h/x': 'file' }, {
      '/p/.git/config': '[core]\n\thooksPath = .githooks\n[core]\n\thookspath = /p/tools/h\n[includeIf "onbranch:x"]\n\tpath = /p/inc.cfg\n',
      '/p/inc.cfg': '[core]\n\thooksPath = ~/myhooks\n',
      '/home/u/.gitconfig': '[core]\n\thooksPath = .husky\n'
    })
    const plan = planGitProtection('/p', { home: HOME, probe })
    expect(plan.readOnly).toEqual(expect.arrayContaining(['/p/.githooks', '/p/tools/h', '/p/inc.cfg']))
    expect(plan.watch).toEqual([{ path: '/p/.husky', kind: 'hooks' }])
    expect(plan.userHooksPaths).toEqual(['.husky'])
  })

  it('a hook that is a symlink into the working tree makes its target read-only', () => {
    const probe = fakeFs({ ...repo('/p/.git'), '/p/.git/hooks/pre-commit': '->../../scripts/pc', '/p/scripts/pc': 'file', '/p/.git/hooks/x': '->/usr/bin/true' })
    expect(planGitProtection('/p', { home: HOME, probe }).readOnly).toEqual(expect.arrayContaining(['/p/scripts/pc', '/p/.git/hooks']))
    expect(planGitProtection('/p', { home: HOME, probe }).readOnly).not.toContain('/usr/bin/true')
  })

  it('a .git file: itself read-only, and what it points at when that is inside', () => {
    const inside = fakeFs({ ...repo('/p/gd'), '/p/.git': 'file' }, { '/p/.git': 'gitdir: gd\n' })
    const plan = planGitProtection('/p', { home: HOME, probe: inside })
    expect(plan.repo).toEqual({ gitDir: '/p/gd', commonDir: '/p/gd', worktree: '/p', gitfile: '/p/.git' })
    expect(plan.pin).toEqual(['/p/gd'])
    expect(plan.readOnly).toEqual(expect.arrayContaining(['/p/.git', '/p/gd/hooks']))
    const outside = fakeFs({ ...repo('/main/.git/worktrees/w'), '/main/.git/worktrees/w/commondir': 'file', ...repo('/main/.git'), '/p/.git': 'file' },
      { '/p/.git': 'gitdir: /main/.git/worktrees/w', '/main/.git/worktrees/w/commondir': '../..' })
    const p2 = planGitProtection('/p', { home: HOME, probe: outside })
    expect(p2.repo?.commonDir).toBe('/main/.git')
    expect(p2.pin).toEqual([])
    expect(p2.readOnly).toEqual(['/p/.git'])
  })

  it('a .git directory that is not a repository yet is protected all the same', () => {
    const plan = planGitProtection('/p', { home: HOME, probe: fakeFs({ '/p/.git/hooks': 'dir' }) })
    expect(plan.pin).toEqual(['/p/.git'])
    expect(plan.readOnly).toEqual(['/p/.git/hooks'])
  })

  it('a working directory that is a bare repository: its control files are read-only', () => {
    const plan = planGitProtection('/srv/x.git', { home: HOME, probe: fakeFs(repo('/srv/x.git')) })
    expect(plan.pin).toEqual([])
    expect(plan.readOnly).toEqual(['/srv/x.git/config', '/srv/x.git/hooks', '/srv/x.git/info'])
  })

  it('no repository: nothing to mount', () => {
    const plan = planGitProtection('/p', { home: HOME, probe: fakeFs({ '/p/a': 'file' }) })
    expect(plan).toMatchObject({ pin: [], readOnly: [], watch: [], problems: [] })
    expect(plan.repo).toBeUndefined()
  })

  it('says which config it could not read, and nothing of what it holds (the words go to the model)', () => {
    const plan = planGitProtection('/p', { home: HOME, probe: fakeFs(repo('/p/.git'), { '/p/.git/config': '[core\n' }) })
    expect(plan.problems).toEqual(['/p/.git/config is not git config that this check can read'])
    // a config that is a link to a secret, read as git reads it
    const secret = planGitProtection('/p', { home: HOME, probe: fakeFs(repo('/p/.git'), { '/p/.git/config': '[default]\naws_access_key_id = AKIASECRET\n' }) })
    expect(secret.problems).toEqual(['/p/.git/config is not git config that this check can read'])
    expect(secret.problems.join()).not.toMatch(/aws|AKIA/i)
  })

  it('finds a bare repository as git does, and stops at the first repository up the tree', () => {
    const probe = fakeFs({ ...repo('/srv/x.git'), ...repo('/a/.git'), ...repo('/a/b/.git'), '/a/b/c/d': 'dir' })
    expect(discoverRepo('/srv/x.git', probe)).toEqual({ gitDir: '/srv/x.git', commonDir: '/srv/x.git' })
    expect(discoverRepo('/a/b/c/d', probe)?.gitDir).toBe('/a/b/.git')
    expect(discoverRepo('/elsewhere', probe)).toBeUndefined()
  })

  it('follows includes relative to the including file, bounded, without looping', () => {
    const probe = fakeFs({}, { '/c/a': '[include]\npath = b\n', '/c/b': '[include]\npath = /c/a\n[core]\nhooksPath = h\n' })
    const chain = readConfigChain(['/c/a'], HOME, probe)
    expect(chain.files).toEqual(['/c/a', '/c/b'])
    expect(chain.entries.map(e => `${e.section}.${e.name}`)).toEqual(['include.path', 'include.path', 'core.hookspath'])
  })
})

describe('what the file tools may not write (they write on the host; nothing checks after them)', () => {
  const probe = fakeFs({ ...repo('/p/.git'), ...repo('/p/x.git', ''), '/p/bare/HEAD': 'file', '/p/bare/objects': 'dir', '/p/half/objects': 'dir', '/p/half/refs': 'dir', '/p/src/a.ts': 'file' },
    { '/p/.git/config': '[core]\nhooksPath = .githooks\n' })
  const plan = planGitProtection('/p', { home: HOME, probe })
  const refused = (rel: string): string | undefined => gitWriteRefusal(`/p/${rel}`, '/p', plan, probe)
  it('refuses .git anywhere, hooks directories the config names, and what is or would become a repository', () => {
    expect(refused('.git/config.worktree')).toBe('.git')
    expect(refused('sub/.git')).toBe('.git')
    expect(refused('a/b/.git/hooks/pre-commit')).toBe('.git')
    expect(refused('.githooks/pre-commit')).toBe('.githooks')
    expect(refused('bare/refs/x')).toBe('bare') // HEAD + objects: refs would make it a repository
    expect(refused('x.git/config')).toBe('x.git')
    expect(refused('x.git/hooks/pre-receive')).toBe('x.git')
    expect(refused('bare/config')).toBeUndefined() // HEAD + objects, no refs: not a repository, and config does not make it one
    expect(refused('half/HEAD')).toBe('half')
    expect(refused('src/a.ts')).toBeUndefined()
    expect(refused('src/hooks/useThing.ts')).toBeUndefined()
    expect(refused('half/notes.txt')).toBeUndefined()
  })
})
