/**
 * Spare sandboxes: the next call's bwrap, set up ahead of that call (namespaces, mounts, the
 * seccomp filter, its cgroup joined) and waiting for its command. Setting up a sandbox costs
 * this machine ~10 ms, nearly all of it bwrap's own work (it re-reads the mount table after
 * every bind mount, and creates six namespaces); a spare takes that off the call's path: the
 * call writes its command to the waiting shell, which becomes `bash -c COMMAND` exactly as
 * a freshly started sandbox would.
 *
 * A spare is made after a call has ended, from a plan made then, and serves a later call only
 * if that call's own plan is the same: the same bwrap arguments before `--` (so the same
 * working directory, masks, git pins, read-only files and environment) and the same limits;
 * and if nothing those arguments mount has been replaced since — every path keeps its device,
 * inode and birth time, and the host's mount table is unchanged. Otherwise the spare is
 * dropped and the call starts a sandbox of its own. Nothing runs in a spare before its
 * command arrives (the waiting shell only reads it), so what the call's plan sees is what
 * the spare's mounts were made from.
 *
 * Sandboxed commands themselves are kept out of that window: a spare is not made while a
 * call runs whose working directory overlaps its own (contains it or lies inside it), and a
 * call starting in such a directory drops the spare. So between a spare's plan and its use,
 * only the host (the user, the file tools, git) can have changed its directory, and that is
 * what the checks above see.
 */
