// Project instructions (issue 15): AGENTS.md (else CLAUDE.md) from the working directory up
// to its repository root, plus the data directory's, joined under a cap, the most specific
// kept; a link out of the project is not read.
import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { instructionDirs, loadInstructions } from '../../src/main/runtime/agent/project-instructions'
import { tempDirs } from '../helpers/temp-dir'

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
    const got = await loadInstructions({ cwd, dataDir: data })
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
    const got = await loadInstructions({ cwd, dataDir: await dirs.make() })
    expect(got.files.map(f => f.path)).toEqual([path.join(cwd, 'AGENTS.md')])
    expect((await loadInstructions({ cwd: await dirs.make(), dataDir: await dirs.make() })).text).toBe('')
  })

  it('keeps the most specific under the cap, cuts the last one on a character boundary and says so', async () => {
    const repo = await dirs.make()
    fs.mkdirSync(path.join(repo, '.git'))
    const cwd = path.join(repo, 'sub')
    write(path.join(repo, 'AGENTS.md'), 'é'.repeat(100)) // 200 bytes
    write(path.join(cwd, 'AGENTS.md'), 'x'.repeat(150))
    const got = await loadInstructions({ cwd, dataDir: await dirs.make(), maxBytes: 201 })
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
    const got = await loadInstructions({ cwd: repo, dataDir: await dirs.make() })
    expect(got.text).not.toContain('PRIVATE KEY')
    expect(got.files).toEqual([])
    expect(got.skipped).toEqual([`${path.join(repo, 'AGENTS.md')}: a link to ${secret}, outside ${repo}; not read`])
  })
})
