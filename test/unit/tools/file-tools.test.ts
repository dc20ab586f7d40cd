import fs from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { countOccurrences, createFileTools } from '../../../src/main/tools/file-tools'
import type { Tool, ToolContext } from '../../../src/main/tools/tool'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs('arbor-filetools-')
let proj: string
let home: string
let ctx: ToolContext
let tools: Record<string, Tool>

beforeAll(async () => {
  const root = await fs.realpath(await dirs.make())
  proj = path.join(root, 'proj')
  home = path.join(root, 'home')
  await fs.mkdir(path.join(home, '.ssh'), { recursive: true })
  await fs.mkdir(path.join(proj, 'sub'), { recursive: true })
  await fs.mkdir(path.join(proj, 'private'))
  await fs.writeFile(path.join(proj, 'lines.txt'), Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n') + '\n')
  await fs.writeFile(path.join(proj, 'bin.dat'), Buffer.from([1, 2, 0, 3]))
  await fs.writeFile(path.join(proj, 'empty.txt'), '')
  await fs.symlink('lines.txt', path.join(proj, 'alias'))
  ctx = { cwd: proj, signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: true, cwd: proj, hidden: [path.join(proj, 'private')] } }
  tools = Object.fromEntries(createFileTools({ home, limits: { maxChars: 2000, maxLines: 50 } }).map(t => [t.name, t]))
})
afterAll(() => dirs.cleanup())

function run (name: string, args: unknown): ReturnType<Tool['run']> {
  const t = tools[name]
  if (t === undefined) throw new Error(`no tool ${name}`)
  return t.run(args, ctx)
}

describe('read_file', () => {
  it('reads a whole file, or a window of lines', async () => {
    expect(await run('read_file', { path: 'lines.txt' })).toEqual({ status: 'ok', output: Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n') })
    const r = await run('read_file', { path: 'lines.txt', offset: 3, limit: 2 })
    expect(r.output).toBe('line 3\nline 4\n[lines 3-4 of 10; continue with offset=5]')
    expect((await run('read_file', { path: 'lines.txt', offset: 11 })).output).toMatch(/past the end .* \(10 lines\)/)
    expect((await run('read_file', { path: 'empty.txt' })).output).toBe('(empty file)')
    expect((await run('read_file', { path: 'alias', limit: 1 })).output).toMatch(/^line 1\n/)
  })

  it('refuses binaries, directories, missing files and bad arguments with a reason', async () => {
    expect(await run('read_file', { path: 'bin.dat' })).toEqual({ status: 'error', output: 'bin.dat is a binary file (4 bytes); not shown' })
    expect((await run('read_file', { path: 'sub' })).output).toMatch(/is a directory; use list_dir/)
    expect((await run('read_file', { path: 'nope.txt' })).output).toBe('no such file or directory: nope.txt')
    expect((await run('read_file', { file: 'lines.txt' })).output).toBe("missing required argument 'path'")
    expect((await run('read_file', { path: 'lines.txt', offset: 0 })).output).toMatch(/at least 1/)
  })

  it('limits long output', async () => {
    await fs.writeFile(path.join(proj, 'long.txt'), 'x'.repeat(100_000))
    const r = await run('read_file', { path: 'long.txt' })
    expect(r.truncated).toBe(true)
    expect(r.output.length).toBeLessThanOrEqual(2000)
    expect(r.output).toMatch(/characters cut/)
  })
})

describe('write_file and edit_file', () => {
  it('creates parents, overwrites, and reports', async () => {
    expect((await run('write_file', { path: 'a/b/c.txt', content: 'hello' })).output).toBe('created a/b/c.txt (5 bytes)')
    expect(await fs.readFile(path.join(proj, 'a/b/c.txt'), 'utf8')).toBe('hello')
    expect((await run('write_file', { path: 'a/b/c.txt', content: 'bye' })).output).toBe('overwrote a/b/c.txt (3 bytes)')
    expect((await run('write_file', { path: 'sub', content: 'x' })).output).toBe('sub is a directory')
  })

  it('replaces exactly one occurrence and says how many otherwise', async () => {
    await fs.writeFile(path.join(proj, 'e.txt'), 'one two two $& three')
    expect((await run('edit_file', { path: 'e.txt', old: 'one', new: '$1 1' })).output).toBe('replaced 1 occurrence in e.txt at line 1')
    expect(await fs.readFile(path.join(proj, 'e.txt'), 'utf8')).toBe('$1 1 two two $& three')
    expect(await run('edit_file', { path: 'e.txt', old: 'two', new: '2' })).toEqual({ status: 'error', output: '`old` occurs 2 times in e.txt; include more surrounding text so it occurs exactly once' })
    expect((await run('edit_file', { path: 'e.txt', old: 'four', new: '4' })).output).toMatch(/not found in e\.txt \(0 occurrences\)/)
    expect((await run('edit_file', { path: 'e.txt', old: '', new: '4' })).output).toMatch(/`old` is empty/)
    expect((await run('edit_file', { path: 'missing.txt', old: 'a', new: 'b' })).output).toBe('no such file or directory: missing.txt')
    expect(countOccurrences('aaaa', 'aa')).toBe(2)
  })

  it('refuse paths the sandbox hides or protects', async () => {
    expect((await run('write_file', { path: '../x.txt', content: '' })).output).toMatch(/outside the working directory/)
    expect((await run('write_file', { path: 'private/x', content: '' })).output).toMatch(/hidden from tools/)
    expect((await run('edit_file', { path: '.git/hooks/pre-commit', old: 'a', new: 'b' })).output).toMatch(/read-only for tools/)
    await expect(fs.access(path.join(proj, '..', 'x.txt'))).rejects.toThrow()
  })
})

describe('list_dir', () => {
  it('lists sorted entries, marks directories and symlinks, and omits hidden ones', async () => {
    const r = await run('list_dir', {})
    expect(r.status).toBe('ok')
    const lines = r.output.split('\n')
    expect(lines).toContain('sub/')
    expect(lines).toContain('alias -> lines.txt')
    expect(lines).toContain('lines.txt')
    expect(lines).not.toContain('private/')
    expect([...lines].sort()).toEqual(lines)
    expect((await run('list_dir', { path: 'sub' })).output).toBe('(sub is empty)')
    expect((await run('list_dir', { path: '/etc' })).output).toMatch(/outside/)
  })
})
