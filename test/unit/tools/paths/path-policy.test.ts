import fs from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveToolPath, type PathCheck } from '../../../../src/main/tools/paths/path-policy'
import { tempDirs } from '../../../helpers/temp-dir'

const dirs = tempDirs('arbor-pathpol-')
let root: string
let home: string
let proj: string
let outside: string

beforeAll(async () => {
  root = await fs.realpath(await dirs.make())
  home = path.join(root, 'home')
  proj = path.join(root, 'proj')
  outside = path.join(root, 'outside')
  await fs.mkdir(path.join(home, '.ssh'), { recursive: true })
  await fs.writeFile(path.join(home, '.ssh', 'id_rsa'), 'PRIVATE')
  await fs.mkdir(path.join(proj, 'src'), { recursive: true })
  await fs.mkdir(path.join(proj, '.git', 'hooks'), { recursive: true })
  await fs.writeFile(path.join(proj, 'src', 'a.ts'), 'a')
  await fs.mkdir(outside)
  await fs.writeFile(path.join(outside, 'secret.txt'), 'S')
  await fs.symlink(path.join(outside, 'secret.txt'), path.join(proj, 'out-file'))
  await fs.symlink(outside, path.join(proj, 'out-dir'))
  await fs.symlink(path.join(outside, 'new.txt'), path.join(proj, 'dangling'))
  await fs.symlink(path.join(home, '.ssh'), path.join(proj, 'ssh'))
  await fs.symlink('src', path.join(proj, 'src-link'))
  await fs.mkdir(path.join(proj, 'data'))
})
afterAll(() => dirs.cleanup())

function check (p: string, access: 'read' | 'write' = 'read', extra: string[] = []): PathCheck {
  return resolveToolPath(p, { cwd: proj, sandbox: { enabled: true, cwd: proj, hidden: extra } }, access, { home })
}

function refused (r: PathCheck): string {
  expect(r.ok).toBe(false)
  return r.ok ? '' : r.error
}

describe('path policy', () => {
  it('accepts paths inside the working directory, symlinks inside included', () => {
    expect(check('src/a.ts')).toEqual({ ok: true, path: path.join(proj, 'src', 'a.ts'), relative: 'src/a.ts' })
    expect(check(path.join(proj, 'src'))).toMatchObject({ ok: true, relative: 'src' })
    expect(check('')).toMatchObject({ ok: true, relative: '.' })
    expect(check('src-link/a.ts')).toMatchObject({ ok: true, path: path.join(proj, 'src', 'a.ts') })
    expect(check('new/dir/file.txt', 'write')).toMatchObject({ ok: true, relative: 'new/dir/file.txt' })
    expect(check('.git/hooks/pre-commit', 'read')).toMatchObject({ ok: true })
  })

  it('refuses paths outside the working directory', () => {
    expect(refused(check('/etc/passwd'))).toMatch(/outside the working directory/)
    expect(refused(check('../outside/secret.txt'))).toMatch(/outside/)
    expect(refused(check('src/../../outside/secret.txt', 'write'))).toMatch(/outside/)
  })

  it('refuses symlinks that lead outside, even for files that do not exist yet', () => {
    expect(refused(check('out-file'))).toMatch(/resolves to .*secret\.txt through a symlink/)
    expect(refused(check('out-file', 'write'))).toMatch(/outside/)
    expect(refused(check('out-dir/secret.txt'))).toMatch(/outside/)
    expect(refused(check('out-dir/brand-new.txt', 'write'))).toMatch(/outside/)
    expect(refused(check('dangling', 'write'))).toMatch(/resolves to .*new\.txt/)
    expect(refused(check('/proc/self/root/etc/passwd'))).toMatch(/outside/)
    expect(check('/proc/self/root' + proj + '/src/a.ts')).toMatchObject({ ok: true, relative: 'src/a.ts' }) // the same file
  })

  it('refuses hidden paths, through symlinks and inside the working directory', () => {
    expect(refused(check('ssh/id_rsa'))).toMatch(/outside|hidden/)
    expect(refused(check(path.join(home, '.ssh', 'id_rsa')))).toMatch(/outside|hidden/)
    expect(refused(check('data/x', 'read', [path.join(proj, 'data')]))).toMatch(/hidden from tools/)
    expect(refused(check('data', 'write', [path.join(proj, 'data')]))).toMatch(/hidden from tools/)
  })

  it('keeps git hooks, git config and shell start-up files read-only', () => {
    expect(refused(check('.git/hooks/pre-commit', 'write'))).toMatch(/read-only for tools/)
    expect(refused(check('.git/config', 'write'))).toMatch(/read-only/)
    expect(refused(check('.bashrc', 'write'))).toMatch(/read-only/)
  })

  it('refuses a working directory inside a hidden path', () => {
    const ssh = path.join(home, '.ssh')
    const r = resolveToolPath('id_rsa', { cwd: ssh, sandbox: { enabled: true, cwd: ssh, hidden: [] } }, 'read', { home })
    expect(refused(r)).toMatch(/is inside .*\.ssh, which is hidden/)
  })

  it('refuses a tool directory outside the sandbox directory', () => {
    const r = resolveToolPath('a', { cwd: outside, sandbox: { enabled: true, cwd: proj, hidden: [] } }, 'read', { home })
    expect(refused(r)).toMatch(/outside the working directory/)
  })

  it('refuses NUL bytes', () => {
    expect(refused(check('a\0b'))).toMatch(/NUL/)
  })
})
