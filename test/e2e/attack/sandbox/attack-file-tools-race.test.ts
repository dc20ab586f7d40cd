/**
 * Attack: race the file tools. A real concurrent process (as a sandboxed bash of another
 * conversation, or a background job, in the same working directory could be) flips a
 * directory component between a real directory and a symlink leading out of the working
 * directory, in a tight loop, while read_file, write_file, edit_file and list_dir go through
 * that component many times. A check-then-use tool loses this race; one that opens beneath
 * the working directory without following links cannot. Bounded in attempts and in time.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BACKENDS } from '../../../../src/main/tools/paths/beneath'
import { createFileTools } from '../../../../src/main/tools/file-tools'
import type { Tool, ToolContext, ToolResult } from '../../../../src/main/tools/tool'
import { until } from '../../../helpers/temp-dir'

const SECRET_KEY = 'FAKE-PRIVATE-KEY-5b2f9c1e'
const OUTSIDE = 'OUTSIDE-CONTENT-77a1c3d0'
const ROUNDS = Number(process.env.ARBOR_RACE_ROUNDS ?? 300) // each round: every attack once, at once
const BUDGET_MS = 30_000 // a loaded machine gets fewer rounds, not a failure
// ARBOR_RACE_BACKEND=path races the fallback for platforms without /proc instead (it narrows
// the window, it does not close it: see beneath.ts); the default is this platform's own.
const backend = process.env.ARBOR_RACE_BACKEND === 'path' ? BACKENDS.path : undefined

/**
 * The racer: renames `real` to `name`, back, `link` to `name`, back, for every pair, as
 * fast as it can, until its deadline or its parent is gone. Writes 'ready' once it loops and
 * its count of flips every thousand rounds.
 */
const RACER = `
const fs = require('node:fs')
const [dir, deadline, ...names] = process.argv.slice(1)
const parent = process.ppid
const end = Number(deadline)
let strays = 0
// a tool may have created the name while it was missing (write_file makes parents): move that aside
// (again while a tool keeps making it: a directory there refuses the rename with ENOTEMPTY)
function put (from, to) {
  for (let tries = 0; ; tries++) {
    try { fs.renameSync(from, to); return } catch (e) {
      if (e.code === 'ENOENT' || tries >= 100) throw e
      try { fs.renameSync(to, to + '.stray-' + strays++) } catch (e2) { if (e2.code !== 'ENOENT') throw e2 }
    }
  }
}
process.stdout.write('ready\\n')
let flips = 0
for (let i = 0; Date.now() < end; i++) {
  for (const n of names) {
    const p = dir + '/' + n
    put(p + '.real', p); fs.renameSync(p, p + '.real')
    put(p + '.link', p); fs.renameSync(p, p + '.link')
    flips++
  }
  if (i % 1000 === 0) {
    if (process.ppid !== parent) break
    process.stdout.write('flips ' + flips + ' strays ' + strays + '\\n')
  }
}
`

let root: string
let home: string
let proj: string
let outside: string
let tools: Record<string, Tool>
const children: ChildProcess[] = []

beforeAll(async () => {
  root = await fsp.realpath(await fsp.mkdtemp('/var/tmp/arbor-race-'))
  home = path.join(root, 'home')
  proj = path.join(root, 'proj')
  outside = path.join(root, 'outside')
  for (const d of [path.join(home, '.ssh'), path.join(proj, 'd.real'), path.join(proj, 'h.real'), outside]) await fsp.mkdir(d, { recursive: true })
  await fsp.writeFile(path.join(home, '.ssh', 'id_rsa'), SECRET_KEY)
  await fsp.writeFile(path.join(outside, 'f'), OUTSIDE)
  await fsp.writeFile(path.join(outside, 'outside-only.txt'), OUTSIDE)
  await fsp.writeFile(path.join(outside, 'e.txt'), 'ORIGINAL')
  await fsp.writeFile(path.join(proj, 'd.real', 'f'), 'inside')
  await fsp.writeFile(path.join(proj, 'd.real', 'e.txt'), 'ORIGINAL')
  await fsp.writeFile(path.join(proj, 'h.real', 'benign.txt'), 'inside')
  await fsp.symlink(outside, path.join(proj, 'd.link'))
  await fsp.symlink(path.join(home, '.ssh'), path.join(proj, 'h.link'))
  tools = Object.fromEntries(createFileTools({ home, backend }).map(t => [t.name, t]))
})

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  if (root !== undefined) await fsp.rm(root, { recursive: true, force: true })
})

function stamp (file: string): string {
  const st = fs.lstatSync(file, { bigint: true })
  return `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`
}

/** Everything under dir: path -> (inode, size, mtime), to see any write at all. */
function snapshot (dir: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const name of fs.readdirSync(dir, { recursive: true }) as string[]) {
    out.set(name, stamp(path.join(dir, name)))
  }
  return out
}

