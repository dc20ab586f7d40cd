/**
 * The file tools' walk beneath the working directory (beneath.ts, path-policy.ts), on real
 * files, with both ways of holding directories: by descriptor (/proc, Linux) and by path
 * (the fallback where /proc is missing).
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BACKENDS, fileBackend } from '../../../../src/main/tools/paths/beneath'
import { createFileTools } from '../../../../src/main/tools/file-tools'
import type { Tool, ToolContext, ToolResult } from '../../../../src/main/tools/tool'
import { tempDirs } from '../../../helpers/temp-dir'

const dirs = tempDirs('arbor-beneath-')
afterAll(() => dirs.cleanup())

it('holds directories by descriptor on Linux', () => {
  expect(fileBackend().kind).toBe(process.platform === 'linux' ? 'fd' : 'path')
})

describe.each(Object.values(BACKENDS))('by $kind', backend => {
  let root: string
  let proj: string
  let home: string
  let outside: string
  let tools: Record<string, Tool>
  let ctx: ToolContext

  beforeAll(async () => {
    root = await fsp.realpath(await dirs.make())
    proj = path.join(root, 'proj')
    home = path.join(root, 'home')
    outside = path.join(root, 'outside')
    for (const d of [path.join(home, '.ssh'), path.join(proj, 'src', 'lib'), path.join(proj, 'private', 'deep'), outside]) await fsp.mkdir(d, { recursive: true })
    await fsp.writeFile(path.join(home, '.ssh', 'id_rsa'), 'KEY')
    await fsp.writeFile(path.join(home, '.netrc'), 'NETRC')
    await fsp.writeFile(path.join(proj, 'private', 'deep', 'secret'), 'PRIVATE')
    await fsp.writeFile(path.join(proj, 'src', 'lib', 'a.ts'), 'export const a = 1\n')
    await fsp.writeFile(path.join(outside, 'o.txt'), 'OUT')
    await fsp.symlink('src/lib', path.join(proj, 'lib'))
    await fsp.symlink(path.join(proj, 'src', 'lib', 'a.ts'), path.join(proj, 'abs-a'))
    await fsp.symlink('lib', path.join(proj, 'chain'))
    await fsp.symlink('../lib/a.ts', path.join(proj, 'src', 'up-a'))
    await fsp.symlink('../outside/o.txt', path.join(proj, 'rel-out'))
    await fsp.symlink(outside, path.join(proj, 'abs-out'))
    await fsp.symlink('loop2', path.join(proj, 'loop1'))
    await fsp.symlink('loop1', path.join(proj, 'loop2'))
    await fsp.symlink('src/made-by-link.txt', path.join(proj, 'dangling-in'))
    await fsp.symlink('private/deep', path.join(proj, 'to-private'))
    ctx = { cwd: proj, signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: true, cwd: proj, hidden: [path.join(proj, 'private')] } }
    tools = Object.fromEntries(createFileTools({ home, backend }).map(t => [t.name, t]))
  })

  const run = (name: string, args: unknown, c: ToolContext = ctx): Promise<ToolResult> => (tools[name] as Tool).run(args, c)

  it('follows symlinks that stay inside, one name at a time', async () => {
    for (const p of ['lib/a.ts', 'abs-a', 'chain/a.ts', 'src/up-a', 'src/../lib/a.ts']) {
      expect((await run('read_file', { path: p })).output, p).toBe('export const a = 1')
    }
    expect((await run('list_dir', { path: 'chain' })).output).toBe('a.ts')
    expect((await run('write_file', { path: 'dangling-in', content: 'via link' })).output).toBe('created src/made-by-link.txt (8 bytes)')
    expect(fs.readFileSync(path.join(proj, 'src', 'made-by-link.txt'), 'utf8')).toBe('via link')
    expect(fs.lstatSync(path.join(proj, 'dangling-in')).isSymbolicLink()).toBe(true)
  })

  it('refuses symlinks that lead out, and loops', async () => {
    expect((await run('read_file', { path: 'rel-out' })).output).toMatch(/outside the working directory .* \(it resolves to .*outside\/o\.txt through a symlink\)/)
    expect((await run('read_file', { path: 'abs-out/o.txt' })).output).toMatch(/outside/)
    expect((await run('write_file', { path: 'abs-out/new.txt', content: 'x' })).output).toMatch(/outside/)
    expect((await run('list_dir', { path: 'abs-out' })).output).toMatch(/outside/)
    expect((await run('read_file', { path: 'loop1' })).output).toBe('loop1: too many levels of symbolic links')
    expect(fs.readdirSync(outside)).toEqual(['o.txt'])
  })

  it('refuses writes into anything git takes for its directory, at any depth and under any spelling', async () => {
    const refusedWrites = ['.git/hooks/pre-commit', '.git/config', 'sub/.git/hooks/post-checkout', 'a/b/.git', '.GIT/config', '.git./hooks/x', 'x/.git /config', 'GIT~1/config', '.g\u200cit/config', '.bashrc', '.ZSHRC']
    for (const p of refusedWrites) {
      const r = await run('write_file', { path: p, content: 'x' })
      expect(r.output, p).toMatch(/is read-only for tools: .* is run by programs outside the sandbox/)
    }
    expect(fs.existsSync(path.join(proj, 'sub'))).toBe(false)
    expect(fs.existsSync(path.join(proj, 'a'))).toBe(false)
    // a repository's directory renamed away is still one; reading it is fine
    await fsp.mkdir(path.join(proj, 'g', 'objects'), { recursive: true })
    await fsp.mkdir(path.join(proj, 'g', 'refs'), { recursive: true })
    await fsp.mkdir(path.join(proj, 'g', 'hooks'), { recursive: true })
    await fsp.writeFile(path.join(proj, 'g', 'HEAD'), 'ref: refs/heads/main\n')
    expect((await run('write_file', { path: 'g/hooks/pre-commit', content: '#!/bin/sh\necho pwned' })).output).toMatch(/read-only for tools: g is a git directory/)
    expect((await run('edit_file', { path: 'g/HEAD', old: 'main', new: 'evil' })).output).toMatch(/g is a git directory/)
    expect((await run('read_file', { path: 'g/HEAD' })).output).toBe('ref: refs/heads/main')
    expect(fs.existsSync(path.join(proj, 'g', 'hooks', 'pre-commit'))).toBe(false)
    // the repository's own .git, seen once, stays read-only renamed and stripped of what makes it one
    await fsp.mkdir(path.join(proj, '.git', 'hooks'), { recursive: true })
    expect((await run('read_file', { path: '.git/hooks' })).status).toBe('error') // any call notes it
    fs.renameSync(path.join(proj, '.git'), path.join(proj, 'was-git'))
    try {
      expect((await run('write_file', { path: 'was-git/hooks/pre-commit', content: 'x' })).output).toMatch(/read-only for tools: was-git is .*\.git \(moved or linked\)/)
      fs.renameSync(path.join(proj, 'was-git', 'hooks'), path.join(proj, 'hooks-moved'))
      expect((await run('write_file', { path: 'hooks-moved/pre-commit', content: 'x' })).output).toMatch(/read-only for tools: hooks-moved is .*\.git\/hooks \(moved or linked\)/)
      fs.renameSync(path.join(proj, 'hooks-moved'), path.join(proj, 'was-git', 'hooks'))
    } finally {
      fs.renameSync(path.join(proj, 'was-git'), path.join(proj, '.git'))
    }
    expect(fs.readdirSync(path.join(proj, '.git', 'hooks'))).toEqual([])
    // an ordinary file or directory merely named like a protected one deeper down is fine
    expect((await run('write_file', { path: 'docs/.bashrc', content: 'x' })).status).toBe('ok')
    expect((await run('write_file', { path: 'docs/git/x', content: 'x' })).status).toBe('ok')
  })

  it('keeps a hidden directory hidden after it is renamed, by what it is', async () => {
    expect((await run('read_file', { path: 'private/deep/secret' })).output).toMatch(/hidden from tools/)
    expect((await run('read_file', { path: 'to-private/secret' })).output).toMatch(/hidden from tools/)
    fs.renameSync(path.join(proj, 'private'), path.join(proj, 'renamed'))
    try {
      expect((await run('read_file', { path: 'renamed/deep/secret' })).output).toMatch(/hidden from tools: renamed is .*private, which holds credentials/)
      expect((await run('write_file', { path: 'renamed/deep/new', content: 'x' })).output).toMatch(/hidden from tools/)
      expect((await run('list_dir', { path: 'renamed' })).output).toMatch(/hidden from tools/)
      const top = (await run('list_dir', {})).output.split('\n')
      expect(top).not.toContain('renamed/')
      expect(top).not.toContain('private/')
      expect(top.some(l => l.startsWith('to-private'))).toBe(false) // it points at a hidden name, there or not
      expect(fs.existsSync(path.join(proj, 'renamed', 'deep', 'new'))).toBe(false)
    } finally {
      fs.renameSync(path.join(proj, 'renamed'), path.join(proj, 'private'))
    }
    expect((await run('list_dir', {})).output.split('\n')).not.toContain('to-private -> private/deep')
    expect((await run('list_dir', {})).output.split('\n')).toContain('lib -> src/lib')
  })

  it('refuses a hidden file hard-linked into the working directory', async () => {
    const netrc = path.join(home, '.netrc')
    const c: ToolContext = { ...ctx, sandbox: { ...ctx.sandbox, hidden: [netrc] } }
    fs.linkSync(netrc, path.join(proj, 'innocent.txt'))
    try {
      expect((await run('read_file', { path: 'innocent.txt' }, c)).output).toMatch(/hidden from tools: .*\.netrc/)
      expect((await run('list_dir', {}, c)).output.split('\n')).not.toContain('innocent.txt')
    } finally {
      fs.unlinkSync(path.join(proj, 'innocent.txt'))
    }
  })

  it('writes atomically: a new file replaces the old name, keeping its mode; nothing left beside it', async () => {
    const f = path.join(proj, 'src', 'run.sh')
    fs.writeFileSync(f, 'echo old\n', { mode: 0o750 })
    fs.chmodSync(f, 0o750)
    const ino = fs.statSync(f).ino
    const link = path.join(proj, 'src', 'hard-link-to-run.sh')
    fs.linkSync(f, link)
    expect((await run('write_file', { path: 'src/run.sh', content: 'echo new\n' })).output).toBe('overwrote src/run.sh (9 bytes)')
    expect(fs.readFileSync(f, 'utf8')).toBe('echo new\n')
    expect(fs.statSync(f).mode & 0o777).toBe(0o750)
    expect(fs.statSync(f).ino).not.toBe(ino)
    expect(fs.readFileSync(link, 'utf8')).toBe('echo old\n') // the name was replaced, the old inode untouched
    expect((await run('edit_file', { path: 'src/run.sh', old: 'new', new: 'newer' })).status).toBe('ok')
    expect(fs.statSync(f).mode & 0o777).toBe(0o750)
    expect(fs.readdirSync(path.join(proj, 'src')).filter(n => n.startsWith('.arbor-write-'))).toEqual([])
  })

  it('does not hang on a FIFO, and refuses other special files', async () => {
    execFileSync('mkfifo', [path.join(proj, 'pipe')])
    const t0 = Date.now()
    expect((await run('read_file', { path: 'pipe' })).output).toBe('pipe is not a regular file')
    expect((await run('write_file', { path: 'pipe', content: 'x' })).output).toBe('pipe is not a regular file')
    expect((await run('edit_file', { path: 'pipe', old: 'a', new: 'b' })).output).toBe('pipe is not a regular file')
    expect(Date.now() - t0).toBeLessThan(5000)
  })

  it('refuses names too long, and says which', async () => {
    const long = 'n'.repeat(256)
    expect((await run('write_file', { path: `src/${long}`, content: 'x' })).output).toMatch(/a name in the path is 256 bytes long, more than 255/)
    expect((await run('read_file', { path: 'a/'.repeat(2100) })).output).toMatch(/the path is 4200 bytes long, more than 4096/)
    expect((await run('write_file', { path: 'src/' + 'n'.repeat(255), content: 'x' })).status).toBe('ok')
  })

  it('says so when the working directory itself was moved or replaced', async () => {
    const other = path.join(root, 'proj2')
    const c: ToolContext = { ...ctx, cwd: other, sandbox: { enabled: true, cwd: other, hidden: [] } }
    expect((await run('list_dir', {}, c)).output).toMatch(/the working directory .*proj2 does not exist/)
    await fsp.mkdir(other) // made a moment later: there at once
    expect((await run('list_dir', {}, c)).output).toBe('(. is empty)')
    await fsp.rename(other, other + '.moved')
    await fsp.symlink(outside, other)
    try {
      const r = await run('read_file', { path: 'o.txt' }, c)
      expect(r.status).toBe('error')
      expect(r.output).not.toContain('OUT')
      expect(r.output).toMatch(/moved or replaced|outside|does not exist/)
    } finally {
      await fsp.unlink(other)
    }
  })
})
