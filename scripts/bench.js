// `npm run bench [-- FILTER]`: runs every bench/*.ts (or those whose name contains FILTER)
// in sequence with `node --import tsx`, passing their JSON-line stdout through, and appends
// each line, with when and on what commit it ran, to bench-results/<date>-<commit>.jsonl:
// figures are kept there and in commit messages, bench/README.md says what they mean.
// Exits non-zero if any benchmark fails (a missed target is reported in its output, not here).
import { spawn, spawnSync } from 'node:child_process'
import { appendFileSync, mkdirSync, readdirSync } from 'node:fs'
import os from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

/**
 * When and on what a line was measured: the bench file, the run's start and the line's time
 * (ISO), the commit and whether the tree differed from it, Node's version, the load average.
 * @typedef {{ bench: string, started: string, time: string, commit: string, dirty: boolean | null, node: string, loadAverage: number[] }} RunInfo
 */

/**
 * A line of a bench's stdout as the results file keeps it: its own fields, then `run`;
 * null when the line is not a JSON object (it is passed through but not recorded).
 * @param {string} line
 * @param {RunInfo} run
 * @returns {string | null}
 */
export function annotate (line, run) {
  let value
  try { value = JSON.parse(line) } catch { return null }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null
  return JSON.stringify({ ...value, run })
}

/**
 * The results file of a run started at `started` (its UTC date) on `commit`.
 * @param {string} root
 * @param {Date} started
 * @param {string} commit
 * @returns {string}
 */
export function resultsFile (root, started, commit) {
  return join(root, 'bench-results', `${started.toISOString().slice(0, 10)}-${commit}.jsonl`)
}

/**
 * The commit checked out (short) and whether the tree differs from it; `unknown` outside git.
 * @param {string} root
 * @returns {{ commit: string, dirty: boolean | null }}
 */
export function gitState (root) {
  const git = (...args) => spawnSync('git', args, { cwd: root, encoding: 'utf8' })
  const head = git('rev-parse', '--short', 'HEAD')
  if (head.error !== undefined || head.status !== 0) return { commit: 'unknown', dirty: null }
  const status = git('status', '--porcelain')
  return { commit: head.stdout.trim(), dirty: status.status === 0 ? status.stdout.trim() !== '' : null }
}

/** How long to wait for a bench's stdout to drain after it exits (a child it left may hold the pipe). */
const DRAIN_MS = 2000

async function main () {
  const root = resolve(import.meta.dirname, '..')
  const filter = process.argv[2]
  const files = readdirSync(join(root, 'bench'))
    .filter(f => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .filter(f => filter === undefined || f.includes(filter))
    .sort()

  if (files.length === 0) {
    console.error(`bench: no bench/*.ts matches ${filter === undefined ? '(none found)' : `"${filter}"`}`)
    process.exit(2)
  }

  const started = new Date()
  const { commit, dirty } = gitState(root)
  const results = resultsFile(root, started, commit)
  mkdirSync(dirname(results), { recursive: true })
  let recorded = 0
  const record = (bench, line) => {
    const run = { bench: `bench/${bench}`, started: started.toISOString(), time: new Date().toISOString(), commit, dirty, node: process.version, loadAverage: os.loadavg().map(x => Math.round(x * 100) / 100) }
    const out = annotate(line, run)
    if (out === null) return
    appendFileSync(results, out + '\n')
    recorded++
  }

  const run = file => new Promise(resolveRun => {
    const child = spawn(process.execPath, ['--import', 'tsx', join('bench', file)], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
    let partial = ''
    let ended = false
    const flush = () => {
      if (partial !== '') record(file, partial)
      partial = ''
    }
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', chunk => {
      process.stdout.write(chunk)
      const lines = (partial + chunk).split('\n')
      partial = lines.pop() ?? ''
      for (const line of lines) record(file, line)
    })
    child.stdout.on('end', () => { ended = true })
    child.on('error', err => { console.error(`bench ${file}: ${err.message}`); resolveRun(1) })
    child.on('exit', (code, signal) => {
      const done = () => { flush(); resolveRun(code ?? (signal !== null ? 1 : 0)) }
      if (ended) return done()
      child.stdout.once('end', done)
      setTimeout(done, DRAIN_MS).unref()
    })
  })

  const failed = []
  for (const file of files) {
    const code = await run(file)
    if (code !== 0) {
      console.error(`bench ${file}: exited with ${code}`)
      failed.push(file)
    }
  }
  console.error(recorded > 0 ? `bench: ${recorded} line${recorded === 1 ? '' : 's'} recorded in ${relative(process.cwd(), results)}` : 'bench: no JSON line to record')
  if (failed.length > 0) {
    console.error(`bench: ${failed.length} of ${files.length} failed: ${failed.join(', ')}`)
    process.exit(1)
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main()
