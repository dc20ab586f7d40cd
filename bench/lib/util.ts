// Helpers shared by the benchmarks (bench/lib is not run as a benchmark itself).
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { type EntryDraft } from '../../src/shared/entry/entry'
import { makeEntry } from '../../src/main/history/store/entry-codec'
import type { Logger } from '../../src/shared/logger'
import { random } from '../../test/helpers/seeded-random'

export { random }

export interface Measurement {
  name: string
  value: number
  unit: string
  [extra: string]: unknown
}

/** One JSON line on stdout per measurement. */
export function emit (m: Measurement): void {
  process.stdout.write(JSON.stringify(m) + '\n')
}

export function median (xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid] as number : ((s[mid - 1] as number) + (s[mid] as number)) / 2
}

/** The p-th percentile (0–100), nearest rank. */
export function percentile (xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p / 100 * s.length) - 1))] as number
}

export function round (x: number, digits = 2): number {
  const f = 10 ** digits
  return Math.round(x * f) / f
}

/** Warnings and errors to stderr, so stdout stays JSON lines. */
export const benchLog: Logger = {
  info: () => undefined,
  warn: m => process.stderr.write(`bench history warning: ${m}\n`),
  error: m => process.stderr.write(`bench history error: ${m}\n`)
}

const WORDS = ('the a of to and in that is for it with as on be this by file function test error return ' +
  'value should could would change update build run type import export module config path line output ' +
  'install package version missing expected actual because then when which after before check fix').split(' ')


/** Deterministic pseudo-random text of min–max bytes (default 200–500, like a chat message). */
export function textMaker (seed = 1, min = 200, max = 500): () => string {
  const rnd = random(seed)
  return () => {
    const target = min + Math.floor(rnd() * (max - min))
    let out = ''
    while (out.length < target) out += (out === '' ? '' : ' ') + WORDS[Math.floor(rnd() * WORDS.length)]
    return out.slice(0, target)
  }
}

/**
 * n drafts continuing a chain from `parent`, alternating user and assistant, each the
 * parent of the next. Ids depend on the timestamp, so the store must be built with
 * `now: () => ts`; the ids are computed here, outside any timing, by the same makeEntry.
 */
export function chain (ctx: { conversation: string; device: string; ts: number }, parent: string, n: number, text: () => string): { drafts: EntryDraft[]; last: string } {
  const drafts: EntryDraft[] = []
  let last = parent
  for (let i = 0; i < n; i++) {
    const draft: EntryDraft = i % 2 === 0
      ? { kind: 'user', body: { text: text() }, parents: [last] }
      : { kind: 'assistant', body: { text: text() }, parents: [last] }
    drafts.push(draft)
    last = makeEntry(draft, ctx).id
  }
  return { drafts, last }
}

/** The repository's root (benchmarks run their children from it). */
export const ROOT = path.resolve(import.meta.dirname, '..', '..')

/**
 * Runs each fn once to warm up, then `runs` rounds of every fn in turn, so a subject and
 * its baseline see the same background load; returns each fn's measured results.
 */
export async function interleave<T> (runs: number, fns: Array<() => Promise<T>>): Promise<T[][]> {
  for (const fn of fns) await fn()
  const out: T[][] = fns.map(() => [])
  for (let i = 0; i < runs; i++) for (const [j, fn] of fns.entries()) (out[j] as T[]).push(await fn())
  return out
}

/** Runs `node ARGS` from the repository's root: wall ms until it exits, exit code and output (`stderr: 'inherit'` passes it through). */
export function runNode (args: string[], opts: { stderr?: 'pipe' | 'inherit' } = {}): Promise<{ ms: number; code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', opts.stderr ?? 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout?.setEncoding('utf8').on('data', (d: string) => { stdout += d })
    child.stderr?.setEncoding('utf8').on('data', (d: string) => { stderr += d })
    child.on('error', reject)
    child.on('close', code => resolve({ ms: performance.now() - t0, code, stdout, stderr }))
  })
}

/** Builds out/ (the CLI the process benchmarks run) if out/main/cli.js is missing. */
export function ensureBuilt (what: string): void {
  if (existsSync(path.join(ROOT, 'out', 'main', 'cli.js'))) return
  process.stderr.write(`${what}: out/main/cli.js is missing; building\n`)
  const b = spawnSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'], shell: process.platform === 'win32' })
  if (b.status !== 0) throw new Error('the build failed')
}

/** The whole `node bin/arbor.js ls --data DIR` process: its wall ms; checks it listed `expected` conversations. */
export async function lsCli (dir: string, expected: number): Promise<number> {
  const r = await runNode(['bin/arbor.js', 'ls', '--data', dir])
  if (r.code !== 0) throw new Error(`arbor ls failed (${r.code}): ${r.stderr}`)
  const lines = r.stdout.split('\n').filter(l => l.trim() !== '').length
  if (lines < expected) throw new Error(`arbor ls printed ${lines} lines for ${expected} conversations`)
  return r.ms
}

/** Wall and CPU time (this process, its storage threads included) since a start(). */
export interface Took { ms: number; cpuMs: number }
export function start (): () => Took {
  const t0 = performance.now()
  const c0 = process.cpuUsage()
  return () => {
    const c = process.cpuUsage(c0)
    return { ms: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 }
  }
}
