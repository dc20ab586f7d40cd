/**
 * Hidden paths stay hidden (real bwrap): when a parent inside the working directory is
 * renamed between two calls, and when the data belongs to another Arbor node of the same
 * user on this machine (its files and its local socket). Everything lives under /var/tmp:
 * the sandbox's private /tmp would hide it anyway and prove nothing.
 */
import { spawnSync } from 'node:child_process'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ArborNode } from '../../../../src/main/node'
import { ServedNode } from '../../../../src/main/api/served-node'
import { memoryLogger } from '../../../../src/shared/logger'
import { createBashTool } from '../../../../src/main/tools/bash-tool'
import { createFileTools } from '../../../../src/main/tools/file-tools'
import type { Tool, ToolContext, ToolResult } from '../../../../src/main/tools/tool'

const haveBwrap = spawnSync('bwrap', ['--version']).status === 0
if (!haveBwrap && process.env.CI !== undefined) throw new Error('bwrap is missing on CI: install bubblewrap')
const havePython = spawnSync('python3', ['--version']).status === 0

const SECRET = 'HIDDEN-9c41e2'
let root: string
let home: string

beforeAll(async () => {
  root = await fsp.realpath(await fsp.mkdtemp('/var/tmp/arbor-attack-hidden-'))
  home = path.join(root, 'home')
  await fsp.mkdir(home)
})

afterAll(async () => {
  if (root !== undefined) await fsp.rm(root, { recursive: true, force: true })
})

function env (): Record<string, string | undefined> {
  return { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }
}

function ctx (cwd: string, hidden: string[] = []): ToolContext {
  return { cwd, signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: true, cwd, hidden } }
}

async function write (file: string, text = SECRET): Promise<void> {
  await fsp.mkdir(path.dirname(file), { recursive: true })
  await fsp.writeFile(file, text)
}

describe.skipIf(!haveBwrap)('hidden paths inside the working directory survive renames (real bwrap)', () => {
  it('renaming a parent of a hidden directory or file in one call does not reveal it in the next', async () => {
    const proj = path.join(root, 'rename-proj')
    await write(path.join(proj, 'a', 'secrets', 'key'))
    await write(path.join(proj, 'a', 'b', 'token'))
    await write(path.join(proj, 'x', 'y', 'z', 'deep', 'key'))
    const hidden = [path.join(proj, 'a', 'secrets'), path.join(proj, 'a', 'b', 'token'), path.join(proj, 'x', 'y', 'z', 'deep')]
    const bash = createBashTool({ home, env: env() })
    const files = Object.fromEntries(createFileTools({ home }).map(t => [t.name, t]))
    const first = await bash.run({ command: 'mv a renamed; mv x/y x/moved; mv x moved-x; mv a/secrets a/s2; mv a/b a/b2; cp -a a/secrets copy 2>&1; echo end' }, ctx(proj, hidden))
    expect(first.output).toContain('end')
    const second = await bash.run({ command: 'cat renamed/secrets/key renamed/b/token x/moved/z/deep/key moved-x/y/z/deep/key a/s2/key a/b2/token copy/key a/secrets/key a/b/token x/y/z/deep/key; ls -RA . | head -50' }, ctx(proj, hidden))
    expect(second.output).not.toContain(SECRET)
    for (const p of ['renamed/secrets/key', 'renamed/b/token', 'a/s2/key', 'x/moved/z/deep/key', 'a/secrets/key']) {
      const r = await (files.read_file as Tool).run({ path: p }, ctx(proj, hidden))
      expect(r.output, p).not.toContain(SECRET)
    }
    // the hidden things are still where they were, unrenamed
    expect(await fsp.readFile(path.join(proj, 'a', 'secrets', 'key'), 'utf8')).toBe(SECRET)
    expect(await fsp.readFile(path.join(proj, 'x', 'y', 'z', 'deep', 'key'), 'utf8')).toBe(SECRET)
  })

  it('an Arbor data directory inside the working directory stays hidden when its parent is renamed', async () => {
    const proj = path.join(root, 'data-in-proj')
    const dataDir = path.join(proj, 'state', 'arbor-data')
    await write(path.join(dataDir, 'secrets.json'))
    const bash = createBashTool({ home, dataDir, env: env() })
    await bash.run({ command: 'mv state st2; true' }, ctx(proj))
    const r = await bash.run({ command: 'cat st2/arbor-data/secrets.json state/arbor-data/secrets.json; true' }, ctx(proj))
    expect(r.output).not.toContain(SECRET)
    expect(await fsp.readFile(path.join(dataDir, 'secrets.json'), 'utf8')).toBe(SECRET)
  })
})

describe.skipIf(!haveBwrap)('other Arbor nodes of this user: their data and sockets (real nodes, real bwrap)', () => {
  const nodes: ServedNode[] = []
  afterAll(async () => { for (const n of nodes) await n.close() })

  async function startNode (dataDir: string): Promise<void> {
    const log = memoryLogger()
    // with its local socket, as `arbor serve` runs it
    const node = new ServedNode(new ArborNode({ dataDir, swarm: false, env: { HOME: home }, log }), { log })
    await node.ready()
    nodes.push(node)
    await write(path.join(dataDir, 'marker'))
  }

  const connect = (sock: string): string => havePython
    ? `python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print('connected')" ${sock} 2>&1 | tail -1`
    : `test -S ${sock} && echo connected`

  it('a second node\'s data directory and socket are unreachable from the first node\'s sandbox', async () => {
    const data1 = path.join(root, 'node1')
    const data2 = path.join(root, 'srv', 'arbor2')
    const proj = path.join(root, 'node1-proj')
    await fsp.mkdir(proj, { recursive: true })
    await startNode(data1)
    await startNode(data2)
    // the second node's data dir lives inside this project: the file tools must refuse it too
    const data3 = path.join(proj, 'arbor3')
    await startNode(data3)

    const bash = createBashTool({ home, dataDir: data1, env: env() })
    const r: ToolResult = await bash.run({
      command: [`ls -A ${data2} | wc -l`, `cat ${data2}/marker`, connect(path.join(data2, 'arbor.sock')),
        `cat ${data3}/marker`, connect(path.join(data3, 'arbor.sock')), `ls -A ${data3} | wc -l`, 'true'].join('; ')
    }, ctx(proj))
    expect(r.output).not.toContain(SECRET)
    expect(r.output).not.toContain('connected')
    expect(r.output).toContain(`cat: ${data2}/marker: No such file or directory`)
    expect(r.output).toContain(`cat: ${data3}/marker: No such file or directory`)

    const files = Object.fromEntries(createFileTools({ home, dataDir: data1 }).map(t => [t.name, t]))
    for (const [name, args] of [['read_file', { path: 'arbor3/marker' }], ['list_dir', { path: 'arbor3' }]] as const) {
      const f = await (files[name] as Tool).run(args, ctx(proj))
      expect(f.status, `${name} ${JSON.stringify(args)}`).toBe('error')
      expect(f.output).toMatch(/hidden from tools/)
      expect(f.output).not.toContain(SECRET)
    }
  })
})
