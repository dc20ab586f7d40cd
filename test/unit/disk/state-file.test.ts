import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { readJsonFile, writeStateFile, writeStateFileSync } from '../../../src/main/disk/state-file'
import { StorageError, storageError } from '../../../src/main/disk/storage-error'
import { tempDirs } from '../../helpers/temp-dir'

// The one writer of state files (src/main/disk/state-file.ts): whole or not at all, exact
// modes, one write at a time per file, bursts coalesced. The full disk is in
// test/e2e/history/disk-full.test.ts (it needs a file system of its own).

const dirs = tempDirs('arbor-state-file-')
afterEach(() => dirs.cleanup())

const leftovers = (dir: string): string[] => fs.readdirSync(dir).filter(n => n.endsWith('.tmp'))
const mode = (file: string): number => fs.statSync(file).mode & 0o777

describe('writeStateFile', () => {
  it('writes whole, with exactly the mode asked (0600 by default) whatever the umask, in a private new directory', async () => {
    const root = await dirs.make()
    const file = path.join(root, 'new', 'deeper', 'state.json')
    const old = process.umask(0o000)
    try {
      await writeStateFile(file, '{"a":1}\n')
      expect(fs.readFileSync(file, 'utf8')).toBe('{"a":1}\n')
      expect(mode(file)).toBe(0o600)
      expect(mode(path.dirname(file))).toBe(0o700)
      await writeStateFile(file, '{"a":2}\n', { mode: 0o644 })
      expect(mode(file)).toBe(0o644)
      writeStateFileSync(file, '{"a":3}\n', { mode: 0o600 })
      expect(mode(file)).toBe(0o600)
      expect(await readJsonFile(file)).toEqual({ a: 3 })
    } finally {
      process.umask(old)
    }
    expect(leftovers(path.dirname(file))).toEqual([])
  })

  it('runs one write at a time per file and folds a burst into one write of the newest state', async () => {
    const dir = await dirs.make()
    const file = path.join(dir, 'burst.json')
    let state = 0
    let produced = 0
    const produce = (): string => { produced++; return JSON.stringify({ state }) }
    const writes: Array<Promise<void>> = []
    for (let i = 0; i < 100; i++) {
      state = i
      writes.push(writeStateFile(file, produce))
      if (i === 50) await new Promise(resolve => setImmediate(resolve)) // the first write is under way
    }
    await Promise.all(writes)
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ state: 99 })
    // at most: the first burst, then the one write waiting behind a running one (per await point)
    expect(produced).toBeLessThanOrEqual(3)
    expect(leftovers(dir)).toEqual([])
    // the same for two files at once: they do not wait for each other, nor mix
    const other = path.join(dir, 'other.json')
    await Promise.all([writeStateFile(file, 'A'), writeStateFile(other, 'B'), writeStateFile(file, 'C')])
    expect([fs.readFileSync(file, 'utf8'), fs.readFileSync(other, 'utf8')]).toEqual(['C', 'B'])
  })

  it('a failed write rejects its callers, leaves the previous file and no temporary, and the next write is made', async () => {
    const dir = await dirs.make()
    const file = path.join(dir, 'state.json')
    await writeStateFile(file, 'before')
    await expect(writeStateFile(file, () => { throw new Error('cannot describe the state') })).rejects.toThrow('cannot describe the state')
    expect(fs.readFileSync(file, 'utf8')).toBe('before')
    // the rename fails: the target became a directory that is not empty
    const blocked = path.join(dir, 'blocked.json')
    fs.mkdirSync(path.join(blocked, 'inside'), { recursive: true })
    await expect(writeStateFile(blocked, 'x')).rejects.toThrow()
    expect(() => writeStateFileSync(blocked, 'x')).toThrow()
    expect(leftovers(dir)).toEqual([])
    await writeStateFile(file, 'after')
    expect(fs.readFileSync(file, 'utf8')).toBe('after')
  })

  it('a temporary left by a writer killed before its rename is removed by the next write of that file; a live writer\'s is not', async () => {
    const dir = await dirs.make()
    const file = path.join(dir, 'peers.bin')
    // a real writer, SIGKILLed between its temporary's fsync and the rename
    const script = `const fs = require('node:fs'); const t = ${JSON.stringify(file)} + '.' + process.pid + '.a1b2c3d4e5f6.tmp'; fs.writeFileSync(t, 'half'); process.kill(process.pid, 'SIGKILL')`
    const killed = spawnSync(process.execPath, ['-e', script])
    expect(killed.signal).toBe('SIGKILL')
    const left = leftovers(dir)
    expect(left).toHaveLength(1)
    // a write under way in another live process (this test's parent stands for it), and names that are not temporaries
    const live = `peers.bin.${process.ppid}.0123456789ab.tmp`
    fs.writeFileSync(path.join(dir, live), 'writing')
    const other = `other.bin.${killed.pid}.0123456789ab.tmp` // another file's, its writer gone too
    fs.writeFileSync(path.join(dir, other), 'another file\'s')
    fs.writeFileSync(path.join(dir, 'peers.bin.notes.tmp'), 'not ours')
    await writeStateFile(file, 'whole')
    expect(fs.readFileSync(file, 'utf8')).toBe('whole')
    expect(leftovers(dir).sort()).toEqual([live, other, 'peers.bin.notes.tmp'].sort())
    writeStateFileSync(path.join(dir, 'other.bin'), 'x')
    expect(leftovers(dir).sort()).toEqual([live, 'peers.bin.notes.tmp'].sort())
  })

  it('says a full disk in words, naming the directory, through the wrappers of Hypercore and RocksDB', () => {
    const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })
    const wrapped = new Error('Batch was not applied', { cause: enospc })
    const sticky = new Error('Batch was not applied', { cause: new Error('While appending to file: /d/corestore/db/000004.log: No space left on device') })
    for (const err of [enospc, wrapped, sticky]) {
      const e = storageError(err, '/d')
      expect(e).toBeInstanceOf(StorageError)
      expect(e.message).toBe('the disk holding /d is full; free some space and try again in a few seconds (nothing already saved is lost)')
      expect(e.cause).toBe(err)
    }
    const other = new Error('something else')
    expect(storageError(other, '/d')).toBe(other)
  })
})
