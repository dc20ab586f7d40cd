// Small JSON files in the data directory (settings, secrets): read with errors a user can
// act on, written whole or not at all.
import fsp from 'node:fs/promises'
import path from 'node:path'

/** The parsed file; undefined when it does not exist. Errors name the file and say what to do. */
export async function readJsonFile (file: string, makeError: (message: string) => Error = m => new Error(m)): Promise<unknown> {
  let text: string
  try {
    text = await fsp.readFile(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw makeError(`cannot read ${file}: ${(err as Error).message}`)
  }
  try {
    return JSON.parse(text) as unknown
  } catch (err) {
    throw makeError(`${file} is not valid JSON (${(err as Error).message}); fix or delete it`)
  }
}

/** Writes a file whole or not at all, with `mode` from its first byte. */
export async function writeFileAtomic (file: string, text: string, mode: number): Promise<void> {
  await fsp.mkdir(path.dirname(file), { recursive: true })
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
  try {
    await fsp.writeFile(tmp, text, { mode })
    await fsp.chmod(tmp, mode) // exactly this mode, whatever the umask
    await fsp.rename(tmp, file)
  } catch (err) {
    await fsp.rm(tmp, { force: true })
    throw err
  }
}
