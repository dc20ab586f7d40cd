// Project instructions (issue 15): AGENTS.md (else CLAUDE.md) from the working directory up
// to its repository root, plus the data directory's, joined under a cap, the most specific
// kept; a link out of the project, into a hidden path, or to what is not a regular file is not read.
import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { instructionDirs, loadInstructions } from '../../../src/main/runtime/agent/project-instructions'
import { defaultHiddenPaths } from '../../../src/main/tools/sandbox/hidden-paths'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs()
afterEach(async () => { await dirs.cleanup() })

const sha = (s: string | Buffer): string => createHash('sha256').update(s).digest('hex')
const write = (file: string, text: string): void => { fs.mkdirSync(path.dirname(file), { recursive: true }); fs.writeFileSync(file, text) }

describe('project instructions', () => {
  it('reads AGENTS.md (else CLAUDE.md) from the cwd up to the repository root, and the global one, most general first', async () => {
    const top = await dirs.make()
    const repo = path.join(top, 'repo')
    const cwd = path.join(repo, 'pkg', 'app')
    fs.mkdirSync(path.join(repo, '.git'), { recursive: true })
    write(path.join(top, 'AGENTS.md'), 'above the repository: never read')
    write(path.join(repo, 'AGENTS.md'), 'repo rules')
    write(path.join(repo, 'pkg', 'CLAUDE.md'), 'package rules')
    write(path.join(cwd, 'AGENTS.md'), 'app rules')
    write(path.join(cwd, 'CLAUDE.md'), 'beside an AGENTS.md: never read')
    const data = await dirs.make()
    write(path.join(data, 'AGENTS.md'), 'my global rules')

    expect(await instructionDirs(cwd)).toEqual([cwd, path.join(repo, 'pkg'), repo])
    const got = await loadInstructions({ cwd, dataDir: data, hidden: [] })
    expect(got.files.map(f => f.path)).toEqual([path.join(data, 'AGENTS.md'), path.join(repo, 'AGENTS.md'), path.join(repo, 'pkg', 'CLAUDE.md'), path.join(cwd, 'AGENTS.md')])
    expect(got.files.map(f => f.sha256)).toEqual(['my global rules', 'repo rules', 'package rules', 'app rules'].map(t => sha(t)))
    expect(got.text.indexOf('my global rules')).toBeLessThan(got.text.indexOf('repo rules'))
    expect(got.text.indexOf('package rules')).toBeLessThan(got.text.indexOf('app rules'))
    expect(got.text).not.toMatch(/never read/)
    expect(got.text).toContain(`Instructions from ${path.join(cwd, 'AGENTS.md')}:\napp rules`)
  })

  it('outside a repository reads only the cwd\'s own (a home directory\'s does not join by accident)', async () => {
    const top = await dirs.make()
    const cwd = path.join(top, 'work')
    write(path.join(top, 'AGENTS.md'), 'the parent of a plain directory')
    write(path.join(cwd, 'AGENTS.md'), 'work rules')
    const got = await loadInstructions({ cwd, dataDir: await dirs.make(), hidden: [] })
    expect(got.files.map(f => f.path)).toEqual([path.join(cwd, 'AGENTS.md')])
    expect((await loadInstructions({ cwd: await dirs.make(), dataDir: await dirs.make(), hidden: [] })).text).toBe('')
  })

  it('keeps the most specific under the cap, cuts the last one on a character boundary and says so', async () => {
    const repo = await dirs.make()
    fs.mkdirSync(path.join(repo, '.git'))
    const cwd = path.join(repo, 'sub')
    write(path.join(repo, 'AGENTS.md'), 'é'.repeat(100)) // 200 bytes
    write(path.join(cwd, 'AGENTS.md'), 'x'.repeat(150))
    const got = await loadInstructions({ cwd, dataDir: await dirs.make(), hidden: [], maxBytes: 201 })
    const [general, specific] = got.files
    expect(specific).toEqual({ path: path.join(cwd, 'AGENTS.md'), sha256: sha('x'.repeat(150)), bytes: 150 })
    // 51 bytes left: 25 whole é (50 bytes), never half of one
    expect(general).toEqual({ path: path.join(repo, 'AGENTS.md'), sha256: sha('é'.repeat(25)), bytes: 50, truncated: true })
    expect(got.text).toContain('(cut at the size limit)')
    expect(got.text).not.toContain('\uFFFD')
  })

  it('does not read an AGENTS.md that links out of its project (a cloned repository pointing at a secret)', async () => {
    const repo = await dirs.make()
    fs.mkdirSync(path.join(repo, '.git'))
    const secret = path.join(await dirs.make(), 'id_ed25519')
    fs.writeFileSync(secret, '-----BEGIN OPENSSH PRIVATE KEY-----')
    fs.symlinkSync(secret, path.join(repo, 'AGENTS.md'))
    write(path.join(repo, 'docs', 'AGENTS.md'), 'fine')
    fs.symlinkSync(path.join(repo, 'docs', 'AGENTS.md'), path.join(repo, 'CLAUDE.md')) // a link within is read… but AGENTS.md came first
    const got = await loadInstructions({ cwd: repo, dataDir: await dirs.make(), hidden: [] })
    expect(got.text).not.toContain('PRIVATE KEY')
    expect(got.files).toEqual([])
    expect(got.skipped).toEqual([`${path.join(repo, 'AGENTS.md')}: a link to ${secret}, outside ${repo}; not read`])
  })

  it('does not read a link into a path the sandbox hides, inside the repository (a home that is a dotfiles repository)', async () => {
    const home = await fs.promises.realpath(await dirs.make())
    const cwd = path.join(home, 'project')
    fs.mkdirSync(path.join(home, '.git'))
    write(path.join(home, '.ssh', 'id_rsa'), '-----BEGIN OPENSSH PRIVATE KEY-----')
    write(path.join(cwd, 'CLAUDE.md'), 'beside a refused AGENTS.md: not read either')
    fs.symlinkSync('../.ssh/id_rsa', path.join(cwd, 'AGENTS.md'))
    const data = path.join(home, '.config', 'Arbor')
    fs.mkdirSync(data, { recursive: true })
    const got = await loadInstructions({ cwd, dataDir: data, hidden: defaultHiddenPaths(home, data) })
    expect(got.text).toBe('')
    expect(got.skipped).toEqual([`${path.join(cwd, 'AGENTS.md')}: a link to ${path.join(home, '.ssh', 'id_rsa')}, inside ${path.join(home, '.ssh')}, which is hidden from tools (credentials or Arbor's data); not read`])
  })

  it('reads the global file beneath the data directory, which is hidden from tools, but no link out of it', async () => {
    const home = await fs.promises.realpath(await dirs.make())
    const data = path.join(home, '.config', 'Arbor')
    write(path.join(data, 'AGENTS.md'), 'my global rules')
    const cwd = await dirs.make()
    const hidden = defaultHiddenPaths(home, data)
    expect((await loadInstructions({ cwd, dataDir: data, hidden })).text).toBe(`Instructions from ${path.join(data, 'AGENTS.md')}:\nmy global rules`)
    fs.rmSync(path.join(data, 'AGENTS.md'))
    const elsewhere = path.join(await dirs.make(), 'rules.md')
    write(elsewhere, 'from elsewhere')
    fs.symlinkSync(elsewhere, path.join(data, 'AGENTS.md'))
    const got = await loadInstructions({ cwd, dataDir: data, hidden })
    expect(got.text).toBe('')
    expect(got.skipped).toEqual([`${path.join(data, 'AGENTS.md')}: a link to ${elsewhere}, outside ${data}; not read`])
  })

  it('does not open what is not a regular file (a FIFO would wait for a writer), and says so', async () => {
    const cwd = await dirs.make()
    execFileSync('mkfifo', [path.join(cwd, 'AGENTS.md')])
    const got = await loadInstructions({ cwd, dataDir: await dirs.make(), hidden: [] })
    expect(got.text).toBe('')
    expect(got.skipped).toEqual([`${path.join(cwd, 'AGENTS.md')}: is not a regular file (a FIFO); not read`])
  })
})
