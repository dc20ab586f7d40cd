// What each test of a file makes and must undo: call perTest() at the top level of the file.
import { afterEach } from 'vitest'
import { tempDirs } from './temp-dir'

export interface PerTest {
  /** temp directories, removed after each test */
  dirs: ReturnType<typeof tempDirs>
  /** runs these after the test, the last deferred first, before the directories are removed */
  defer: (...fns: Array<() => Promise<void> | void>) => void
}

/** Registers the file's afterEach hook: what was deferred runs (in reverse order), then the directories go. */
export function perTest (prefix?: string): PerTest {
  const dirs = tempDirs(prefix)
  const deferred: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const fn of deferred.splice(0).reverse()) await fn()
    await dirs.cleanup()
  })
  return { dirs, defer: (...fns) => { deferred.push(...fns) } }
}
