import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { defaultRegistryDir, MAX_REGISTERED, parseRegistryEntry, registerDataDir, registeredDataDirs } from '../../../../src/main/tools/sandbox/data-dir-registry'
import { tempDirs } from '../../../helpers/temp-dir'

const dirs = tempDirs('arbor-registry-')
let root: string
beforeAll(async () => { root = await fsp.realpath(await dirs.make()) })
afterAll(() => dirs.cleanup())

describe('the registry of data directories of this user\'s nodes', () => {
  it('lives under ~/.config/Arbor (itself hidden from tools)', () => {
    expect(defaultRegistryDir('/home/u')).toBe('/home/u/.config/Arbor/nodes')
  })

  it('records each node once, canonical, readable back; gone directories are dropped; junk is ignored', async () => {
    const reg = path.join(root, 'reg')
    const a = path.join(root, 'a')
    const b = path.join(root, 'b')
    await fsp.mkdir(a)
    await fsp.mkdir(b)
    await fsp.symlink(a, path.join(root, 'link-a'))
    registerDataDir(a, reg)
    registerDataDir(path.join(root, 'link-a'), reg) // the same directory by another name
    registerDataDir(b, reg)
    expect(registeredDataDirs(reg).sort()).toEqual([a, b].sort())
    expect(fs.readdirSync(reg).filter(n => n.endsWith('.tmp'))).toEqual([])
    expect(fs.statSync(reg).mode & 0o777).toBe(0o700)
    await fsp.writeFile(path.join(reg, 'junk.json'), '{"dataDir": "relative/path"}')
    await fsp.writeFile(path.join(reg, 'junk2.json'), 'nope')
    await fsp.rm(b, { recursive: true })
    expect(registeredDataDirs(reg)).toEqual([a]) // b is gone: not hidden, nothing to hide
    registerDataDir(a, reg)
    expect(fs.readdirSync(reg).sort()).toEqual(['junk.json', 'junk2.json', expect.stringMatching(/^[0-9a-f]{32}\.json$/)].sort())
  })

  it('parses only what it wrote', () => {
    expect(parseRegistryEntry('{"dataDir":"/srv/a//b/"}')).toBe('/srv/a/b/')
    expect(parseRegistryEntry('{"dataDir":3}')).toBeUndefined()
    expect(parseRegistryEntry('[')).toBeUndefined()
    expect(MAX_REGISTERED).toBeGreaterThan(16)
  })

  it('says why when it cannot write', () => {
    const file = path.join(root, 'a-file')
    fs.writeFileSync(file, '')
    expect(() => registerDataDir(root, path.join(file, 'reg'))).toThrow(/ENOTDIR|EEXIST/)
  })
})
