import { spawnSync } from 'node:child_process'
import fs from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBashTool, UNSANDBOXED_WARNING } from '../../../src/main/tools/bash-tool'
import type { ToolContext } from '../../../src/main/tools/tool'
import { runTool } from '../../../src/main/tools/tool-registry'
import { tempDirs } from '../../helpers/temp-dir'

const haveBwrap = spawnSync('bwrap', ['--version']).status === 0
const dirs = tempDirs('arbor-bash-')
let cwd: string
let home: string

beforeAll(async () => {
  const root = await fs.realpath(await dirs.make())
  cwd = path.join(root, 'proj')
  home = path.join(root, 'home')
  await fs.mkdir(path.join(cwd, '.git'), { recursive: true })
  await fs.mkdir(home)
})
afterAll(() => dirs.cleanup())

const env = { PATH: process.env.PATH, LANG: 'C.UTF-8', SECRET_TOKEN: 'tok-123' }
const ctx = (over: Partial<ToolContext> = {}): ToolContext => ({
  cwd, signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: true, cwd, hidden: [] }, ...over
})

describe.skipIf(!haveBwrap)('bash tool (sandboxed)', () => {
  let bash: ReturnType<typeof createBashTool>
  beforeAll(() => { bash = createBashTool({ home, env, limits: { maxChars: 2000, maxLines: 100 } }) })

  it('runs a command in the working directory and reports the exit code', async () => {
    expect(await bash.run({ command: 'echo "$PWD"; echo oops >&2' }, ctx())).toEqual({ status: 'ok', output: `${cwd}\noops\n[exit code 0]`, exitCode: 0 })
    expect(await bash.run({ command: 'exit 7' }, ctx())).toEqual({ status: 'error', output: '[exit code 7]', exitCode: 7 })
    expect((await bash.run({ command: 'echo $SECRET_TOKEN; echo home=$HOME' }, ctx())).output).toBe(`\nhome=${home}\n[exit code 0]`)
  })

  it('writes reach the host working directory; stdin is empty', async () => {
    expect((await bash.run({ command: 'echo made > made.txt && cat' }, ctx())).exitCode).toBe(0)
    expect(await fs.readFile(path.join(cwd, 'made.txt'), 'utf8')).toBe('made\n')
  })

  it('streams output as it comes', async () => {
    const chunks: string[] = []
    const r = await bash.run({ command: 'for i in 1 2 3; do echo $i; done' }, ctx({ onOutput: c => chunks.push(c) }))
    expect(chunks.join('')).toBe('1\n2\n3\n')
    expect(r.output).toBe('1\n2\n3\n[exit code 0]')
  })

  it('limits long output, keeping head and tail', async () => {
    const r = await bash.run({ command: 'seq 1 100000' }, ctx())
    expect(r.truncated).toBe(true)
    expect(r.output.startsWith('1\n2\n')).toBe(true)
    expect(r.output).toMatch(/100000\n\[exit code 0\]$/)
    expect(r.output).toMatch(/… [\d,]+ characters \([\d,]+ lines\) cut …/)
    expect(r.output.length).toBeLessThan(2100)
  })

  it('kills the sandbox at the time limit', async () => {
    const t0 = Date.now()
    const r = await runTool(bash, { command: 'echo start; sleep 10', timeoutMs: 300 }, ctx())
    expect(r).toEqual({ status: 'error', output: 'start\n[timed out after 300 ms; the command and everything it started were killed]' })
    expect(Date.now() - t0).toBeLessThan(2000)
  })

  it('makes git hooks read-only, creating the directory if the repository has none', async () => {
    const r = await bash.run({ command: 'echo evil > .git/hooks/pre-commit' }, ctx())
    expect(r.output).toMatch(/Read-only file system/)
    expect(await fs.readdir(path.join(cwd, '.git', 'hooks'))).toEqual([])
  })

  it('refuses to run in a hidden working directory', async () => {
    const ssh = path.join(home, '.ssh')
    await fs.mkdir(ssh, { recursive: true })
    const r = await bash.run({ command: 'touch x' }, ctx({ cwd: ssh, sandbox: { enabled: true, cwd: ssh, hidden: [] } }))
    expect(r.status).toBe('error')
    expect(r.output).toMatch(/^The command did not run: the working directory .* is inside .*\.ssh, which is hidden/)
  })

  it('validates its arguments', async () => {
    expect((await bash.run({ cmd: 'ls' }, ctx())).output).toBe("missing required argument 'command'")
  })
})

describe('bash tool (sandbox off)', () => {
  it('runs plainly with a warning when the user turned the sandbox off', async () => {
    const bash = createBashTool({ home, env, bwrapPath: '/nonexistent/bwrap' })
    const r = await bash.run({ command: 'echo plain; echo $SECRET_TOKEN' }, ctx({ sandbox: { enabled: false, cwd, hidden: [] } }))
    expect(r).toEqual({ status: 'ok', output: `${UNSANDBOXED_WARNING}\nplain\n\n[exit code 0]`, exitCode: 0 })
  })

  it('kills background jobs when the command ends', async () => {
    const bash = createBashTool({ home, env })
    const t0 = Date.now()
    const r = await bash.run({ command: 'sleep 30 & echo bg' }, ctx({ sandbox: { enabled: false, cwd, hidden: [] } }))
    expect(r.exitCode).toBe(0)
    expect(Date.now() - t0).toBeLessThan(2000)
  })
})