import type { ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import type { Readable, Writable } from 'node:stream'
import { isInside } from './hidden-paths'
import type { CallCgroup } from './resource-cgroups'
import { CHANNEL_FD, spawnSandbox } from './spawn-sandbox'

/**
 * The spare's shell (`bash -c SPARE_WAITER`): says it is ready on fd 4, reads
 * `LENGTH\nCOMMAND` from it (LENGTH in bytes, read as such under LC_ALL=C; `read -N` takes
 * them in one read), closes it and execs `bash -c COMMAND`. A short or malformed message
 * (the node died mid-write) runs nothing.
 */
export const SPARE_WAITER = 'printf r >&4 || exit 125; LC_ALL=C; IFS= read -r -u 4 n || exit 125; case $n in ""|*[!0-9]*) exit 125;; esac; ' +
  'IFS= read -r -u 4 -N "$n" c && [ "${#c}" = "$n" ] || exit 125; unset LC_ALL n; exec 4<&-; exec bash -c "$c"'

/** The kernel's limit on one argument (MAX_ARG_STRLEN, with its NUL): a longer command fails to start, as a fresh spawn's does. */
export const MAX_ARGUMENT_BYTES = 32 * 4096

/** Whether a spare can run `command` as `bash -c` would: no NUL, and short enough to be an argument. */
export function spareCanRun (command: string): boolean {
  return !command.includes('\0') && Buffer.byteLength(command, 'utf8') < MAX_ARGUMENT_BYTES
}

/** What a call's plan must equal for a spare to serve it: bwrap, its arguments up to `-- SHELL -c`, the environment, and `more` (the limits). */
export function spareKey (file: string, args: readonly string[], env: Record<string, string>, more: unknown): string {
  const end = args.indexOf('--')
  if (end < 0) throw new Error('bwrap arguments without -- COMMAND')
  return JSON.stringify([file, args.slice(0, end + 3), env, more])
}

/**
 * The identity of what a sandbox mounts from: each path's device, inode and birth time (a
 * path renamed away and replaced, or deleted and made again, changes it), and the host's
 * mount table (mounts made or removed since change what `--ro-bind / /` shows).
 */
export function mountFingerprint (mounted: readonly string[], mountinfo = '/proc/self/mountinfo'): string {
  const ids = mounted.map(p => {
    try {
      const st = fs.lstatSync(p, { bigint: true, throwIfNoEntry: false })
      return st === undefined ? '-' : `${st.dev}:${st.ino}:${st.birthtimeNs}`
    } catch { return '?' }
  })
  let table: string
  try { table = fs.readFileSync(mountinfo, 'latin1') } catch { table = '?' }
  return `${ids.join(' ')}\n${table}`
}

export interface SpareRecipe {
  /** one spare per slot (bwrap and the working directory) */
  slot: string
  /** its canonical working directory */
  cwd: string
  /** spareKey of its plan */
  key: string
  /** the host paths its arguments bind or mask (SandboxPlan.mounted) */
  mounted: string[]
  file: string
  /** bwrap's arguments, ending in `-- bash -c SPARE_WAITER` */
  args: string[]
  env: Record<string, string>
  seccomp?: Buffer
  /** makes the call's cgroup, which the spare joins (throws when it cannot) */
  cgroup?: () => CallCgroup
}

/** Why a spare was not used. */
export type SpareDrop = 'plan' | 'changed' | 'exited' | 'spoke' | 'overlap' | 'busy' | 'idle' | 'evicted' | 'closed' | 'failed'

const EARLY_MAX = 4096

/** One waiting sandbox. After `claim`, its child is the call's (listeners, kill, cgroup). */
export class Spare {
  readonly child: ChildProcess
  ready = false
  /** ms from the spawn to the shell's "ready" */
  readyMs: number | undefined
  private readonly made = performance.now()
  /** what it printed before its command: nothing, from a healthy one */
  private early = ''
  private readonly channel: Writable & Readable
  private readonly onEarly = (b: Buffer): void => { if (this.early.length < EARLY_MAX) this.early += b.toString('latin1') }
  private claimed = false

  constructor (r: SpareRecipe, readonly cgroup: CallCgroup | undefined, readonly fingerprint: string) {
    this.child = spawnSandbox({
      file: r.file,
      args: r.args,
      stdio: ['ignore', 'pipe', 'pipe'],
      options: { cwd: '/', env: r.env, detached: true },
      channel: true,
      ...(r.seccomp !== undefined ? { seccomp: r.seccomp } : {}),
      ...(cgroup !== undefined ? { cgroup } : {})
    })
    this.channel = this.child.stdio[CHANNEL_FD] as Writable & Readable
    this.channel.on('data', (b: Buffer) => {
      if (this.claimed || this.ready || !b.includes(0x72)) return
      this.ready = true
      this.readyMs = performance.now() - this.made
    })
    // a spare that died is reported by its exit; a write into its closed channel says nothing more
    this.channel.on('error', () => undefined)
    this.child.stdout?.on('data', this.onEarly)
    this.child.stderr?.on('data', this.onEarly)
    this.child.on('error', () => undefined) // a spawn that failed: its exit follows, and the call starts its own
    this.setRef(false)
  }

  /** Still waiting, and silent so far. */
  get usable (): boolean {
    return this.child.pid !== undefined && this.child.exitCode === null && this.child.signalCode === null && this.early === '' && !this.claimed
  }

  get spoke (): boolean { return this.early !== '' }
  /** what it printed before its command, for the pool's record */
  get said (): string { return this.early }

  /** The child becomes the caller's: its output listeners go, it keeps the node alive again. */
  claim (): ChildProcess {
    this.claimed = true
    this.child.stdout?.off('data', this.onEarly)
    this.child.stderr?.off('data', this.onEarly)
    this.setRef(true)
    return this.child
  }

  /** Hands the command to the waiting shell (after claim and the caller's listeners). */
  send (command: string): void {
    const body = Buffer.from(command, 'utf8')
    this.channel.end(Buffer.concat([Buffer.from(`${body.length}\n`), body]))
  }

  /** Kills it and removes its cgroup. */
  async kill (): Promise<void> {
    const pid = this.child.pid
    if (pid !== undefined && this.child.exitCode === null && this.child.signalCode === null) {
      this.setRef(true) // whoever waits for this waits for the exit
      const exited = new Promise(resolve => this.child.once('exit', resolve))
      // its process group (it was started detached): bwrap, whose death ends the sandbox inside
      try { process.kill(-pid, 'SIGKILL') } catch { this.child.kill('SIGKILL') }
      await exited
    }
    await this.cgroup?.remove()
  }

  // an idle spare must not keep the node running; bwrap's --die-with-parent ends it with the node
  private setRef (on: boolean): void {
    const handles: Array<{ ref?: () => void; unref?: () => void } | null | undefined> = [this.child, ...this.child.stdio as unknown as Array<{ ref?: () => void; unref?: () => void } | null>]
    for (const h of handles) (on ? h?.ref : h?.unref)?.call(h)
  }
}

export interface SparePoolOptions {
  /** a spare unused this long is dropped (default 5 min) */
  idleMs?: number
  /** at most this many spares at once, the least recently made dropped first (default 8) */
  max?: number
}

interface Slot { spare: Spare; key: string; cwd: string; timer: ReturnType<typeof setTimeout> }

const overlaps = (a: string, b: string): boolean => isInside(a, b) || isInside(b, a)

/** The spares of this process, one per slot. */
export class SparePool {
  private readonly slots = new Map<string, Slot>()
  /** spares about to be prepared (by working directory), and spares being killed */
  private readonly preparing = new Map<Promise<void>, { cwd: string; cancelled: boolean }>()
  private readonly pending = new Set<Promise<void>>()
  /** working directories of the sandboxed calls running now */
  private readonly running = new Map<symbol, string>()
  private readonly idleMs: number
  private readonly max: number
  readonly stats = {
    made: 0,
    used: 0,
    dropped: {} as Partial<Record<SpareDrop, number>>,
    lastError: undefined as string | undefined,
    /** the node's own time making the last spare (plan, fingerprint, cgroup, spawn) */
    lastPrepareMs: undefined as number | undefined
  }

  constructor (o: SparePoolOptions = {}) {
    this.idleMs = o.idleMs ?? 5 * 60_000
    this.max = o.max ?? 8
  }

  /**
   * The slot's spare, if its plan is `key` and what `mounted` names is what it was when the
   * spare was planned; a spare that does not fit is dropped. Synchronous: nothing can change
   * between the check and the caller's claim.
   */
  take (slot: string, key: string, mounted: readonly string[]): Spare | undefined {
    const s = this.slots.get(slot)
    if (s === undefined) return undefined
    this.slots.delete(slot)
    clearTimeout(s.timer)
    const why: SpareDrop | undefined = s.key !== key
      ? 'plan'
      : !s.spare.usable ? (s.spare.spoke ? 'spoke' : 'exited') : mountFingerprint(mounted) !== s.spare.fingerprint ? 'changed' : undefined
    if (why !== undefined) {
      this.drop(s.spare, why)
      return undefined
    }
    this.stats.used++
    return s.spare
  }

  /**
   * A sandboxed call in `cwd` is about to start (after its own `take`): spares whose
   * directory overlaps it are dropped, and none is made there until the returned function is
   * called (when the call's sandbox is gone and its check is done).
   */
  enter (cwd: string): () => void {
    // a spare still to be made here would be planned while this call runs: the call that ends makes it
    for (const job of this.preparing.values()) if (overlaps(job.cwd, cwd) && !job.cancelled) { job.cancelled = true; this.count('busy') }
    for (const [slot, s] of this.slots) {
      if (!overlaps(s.cwd, cwd)) continue
      this.slots.delete(slot)
      clearTimeout(s.timer)
      this.drop(s.spare, 'overlap')
    }
    const token = Symbol(cwd)
    this.running.set(token, cwd)
    return () => { this.running.delete(token) }
  }

  /** Makes the slot's spare, unless it has one. The fingerprint is taken before bwrap mounts anything. */
  prepare (r: SpareRecipe): void {
    if (this.slots.has(r.slot) || this.max < 1) return
    if ([...this.running.values()].some(c => overlaps(c, r.cwd))) {
      this.count('busy') // a command could be changing what the plan read; the call that ends last makes it
      return
    }
    if (this.slots.size >= this.max) {
      const [oldest, s] = this.slots.entries().next().value as [string, Slot]
      this.slots.delete(oldest)
      clearTimeout(s.timer)
      this.drop(s.spare, 'evicted')
    }
    const fingerprint = mountFingerprint(r.mounted)
    let cg: CallCgroup | undefined
    try {
      cg = r.cgroup?.()
    } catch (e) {
      // the call that would have used it makes its own cgroup, and says why it cannot
      this.count('failed')
      this.stats.lastError = (e as Error).message
      return
    }
    const spare = new Spare(r, cg, fingerprint)
    this.stats.made++
    const timer = setTimeout(() => {
      if (this.slots.get(r.slot)?.spare !== spare) return
      this.slots.delete(r.slot)
      this.drop(spare, 'idle')
    }, this.idleMs)
    timer.unref()
    spare.child.once('exit', () => {
      const s = this.slots.get(r.slot)
      if (s?.spare !== spare) return
      this.slots.delete(r.slot)
      clearTimeout(s.timer)
      this.drop(spare, spare.spoke ? 'spoke' : 'exited')
    })
    this.slots.set(r.slot, { spare, key: r.key, cwd: r.cwd, timer })
  }

  /**
   * Prepares a spare for working directory `cwd` from the recipe `make` gives, on the next
   * turn of the event loop: the call that ended returns first, and a call that starts there
   * before then (the next of several tool calls in one step) runs without it rather than
   * wait for it. A plan that fails here fails again, and says so, in the next call's own.
   */
  prepareSoon (cwd: string, make: () => SpareRecipe | undefined): void {
    const job = { cwd, cancelled: false }
    const p = new Promise<void>(resolve => setImmediate(() => {
      if (job.cancelled) return resolve()
      const t0 = performance.now()
      try {
        const r = make()
        if (r !== undefined) this.prepare(r)
      } catch (e) {
        this.stats.lastError = (e as Error).message
      }
      this.stats.lastPrepareMs = performance.now() - t0
      resolve()
    })).finally(() => this.preparing.delete(p))
    this.preparing.set(p, job)
  }

  /** Resolves once the spares asked for so far are made: a call that starts right after another takes the one it left. */
  async prepared (): Promise<void> {
    if (this.preparing.size > 0) await Promise.all([...this.preparing.keys()])
  }

  /** Spares waiting now, by slot (for tests and the bench). */
  get waiting (): number { return this.slots.size }

  /** Whether a spare for working directory `cwd` (canonical) is waiting and has said it is ready. */
  readyIn (cwd: string): boolean {
    return this.spareIn(cwd)?.ready === true
  }

  /** The waiting spare for working directory `cwd` (canonical), if any (tests and the bench look, never take). */
  spareIn (cwd: string): Spare | undefined {
    return [...this.slots.values()].find(s => s.cwd === cwd && s.spare.usable)?.spare
  }

  /** Drops every spare and waits until they and their cgroups are gone. */
  async close (): Promise<void> {
    await this.prepared()
    for (const [slot, s] of this.slots) {
      this.slots.delete(slot)
      clearTimeout(s.timer)
      this.drop(s.spare, 'closed')
    }
    await Promise.all([...this.pending])
  }

  private count (why: SpareDrop): void {
    this.stats.dropped[why] = (this.stats.dropped[why] ?? 0) + 1
  }

  private drop (spare: Spare, why: SpareDrop): void {
    this.count(why)
    if (why === 'spoke' || why === 'exited') this.stats.lastError = `a spare sandbox ended before its call (exit ${spare.child.exitCode ?? spare.child.signalCode})${spare.said === '' ? '' : `: ${spare.said.trim()}`}`
    // a cgroup that could not be removed stays until this process's end (then the next probe removes it as stale)
    const p = spare.kill().catch((e: Error) => { this.stats.lastError = e.message }).finally(() => this.pending.delete(p))
    this.pending.add(p)
  }
}

/** The process's pool: every bash tool shares it (a slot is bwrap and a working directory). */
export const spareSandboxes = new SparePool()

/** Drops every spare sandbox of this process (tests; shutdown). */
export function closeSpareSandboxes (): Promise<void> {
  return spareSandboxes.close()
}
