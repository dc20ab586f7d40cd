/**
 * File descriptors this process holds without close-on-exec pass through child_process.spawn
 * into bwrap and on into the sandbox: libuv closes nothing it did not open, and bwrap keeps
 * what it inherits. Such fds come from whoever started the node (`arbor serve 30<secret`, a
 * parent's pipe; Node itself marks only the lowest numbers close-on-exec). The spawn of a
 * command maps each of them to /dev/null in the child instead (a stdio slot is dup2'ed over
 * the inherited fd before exec), which leaves this process's own fds untouched.
 *
 * Found in /proc/self/fdinfo/N (`flags:`, octal, O_CLOEXEC = 02000000). A number is read
 * once: fds are inherited only at start, and everything Node and libuv open later is
 * close-on-exec, so only new numbers cost a read (a number once seen inheritable stays
 * mapped to /dev/null, which costs nothing should it be reused).
 */
import fs from 'node:fs'

const O_CLOEXEC = 0o2000000

/** The open flags in an fdinfo text, or undefined if it has none. Pure. */
export function fdinfoFlags (text: string): number | undefined {
  const m = /^flags:\s*([0-7]+)\s*$/m.exec(text)
  return m === null ? undefined : parseInt(m[1] as string, 8)
}

export function isCloseOnExec (flags: number): boolean {
  return (flags & O_CLOEXEC) !== 0
}

export type StdioSlot = 'ignore' | 'pipe' | 'inherit' | number | null | undefined

/**
 * `stdio` with every slot in `leaked` that the caller left free (absent, null or 'ignore',
 * which libuv leaves open above 2) pointing at `devNull`. Pure.
 */
export function stdioWithout (stdio: readonly StdioSlot[], leaked: readonly number[], devNull: number): StdioSlot[] {
  const out = [...stdio]
  for (const fd of leaked) {
    if (fd < 3) continue
    while (out.length <= fd) out.push('ignore')
    const cur = out[fd]
    if (cur === undefined || cur === null || cur === 'ignore') out[fd] = devNull
  }
  return out
}

/** per fdinfo directory: fd number → inheritable, as first read */
const seenIn = new Map<string, Map<number, boolean>>()
let devNullFd: number | undefined

/** This process's fds above 2 that a spawned child would inherit (none where /proc is missing). */
export function inheritableFds (procFd = '/proc/self/fd', procFdinfo = '/proc/self/fdinfo'): number[] {
  let names: string[]
  try { names = fs.readdirSync(procFd) } catch { return [] }
  let seen = seenIn.get(procFdinfo)
  if (seen === undefined) seenIn.set(procFdinfo, seen = new Map())
  const out: number[] = []
  for (const n of names) {
    const fd = Number(n)
    if (!Number.isInteger(fd) || fd < 3) continue
    let leaks = seen.get(fd)
    if (leaks === undefined) {
      let text: string
      try { text = fs.readFileSync(`${procFdinfo}/${n}`, 'latin1') } catch { continue } // the directory's own fd, gone by now
      const flags = fdinfoFlags(text)
      leaks = flags === undefined || !isCloseOnExec(flags)
      seen.set(fd, leaks)
    }
    if (leaks) out.push(fd)
  }
  return out.sort((a, b) => a - b)
}

/**
 * The stdio option for spawning a command: `stdio` plus /dev/null over every inheritable fd
 * of this process.
 */
export function stdioClosingInherited (stdio: readonly StdioSlot[]): StdioSlot[] {
  const leaked = inheritableFds()
  if (leaked.length === 0) return [...stdio]
  devNullFd ??= fs.openSync('/dev/null', 'r+') // opened close-on-exec, as libuv opens everything
  return stdioWithout(stdio, leaked.filter(fd => fd !== devNullFd), devNullFd)
}
