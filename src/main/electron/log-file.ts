// The desktop app's log: main's own lines and the node's output, in one file the user can
// be pointed to when something goes wrong (and on stderr, for `npm start` in a terminal).
import fs from 'node:fs'
import path from 'node:path'
import type { Logger } from '../../shared/logger'

/** Past this size the log is moved to <file>.1 when the app starts. */
const MAX_BYTES = 5 * 1024 * 1024

export interface LogFile {
  readonly file: string
  /** a Logger whose lines say which part of the app wrote them */
  for (component: string): Logger
}

export function openLogFile (file: string, opts: { echo?: (line: string) => void } = {}): LogFile {
  const echo = opts.echo ?? (line => { process.stderr.write(line) })
  let writable = true
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true })
    if ((fs.statSync(file, { throwIfNoEntry: false })?.size ?? 0) > MAX_BYTES) fs.renameSync(file, `${file}.1`)
  } catch (err) {
    writable = false
    echo(`arbor: cannot write the log ${file}: ${(err as Error).message}\n`)
  }
  const write = (level: string, component: string, message: string): void => {
    const line = `${new Date().toISOString()} ${level} ${component}: ${message}\n`
    echo(line)
    if (!writable) return
    try {
      // Appended synchronously: the lines before a crash are the ones that matter.
      fs.appendFileSync(file, line, { mode: 0o600 })
    } catch (err) {
      writable = false
      echo(`arbor: cannot write the log ${file} any more: ${(err as Error).message}\n`)
    }
  }
  return {
    file,
    for: component => ({
      info: m => { write('info', component, m) },
      warn: m => { write('warn', component, m) },
      error: m => { write('error', component, m) }
    })
  }
}
