/**
 * Starts bwrap with its seccomp program and inside the call's cgroup, so that nothing of
 * the call runs outside either. Two ways in:
 * - cgroup v1: a small shell moves itself (its only thread: no global lock, see
 *   CallCgroup.selfJoinFiles) and execs bwrap; one exec, but 10+ ms cheaper than a move
 *   from outside;
 * - cgroup v2: bwrap reads an `--add-seccomp-fd` program while parsing its arguments,
 *   before its first clone (bubblewrap.c since 0.6; `--seccomp FD` is read later, in the
 *   sandbox child): until we write the program to fd 3 it is a single blocked process, and
 *   we move it into the cgroup first. Without a program, the shell again.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import type { Writable } from 'node:stream'
import { stdioClosingInherited } from './inherited-fds'
import { launcherArgv, type CallCgroup } from './resource-cgroups'

/** The fd bwrap reads the program from; buildBwrapArgs puts `--add-seccomp-fd 3`. */
export const SECCOMP_FD = 3
/** A spare sandbox's channel (spare-sandbox.ts): a socket its waiting shell reads the command from. */
export const CHANNEL_FD = 4

export interface SandboxSpawn {
  file: string
  args: string[]
  /** the program bwrap reads on fd 3 (its args must name it) */
  seccomp?: Buffer
  cgroup?: CallCgroup
  /** stdin, stdout, stderr */
  stdio: ['ignore', 'pipe' | 'ignore', 'pipe' | 'ignore']
  options?: Omit<SpawnOptions, 'stdio'>
  /** how bwrap enters the cgroup (default: the launcher on v1, the move from outside on v2; tests force either) */
  join?: 'launcher' | 'move'
  /** a socket on fd 4 (CHANNEL_FD), for a spare sandbox's waiting shell */
  channel?: boolean
}

export class SandboxPlacementError extends Error {
  override name = 'SandboxPlacementError'
}

/**
 * Spawns. A v1 launcher that cannot join exits 125 saying so; a v2 move that fails kills
 * bwrap and emits the SandboxPlacementError as the child's 'error'. The v2 move runs off the
 * event loop (it waits for an RCU grace period in the kernel).
 */
export function spawnSandbox (s: SandboxSpawn): ChildProcess {
  let file = s.file
  let args = s.args
  const launcher = s.cgroup !== undefined && (s.seccomp === undefined || (s.join ?? (s.cgroup.joinsBySelf ? 'launcher' : 'move')) === 'launcher')
  if (launcher && s.cgroup !== undefined) ({ file, args } = launcherArgv(s.cgroup.selfJoinFiles, file, args))
  // fd 3 carries the program, fd 4 a spare's channel; any fd this process inherited without close-on-exec becomes /dev/null in the child
  const extra = s.channel === true ? [s.seccomp === undefined ? 'ignore' as const : 'pipe' as const, 'pipe' as const] : s.seccomp === undefined ? [] : ['pipe' as const]
  const stdio = stdioClosingInherited([...s.stdio, ...extra])
  const child = spawn(file, args, { ...s.options, stdio: stdio as SpawnOptions['stdio'] })
  const seccomp = s.seccomp
  if (seccomp === undefined) return child
  const programFd = child.stdio[SECCOMP_FD] as Writable
  // bwrap that dies before reading its program (a refused option, a kill) is reported by its exit; the pipe's EPIPE says nothing more
  programFd.on('error', (e: NodeJS.ErrnoException) => { if (e.code !== 'EPIPE' && e.code !== 'ECONNRESET') child.emit('error', e) })
  const release = (): void => { programFd.end(seccomp) }
  const cg = s.cgroup
  if (launcher || cg === undefined || child.pid === undefined) release()
  else {
    const pid = child.pid
    cg.joinAsync(pid).then(release, (e: Error) => {
      child.kill('SIGKILL')
      child.emit('error', new SandboxPlacementError(e.message, { cause: e }))
    })
  }
  return child
}
