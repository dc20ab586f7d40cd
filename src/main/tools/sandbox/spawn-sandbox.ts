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
import { launcherArgv, type CallCgroup } from './resource-cgroups'

/** The fd bwrap reads the program from; buildBwrapArgs puts `--add-seccomp-fd 3`. */
export const SECCOMP_FD = 3

export interface SandboxSpawn {
  file: string
  args: string[]
  /** the program bwrap reads on fd 3 (its args must name it) */
  seccomp?: Buffer
  cgroup?: CallCgroup
  /** stdin, stdout, stderr */
  stdio: ['ignore', 'pipe' | 'ignore', 'pipe' | 'ignore']
  options?: Omit<SpawnOptions, 'stdio'>
}

export class SandboxPlacementError extends Error {
  override name = 'SandboxPlacementError'
}

/** Spawns; throws SandboxPlacementError (the child killed) if it could not join the cgroup. */
export function spawnSandbox (s: SandboxSpawn): ChildProcess {
  let file = s.file
  let args = s.args
  const launcher = s.cgroup !== undefined && (s.cgroup.joinsBySelf || s.seccomp === undefined)
  if (launcher && s.cgroup !== undefined) ({ file, args } = launcherArgv(s.cgroup.selfJoinFiles, file, args))
  const child = spawn(file, args, { ...s.options, stdio: s.seccomp === undefined ? s.stdio : [...s.stdio, 'pipe'] })
  if (s.seccomp === undefined) return child
  if (!launcher && s.cgroup !== undefined && child.pid !== undefined) {
    try {
      s.cgroup.join(child.pid)
    } catch (e) {
      child.kill('SIGKILL')
      throw new SandboxPlacementError((e as Error).message, { cause: e })
    }
  }
  ;(child.stdio[SECCOMP_FD] as Writable).end(s.seccomp)
  return child
}
