import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import type { ExitReason, RunningChild } from './types'

export interface ProcessChildOptions extends Omit<SpawnOptions, 'detached'> {
  /** Signal the whole process group (the child and everything it started). Default true. */
  group?: boolean
}

/**
 * A child that is an OS process. shutdown() sends SIGTERM, kill() SIGKILL, to the
 * process group by default so a shell's own children go too. Resolves once spawned; a
 * command that cannot be spawned (not found, no permission) is a failed start.
 */
export async function processChild (command: string, args: string[], opts: ProcessChildOptions = {}): Promise<RunningChild & { process: ChildProcess }> {
  const group = opts.group ?? process.platform !== 'win32'
  const { group: _g, ...spawnOpts } = opts
  const child = spawn(command, args, { ...spawnOpts, detached: group })
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve)
    child.once('error', err => reject(new Error(`cannot start ${command}: ${err.message}`, { cause: err })))
  })
  let asked: 'shutdown' | 'killed' | null = null
  const exit = new Promise<ExitReason>(resolve => {
    child.once('exit', (code, signal) => {
      if (asked === 'killed' && signal === 'SIGKILL') resolve({ kind: 'killed' })
      else if (asked === 'shutdown' && (code === 0 || signal === 'SIGTERM')) resolve({ kind: 'shutdown' })
      else if (code === 0) resolve({ kind: 'normal' })
      else resolve({ kind: 'error', error: new Error(signal !== null ? `${command} was killed by ${signal}` : `${command} exited with code ${String(code)}`) })
    })
  })
  const signal = (sig: NodeJS.Signals): void => {
    if (child.exitCode !== null || child.signalCode !== null) return
    try {
      if (group && child.pid !== undefined) process.kill(-child.pid, sig)
      else child.kill(sig)
    } catch (err) {
      // ESRCH: it exited between the check and the signal.
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err
    }
  }
  return {
    process: child,
    exit,
    shutdown () { if (asked === null) { asked = 'shutdown'; signal('SIGTERM') } },
    kill () { asked = 'killed'; signal('SIGKILL') }
  }
}
