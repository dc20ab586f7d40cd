// A file system of its own for tests of a full disk: a size-limited tmpfs mounted on a temp
// directory (the tests run as root, here and in CI). Where mounting is impossible the tests
// skip and say why; in CI (CI is set) the import throws instead: CI must run them.
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/** Why a small disk cannot be made here, or null when it can. */
export const smallDiskProblem: string | null = probe()
if (smallDiskProblem !== null && process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false') {
  throw new Error(`the full-disk tests must run in CI, but no tmpfs can be mounted: ${smallDiskProblem}`)
}

export interface SmallDisk {
  /** the mount point: everything under it lives on the small disk */
  dir: string
  /** bytes a new file could still get */
  freeBytes: () => number
  /** Fills the disk until a write fails (or until only `leaveBytes` are free); returns the bytes taken. */
  fill: (leaveBytes?: number) => number
  /** Gives back what fill took. */
  free: () => void
  unmount: () => void
}

const MiB = 1024 * 1024

/** Mounts a tmpfs of `sizeMiB` on a fresh temp directory. */
export function smallDisk (sizeMiB: number): SmallDisk {
  if (smallDiskProblem !== null) throw new Error(`no small disk here: ${smallDiskProblem}`)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbor-small-disk-'))
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' })
  const fillers: string[] = []
  const freeBytes = (): number => { const s = fs.statfsSync(dir); return s.bavail * s.bsize }
  let mounted = true
  return {
    dir,
    freeBytes,
    fill (leaveBytes = 0) {
      const file = path.join(dir, `filler-${fillers.length}`)
      fillers.push(file)
      const fd = fs.openSync(file, 'w')
      let taken = 0
      try {
        const big = Buffer.alloc(MiB, 0x5a)
        // bounded: never more than the disk's size
        for (let i = 0; i <= sizeMiB && freeBytes() - leaveBytes >= MiB; i++) taken += fs.writeSync(fd, big)
        const page = Buffer.alloc(4096, 0x5a)
        for (let i = 0; i < 256 + MiB / 4096 && freeBytes() > leaveBytes; i++) taken += fs.writeSync(fd, page)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
      } finally {
        fs.closeSync(fd)
      }
      return taken
    },
    free () {
      for (const f of fillers.splice(0)) fs.rmSync(f, { force: true })
    },
    unmount () {
      if (!mounted) return
      mounted = false
      try {
        execFileSync('umount', [dir], { stdio: 'pipe' })
      } catch {
        // something still holds a file there (a store a failed test did not close): detach it
        execFileSync('umount', ['-l', dir], { stdio: 'pipe' })
      }
      fs.rmdirSync(dir)
    }
  }
}

function probe (): string | null {
  if (process.platform !== 'linux') return `mounting a tmpfs needs Linux (this is ${process.platform})`
  let dir: string | undefined
  try {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbor-small-disk-probe-'))
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'pipe' })
    execFileSync('umount', [dir], { stdio: 'pipe' })
    return null
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string }
    return `mount -t tmpfs failed (${(e.stderr?.toString().trim() ?? '') || e.message}); the tests need root (or CAP_SYS_ADMIN)`
  } finally {
    try {
      if (dir !== undefined) fs.rmdirSync(dir)
    } catch {
      // still mounted (umount failed): left in the temp directory, named as a probe
    }
  }
}
