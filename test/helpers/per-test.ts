// What each test of a file makes and must undo: call perTest() at the top level of the file.
import { afterEach } from 'vitest'
import { tempDirs } from './temp-dir'

export interface PerTest {
  /** temp directories, removed after each test */
  dirs: ReturnType<typeof tempDirs>
  /** runs these after the test, the last deferred first, every one even when one before it fails (the first error is thrown), before the directories are removed */
  defer: (...fns: Array<() => Promise<void> | void>) => void
}

/** Registers the file's afterEach hook: what was deferred runs (in reverse order), then the directories go. */
export function perTest (prefix?: string): PerTest {
  const dirs = tempDirs(prefix)
  const deferred: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    // every cleanup runs (a mounted disk's unmount, deferred first, runs last), then the directories go
    const errors: unknown[] = []
    for (const fn of deferred.splice(0).reverse()) {
      try { await fn() } catch (err) { errors.push(err) }
    }
    await dirs.cleanup()
    if (errors.length > 0) throw errors[0]
  })
  return { dirs, defer: (...fns) => { deferred.push(...fns) } }
}
