import { describe, expect, it } from 'vitest'
import { fork, spawnSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import type { FromNode, ToNode } from '../../../src/main/electron/node-process-protocol'
import { apiNodes } from '../../helpers/api-nodes'
import { until } from '../../helpers/temp-dir'
import { E2E_FIXTURES, ROOT } from '../../helpers/paths'

// The built entry Electron main forks (out/main/node.js), as a real process on plain Node,
// with its parentPort shimmed over Node's IPC: it starts, says it is ready, and shuts down
// cleanly on main's message and on SIGTERM. Needs `npx electron-vite build`.

const root = ROOT
const entry = path.join(root, 'out/main/node.js')
const shim = path.join(E2E_FIXTURES, 'parent-port-shim.mjs')
const { dirs, bootstrap, defer } = apiNodes('arbor-node-bundle-')

function startNode (dir: string): { child: ChildProcess; said: FromNode[]; exited: Promise<number | null>; stderr: () => string } {
  expect(fs.existsSync(entry), 'out/main/node.js is missing: run `npx electron-vite build`').toBe(true)
  const child = fork(entry, [], {
    execArgv: ['--import', shim],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: { ...process.env, HOME: dir, ARBOR_BOOTSTRAP: bootstrap().map(b => `${b.host}:${b.port}`).join(',') }
  })
  defer(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let err = ''
  child.stderr?.on('data', (d: Buffer) => { err += d.toString() })
  const said: FromNode[] = []
  child.on('message', m => { said.push(m as FromNode) })
  const exited = new Promise<number | null>(resolve => { child.on('exit', code => { resolve(code) }) })
  const start: ToNode = { type: 'start', dataDir: dir, secrets: {}, secretsDescription: 'kept by the test' }
  child.send(start)
  return { child, said, exited, stderr: () => err }
}

describe('the desktop app\'s node entry (out/main/node.js)', () => {
  it('opens on the start message, says ready, and exits 0 after a clean shutdown', async () => {
    const dir = await dirs.make()
    const n = startNode(dir)
    await until(() => n.said.some(m => m.type === 'ready'), `the node to be ready (stderr: ${n.stderr()})`, 20_000)
    expect(n.said[0]).toEqual({ type: 'ready', device: expect.stringMatching(/^[0-9a-f]{64}$/) })
    expect(fs.existsSync(path.join(dir, 'arbor.sock'))).toBe(true) // the CLI works through it
    n.child.send({ type: 'shutdown' } satisfies ToNode)
    expect(await n.exited).toBe(0)
    expect(fs.existsSync(path.join(dir, 'arbor.sock'))).toBe(false)
  })

  it('SIGTERM closes it cleanly too', async () => {
    const dir = await dirs.make()
    const n = startNode(dir)
    await until(() => n.said.some(m => m.type === 'ready'), 'the node to be ready', 20_000)
    n.child.kill('SIGTERM')
    expect(await n.exited).toBe(0)
  })

  it('outside Electron it says what it is and exits', () => {
    const r = spawnSync(process.execPath, [entry], { encoding: 'utf8', timeout: 10_000 })
    expect(r.status).toBe(2)
    expect(r.stderr).toMatch(/Electron starts it\. Headless, run `arbor serve`/)
  })
})