async function startRacer (ms: number): Promise<{ child: ChildProcess; done: Promise<number> }> {
  const child = spawn(process.execPath, ['-e', RACER, proj, String(Date.now() + ms), 'd', 'h'], { stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(child)
  let out = ''
  child.stdout?.on('data', (b: Buffer) => { out += b.toString() })
  const done = new Promise<number>(resolve => child.on('exit', () => resolve(Number([...out.matchAll(/flips (\d+)/g)].pop()?.[1] ?? 0))))
  await until(() => out.includes('ready'), 'the racer to start', 10_000)
  return { child, done }
}

describe('the file tools against a concurrent symlink swap', () => {
  it('never read, list or write outside the working directory or into a hidden path', async () => {
    const before = { outside: snapshot(outside), ssh: snapshot(path.join(home, '.ssh')) }
    const ctx: ToolContext = { cwd: proj, signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: true, cwd: proj, hidden: [] } }
    const run = (name: string, args: unknown): Promise<ToolResult> => (tools[name] as Tool).run(args, ctx)
    const attacks: Array<{ what: string; call: (i: number) => Promise<ToolResult>; leaked: (r: ToolResult) => boolean }> = [
      { what: 'read_file d/f', call: async () => run('read_file', { path: 'd/f' }), leaked: r => r.output.includes(OUTSIDE) },
      { what: 'read_file h/id_rsa', call: async () => run('read_file', { path: 'h/id_rsa' }), leaked: r => r.output.includes(SECRET_KEY) },
      { what: 'list_dir d', call: async () => run('list_dir', { path: 'd' }), leaked: r => r.output.includes('outside-only.txt') },
      { what: 'list_dir h', call: async () => run('list_dir', { path: 'h' }), leaked: r => r.output.includes('id_rsa') },
      { what: 'write_file d/w-i', call: async i => run('write_file', { path: `d/w-${i}.txt`, content: `PWNED ${i}` }), leaked: () => false },
      { what: 'write_file h/w-i', call: async i => run('write_file', { path: `h/w-${i}.txt`, content: `PWNED ${i}` }), leaked: () => false },
      { what: 'write_file d/new-i/w (makes a directory)', call: async i => run('write_file', { path: `d/new-${i}/w.txt`, content: `PWNED ${i}` }), leaked: () => false },
      { what: 'edit_file d/e.txt', call: async () => run('edit_file', { path: 'd/e.txt', old: 'ORIGINAL', new: 'ORIGINAL' }), leaked: () => false }
    ]
    const leaks = new Map<string, number>(attacks.map(a => [a.what, 0]))
    const outcomes = new Map<string, number>()
    let editStamp = stamp(path.join(outside, 'e.txt'))
    const racer = await startRacer(BUDGET_MS + 5_000)
    const deadline = Date.now() + BUDGET_MS
    let rounds = 0
    const seen = (prefix: string): number => [...outcomes].filter(([k]) => k.startsWith(prefix)).reduce((n, [, c]) => n + c, 0)
    // the race is shown to be on once calls went through the real directory as well as met the link
    // (the name is a directory only between two of the racer's renames: a loaded machine may need more rounds)
    const raced = (): boolean => seen('read_file d/f: ok inside') > 0 && seen('write_file d/w-i: ok created') > 0
    for (let i = 0; (i < ROUNDS || !raced()) && Date.now() < deadline; i++) {
      // a few calls at once, as an agent's parallel tool calls would be
      const rs = await Promise.all(attacks.map(a => a.call(i)))
      rounds++
      const e = stamp(path.join(outside, 'e.txt'))
      if (e !== editStamp) { editStamp = e; leaks.set('edit_file d/e.txt', (leaks.get('edit_file d/e.txt') ?? 0) + 1) }
      rs.forEach((r, k) => {
        const a = attacks[k] as (typeof attacks)[number]
        if (a.leaked(r)) leaks.set(a.what, (leaks.get(a.what) ?? 0) + 1)
        const key = `${a.what}: ${r.status} ${(r.output.split('\n')[0] ?? '').replace(/\d+/g, 'N').slice(0, 70)}`
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1)
      })
    }
    racer.child.kill('SIGKILL')
    const flips = await racer.done

    const after = { outside: snapshot(outside), ssh: snapshot(path.join(home, '.ssh')) }
    const changed = (a: Map<string, string>, b: Map<string, string>): string[] =>
      [...new Set([...a.keys(), ...b.keys()])].filter(k => a.get(k) !== b.get(k)).sort()
    const writtenOutside = changed(before.outside, after.outside)
    const writtenHidden = changed(before.ssh, after.ssh)
    leaks.set('write_file d/w-i', writtenOutside.filter(n => n.startsWith('w-')).length)
    leaks.set('write_file h/w-i', writtenHidden.filter(n => n.startsWith('w-')).length)
    leaks.set('write_file d/new-i/w (makes a directory)', writtenOutside.filter(n => /^new-\d+$/.test(n)).length)
    const report = { rounds, callsPerRound: attacks.length, racerFlips: flips, escapes: Object.fromEntries(leaks) }
    console.log(`file-tools race: ${JSON.stringify(report)}`)
    if ([...leaks.values()].some(n => n > 0)) console.log([...outcomes].sort().map(([k, n]) => `  ${n} × ${k}`).join('\n'))

    // the race was on: many flips, and calls saw the directory as well as the link
    expect(rounds, 'enough rounds to mean something').toBeGreaterThanOrEqual(30)
    expect(flips).toBeGreaterThan(1000)
    expect(seen('read_file d/f: ok inside'), 'reads that went through the real directory').toBeGreaterThan(0)
    expect(seen('write_file d/w-i: ok created'), 'writes that went through the real directory').toBeGreaterThan(0)
    expect(Object.fromEntries(leaks)).toEqual(Object.fromEntries(attacks.map(a => [a.what, 0])))
    expect(writtenOutside).toEqual([])
    expect(writtenHidden).toEqual([])
    expect(fs.readFileSync(path.join(outside, 'e.txt'), 'utf8')).toBe('ORIGINAL')
  }, 90_000)
})
