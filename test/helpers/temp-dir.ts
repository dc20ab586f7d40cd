import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

/** Temp directories for one test file; removed by cleanup(). */
export function tempDirs (prefix = 'arbor-test-'): { make: () => Promise<string>; cleanup: () => Promise<void> } {
  const made: string[] = []
  return {
    async make () {
      const d = await fs.mkdtemp(path.join(os.tmpdir(), prefix))
      made.push(d)
      return d
    },
    async cleanup () {
      await Promise.all(made.splice(0).map(d => fs.rm(d, { recursive: true, force: true })))
    }
  }
}

/** Resolves when `check` holds, polling every `everyMs`; rejects after `ms` with `what` in the message. */
export async function until (check: () => boolean | Promise<boolean>, what: string, ms = 10_000, everyMs = 10): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, everyMs))
  }
}
