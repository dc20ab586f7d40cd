/**
 * Starts bwrap with its seccomp program and inside the call's cgroup, so that nothing of
 * the call runs outside either. bwrap reads an `--add-seccomp-fd` program while parsing its
 * arguments, before its first clone (bubblewrap.c since 0.6; `--seccomp FD` is read only
 * later, in the sandbox child): until we write the program to fd 3 it is a single blocked
 * process, and we move it into the cgroup first. Without a program a small shell joins
 * the cgroup and then execs bwrap (one exec more).
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
  if (s.cgroup !== undefined && s.seccomp === undefined) ({ file, args } = launcherArgv(s.cgroup.procsFiles, file, args))
  const child = spawn(file, args, { ...s.options, stdio: s.seccomp === undefined ? s.stdio : [...s.stdio, 'pipe'] })
  if (s.seccomp === undefined) return child
  if (s.cgroup !== undefined && child.pid !== undefined) {
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
