// The host's reader of workspace files (workspace-read.ts): beneath a root, by descriptor,
// nothing hidden by name or identity, no link out, only regular files, at most N bytes; on
// both ways of holding directories (by descriptor, and the path fallback of macOS/Windows).
import { execFileSync } from 'node:child_process'
import fs from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BACKENDS } from '../../../../src/main/tools/paths/beneath'
import { readWorkspaceFile, workspaceReader, type WorkspaceRead } from '../../../../src/main/tools/paths/workspace-read'
import { defaultHiddenPaths } from '../../../../src/main/tools/sandbox/hidden-paths'
import { tempDirs } from '../../../helpers/temp-dir'

const dirs = tempDirs('arbor-wsread-')
let root: string
let home: string
let proj: string
let data: string
let hidden: string[]

beforeAll(async () => {
  root = await fs.realpath(await dirs.make())
  home = path.join(root, 'home')
  proj = path.join(home, 'proj') // a home that is a repository: the walk's root is the home
  data = path.join(proj, '.arbor-data')
  for (const d of [path.join(home, '.ssh'), path.join(proj, 'docs'), data, path.join(root, 'outside')]) await fs.mkdir(d, { recursive: true })
  await fs.writeFile(path.join(home, '.ssh', 'id_rsa'), 'PRIVATE')
  await fs.writeFile(path.join(data, 'secrets.json'), '{"apiKey":"sk-x"}')
  await fs.writeFile(path.join(data, 'AGENTS.md'), 'global rules')
  await fs.writeFile(path.join(root, 'outside', 'f'), 'OUTSIDE')
  await fs.writeFile(path.join(proj, 'docs', 'rules.md'), 'rules inside')
  await fs.writeFile(path.join(proj, 'big.md'), 'x'.repeat(100))
  await fs.symlink('docs/rules.md', path.join(proj, 'inside-link'))
  await fs.symlink('../.ssh/id_rsa', path.join(proj, 'to-ssh'))
  await fs.symlink('.arbor-data/secrets.json', path.join(proj, 'to-data'))
  await fs.symlink(path.join(root, 'outside', 'f'), path.join(proj, 'to-outside'))
  await fs.symlink('/proc/self/environ', path.join(proj, 'to-environ'))
  await fs.writeFile(path.join(home, '.netrc'), 'machine example.com password P')
  await fs.link(path.join(home, '.netrc'), path.join(proj, 'hard-linked')) // the hidden file itself, by another name
  await fs.symlink(path.join(root, 'outside', 'f'), path.join(data, 'link-out'))
  execFileSync('mkfifo', [path.join(proj, 'fifo')])
  hidden = defaultHiddenPaths(home, data)
})
afterAll(() => dirs.cleanup())

const refusal = (r: WorkspaceRead): string => {
  expect(r.ok).toBe(false)
  return r.ok ? '' : r.reason
}

describe.each(Object.values(BACKENDS))('readWorkspaceFile by $kind', backend => {
  const read = (file: string, o: { root?: string; maxBytes?: number; ownRoot?: boolean } = {}): Promise<WorkspaceRead> =>
    readWorkspaceFile(file, { root: o.root ?? home, hidden, maxBytes: o.maxBytes ?? 1000, backend, ...(o.ownRoot === true ? { ownRoot: true } : {}) })

  it('reads a regular file beneath the root, through a link that stays beneath it, at most maxBytes', async () => {
    expect(await read(path.join(proj, 'docs', 'rules.md'))).toEqual({ ok: true, bytes: Buffer.from('rules inside'), truncated: false, path: path.join(proj, 'docs', 'rules.md') })
    expect(await read('proj/inside-link')).toMatchObject({ ok: true, bytes: Buffer.from('rules inside'), path: path.join(proj, 'docs', 'rules.md') })
    expect(await read('proj/big.md', { maxBytes: 10 })).toMatchObject({ ok: true, bytes: Buffer.from('x'.repeat(10)), truncated: true })
    expect(await read('proj/big.md', { maxBytes: 100 })).toMatchObject({ ok: true, truncated: false })
    // the same read without yielding
    const reader = workspaceReader({ root: home, hidden, backend })
    expect(reader.readSync('proj/big.md', 10)).toEqual(await reader.read('proj/big.md', 10))
    expect(reader.readSync('proj/to-ssh', 10)).toEqual(await reader.read('proj/to-ssh', 10))
  })

  it('says a missing file is missing', async () => {
    expect(await read('proj/nothing.md')).toMatchObject({ ok: false, missing: true })
    expect(await read('proj/no-dir/nothing.md')).toMatchObject({ ok: false, missing: true })
  })

  it('never follows a link out of the root, into a hidden path, or into the host\'s /proc', async () => {
    expect(refusal(await read('proj/to-outside'))).toBe(`${path.join(proj, 'to-outside')}: a link to ${path.join(root, 'outside', 'f')}, outside ${home}; not read`)
    expect(refusal(await read('proj/to-ssh'))).toMatch(/to-ssh: a link to .*\.ssh\/id_rsa, inside .*\.ssh, which is hidden from tools/)
    expect(refusal(await read('proj/to-data'))).toMatch(/to-data: a link to .*secrets\.json, inside .*\.arbor-data, which is hidden/)
    expect(refusal(await read('.ssh/id_rsa'))).toMatch(/hidden from tools/)
    expect(refusal(await read(path.join(proj, 'to-environ'), { root: '/' }))).toMatch(/inside \/proc, the host's own view of the system; not read/)
  })

  it('refuses a hidden file by identity, whatever name it has beneath the root', async () => {
    expect(refusal(await read('proj/hard-linked'))).toMatch(/hard-linked is .*\.netrc, which is hidden/)
  })

  it('does not open a FIFO (it would wait for a writer) and says what it is', async () => {
    expect(refusal(await read('proj/fifo'))).toBe(`${path.join(proj, 'fifo')}: is not a regular file (a FIFO); not read`)
    expect(refusal(await read('proj/docs'))).toMatch(/is not a regular file \(a directory\)/)
  })

  it('reads beneath the host\'s own hidden directory as its root, and still follows no link out of it', async () => {
    expect(await read(path.join(data, 'AGENTS.md'), { root: data, ownRoot: true })).toMatchObject({ ok: true, bytes: Buffer.from('global rules') })
    expect(refusal(await read(path.join(data, 'AGENTS.md'), { root: data }))).toMatch(/hidden from tools/)
    expect(refusal(await read(path.join(data, 'link-out'), { root: data, ownRoot: true }))).toMatch(/a link to .*outside.*; not read/)
    expect(refusal(await read(path.join(proj, 'docs', 'rules.md'), { root: data, ownRoot: true }))).toMatch(/outside .*\.arbor-data; not read/)
  })
})
