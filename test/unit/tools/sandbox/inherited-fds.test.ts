import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fdinfoFlags, inheritableFds, isCloseOnExec, stdioWithout } from '../../../../src/main/tools/sandbox/inherited-fds'
import { tempDirs } from '../../../helpers/temp-dir'

const dirs = tempDirs('arbor-fds-')
let root: string
beforeAll(async () => { root = await dirs.make() })
afterAll(() => dirs.cleanup())

describe('inherited file descriptors', () => {
  it('reads the flags of /proc/self/fdinfo', () => {
    expect(fdinfoFlags('pos:\t0\nflags:\t02100000\nmnt_id:\t25\nino:\t3\n')).toBe(0o2100000)
    expect(isCloseOnExec(0o2100000)).toBe(true)
    expect(isCloseOnExec(0o100002)).toBe(false)
    expect(fdinfoFlags('pos: 0\n')).toBeUndefined()
  })

  it('maps the inherited fds to /dev/null in the free stdio slots, leaving the caller\'s own', () => {
    expect(stdioWithout(['ignore', 'pipe', 'pipe'], [1, 5, 7], 99)).toEqual(['ignore', 'pipe', 'pipe', 'ignore', 'ignore', 99, 'ignore', 99])
    expect(stdioWithout(['ignore', 'pipe', 'pipe', 42], [3, 4], 99)).toEqual(['ignore', 'pipe', 'pipe', 42, 99])
    expect(stdioWithout(['ignore', 'pipe', 'pipe'], [], 99)).toEqual(['ignore', 'pipe', 'pipe'])
  })

  it('finds the fds without close-on-exec, reading each number once', async () => {
    const fd = path.join(root, 'fd')
    const info = path.join(root, 'fdinfo')
    await fsp.mkdir(fd)
    await fsp.mkdir(info)
    const put = (n: number, flags: string): void => {
      fs.writeFileSync(path.join(fd, String(n)), '')
      fs.writeFileSync(path.join(info, String(n)), `pos:\t0\nflags:\t${flags}\n`)
    }
    put(0, '02')
    put(3, '02000002')
    put(30, '0100000')
    put(31, '02')
    fs.writeFileSync(path.join(fd, '40'), '') // gone by the time its fdinfo is read: skipped
    expect(inheritableFds(fd, info)).toEqual([30, 31])
    fs.writeFileSync(path.join(info, '30'), 'flags:\t02000000\n') // not read again
    put(32, '00')
    expect(inheritableFds(fd, info)).toEqual([30, 31, 32])
    expect(inheritableFds(path.join(root, 'none'), info)).toEqual([])
  })
})
