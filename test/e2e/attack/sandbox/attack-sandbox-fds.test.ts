/**
 * No file descriptor the node inherited reaches the sandbox. A real child process (the
 * node, running the bash tool) is started with a secret file at fd 30 and a pipe back to
 * this test at fd 31, neither close-on-exec; the command inside the sandbox looks for them.
 * The control, a plain spawn of bash from the same child, shows that its children inherit
 * them.
 */
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import type { Readable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ToolResult } from '../../../../src/main/tools/tool'
import { ROOT } from '../../../helpers/paths'

const haveBwrap = spawnSync('bwrap', ['--version']).status === 0
if (!haveBwrap && process.env.CI !== undefined) throw new Error('bwrap is missing on CI: install bubblewrap')

const CHILD = path.join(ROOT, 'test/e2e/fixtures/bash-with-fds.ts')
const SECRET = 'INHERITED-SECRET-5e1f0c'

let dir: string
let proj: string

beforeAll(async () => {
  dir = await fsp.realpath(await fsp.mkdtemp('/var/tmp/arbor-attack-fds-'))
  proj = path.join(dir, 'proj')
  await fsp.mkdir(proj)
  await fsp.writeFile(path.join(dir, 'secret'), SECRET)
})

afterAll(async () => {
  if (dir !== undefined) await fsp.rm(dir, { recursive: true, force: true })
})

/** Runs the child with fd 30 = the secret file and fd 31 = a pipe whose other end this test reads. */
async function runChild (mode: 'sandboxed' | 'sandboxed-spare' | 'unsandboxed' | 'plain', command: string): Promise<{ result: ToolResult & { sparesUsed?: number }; leakedThroughPipe: string }> {
  // a fresh open file per run: reads move the offset every inheritor shares
  const secretFd = fs.openSync(path.join(dir, 'secret'), 'r')
  const stdio: Array<'ignore' | 'pipe' | number> = ['ignore', 'pipe', 'pipe']
  while (stdio.length < 30) stdio.push('ignore')
  stdio.push(secretFd, 'pipe')
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, proj, dir, mode, command], { cwd: ROOT, stdio })
  let out = ''
  let err = ''
  let leaked = ''
  child.stdout?.setEncoding('utf8').on('data', (s: string) => { out += s })
  child.stderr?.setEncoding('utf8').on('data', (s: string) => { err += s })
  const pipe = (child.stdio as unknown as Array<Readable | null>)[31] as Readable
  pipe.setEncoding('utf8').on('data', (s: string) => { leaked += s })
  const timer = setTimeout(() => child.kill('SIGKILL'), 25_000)
  const code = await new Promise<number | null>(resolve => child.on('close', resolve))
  clearTimeout(timer)
  fs.closeSync(secretFd)
  if (code !== 0) throw new Error(`the child failed (${code}): ${err}`)
  return { result: JSON.parse(out.trim()) as ToolResult & { sparesUsed?: number }, leakedThroughPipe: leaked }
}

const PROBE = 'ls -l /proc/self/fd; echo "[$(cat <&30)]"; echo through-the-pipe >&31; echo done'

describe.skipIf(!haveBwrap)('inherited file descriptors (real child process, real bwrap)', () => {
  it('the control: a plain spawn from the child does get fds 30 and 31', async () => {
    const { result, leakedThroughPipe } = await runChild('plain', 'echo "[$(cat <&30)]"; echo through-the-pipe >&31; true')
    expect(result.output).toContain(`[${SECRET}]`)
    expect(leakedThroughPipe).toContain('through-the-pipe')
  })

  for (const mode of ['sandboxed', 'sandboxed-spare', 'unsandboxed'] as const) {
    it(`the bash tool (${mode === 'sandboxed-spare' ? 'sandboxed, in the spare sandbox a first call left' : mode}): neither fd is open in the command`, async () => {
      const { result, leakedThroughPipe } = await runChild(mode, PROBE)
      if (mode === 'sandboxed-spare') expect(result.sparesUsed).toBe(1)
      expect(result.output).toContain('done')
      expect(result.output).not.toContain(SECRET)
      expect(result.output).not.toContain(path.join(dir, 'secret'))
      expect(result.output).not.toMatch(/ 3[01] -> (?!\/dev\/null)/)
      expect(leakedThroughPipe).toBe('')
    })
  }
})
