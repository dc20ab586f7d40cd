/**
 * Attack: what the host reads from a working directory for the agent. The project
 * instructions (AGENTS.md, CLAUDE.md) are read outside the sandbox and sent to the model
 * server in the system prompt, so a sandboxed command that cannot read a secret itself plants
 * a link to it under that name and waits for the next turn. Through real `arbor serve`
 * processes, the real sandboxed bash tool (scripted by the OpenAI-compatible test server)
 * and the real openai SDK: the requests the server receives must never hold the secret.
 * Everything lives under /var/tmp: the sandbox's private /tmp would hide it anyway.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { loadInstructions } from '../../../../src/main/runtime/agent/project-instructions'
import { defaultHiddenPaths } from '../../../../src/main/tools/sandbox/hidden-paths'
import { runArbor, type ArborResult } from '../../../helpers/arbor-processes'
import { reply, startOpenAITestServer, type OpenAITestServer, type RecordedRequest } from '../../../helpers/openai-test-server'
import { until } from '../../../helpers/temp-dir'
import { startServe, type Served } from '../../../helpers/ui-session'

const haveBwrap = spawnSync('bwrap', ['--version']).status === 0
if (!haveBwrap && process.env.CI !== undefined) throw new Error('bwrap is missing on CI: install bubblewrap')

const PRIVATE_KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAHOSTREADS9f3c1a\n-----END OPENSSH PRIVATE KEY-----\n'
const KEY_MARK = 'HOSTREADS9f3c1a'
const API_KEY = 'sk-stored-hostreads-7d20e4b1'

let root: string
let server: OpenAITestServer
const served: Served[] = []

beforeAll(async () => {
  root = await fsp.realpath(await fsp.mkdtemp('/var/tmp/arbor-attack-host-reads-'))
})
afterEach(async () => {
  for (const s of served.splice(0)) await s.stop()
  await server?.close()
})
afterAll(async () => {
  if (root !== undefined) await fsp.rm(root, { recursive: true, force: true })
})

/** A model that plants with bash when asked to, then answers; anything else it just answers. */
async function plantingModel (command: string): Promise<OpenAITestServer> {
  const s = await startOpenAITestServer({ apiKey: API_KEY, models: ['test-model'] })
  s.respond = (req: RecordedRequest) => {
    const messages = (req.body?.messages ?? []) as Array<{ role: string; content: unknown }>
    const last = messages[messages.length - 1]
    if (last?.role === 'user' && String(last.content).includes('plant')) return reply.toolCalls([{ name: 'bash', arguments: JSON.stringify({ command }) }])
    return reply.text(last?.role === 'tool' ? 'planted' : 'ok')
  }
  return s
}

/** `arbor serve` on `data` with HOME `home`, its model the test server with the key stored in its secrets.json. */
async function serveWithStoredKey (data: string, home: string): Promise<{ node: Served; arbor: (...args: string[]) => Promise<ArborResult> }> {
  await fsp.mkdir(data, { recursive: true })
  await fsp.writeFile(path.join(data, 'settings.json'), JSON.stringify({ provider: 'openai', baseURL: server.baseURL, model: 'test-model' }))
  await fsp.writeFile(path.join(data, 'secrets.json'), JSON.stringify({ apiKey: API_KEY }) + '\n', { mode: 0o600 })
  const env = { HOME: home, ARBOR_WORKSPACES: path.join(root, 'workspaces') }
  const node = await startServe(data, { name: 'victim', env })
  served.push(node)
  const clientEnv = { ...process.env, ...env, ARBOR_DATA: data, ARBOR_BOOTSTRAP: '127.0.0.1:9' }
  return { node, arbor: async (...args) => await runArbor(clientEnv, args, 60_000) }
}

/** Every chat request's messages (what reaches the model server, headers aside). */
const sentMessages = (): string => server.chatRequests().map(r => JSON.stringify(r.body?.messages ?? [])).join('\n')

const conversationOf = (r: ArborResult): string => (/^conversation ([0-9a-f]{64})/.exec(r.out) as RegExpExecArray)[1] as string

describe.skipIf(!haveBwrap)('attack: a link planted where the host reads project instructions (real arbor serve, bwrap, openai SDK)', () => {
  it('a dotfiles home: AGENTS.md -> ../.ssh/id_rsa, planted by the sandbox, does not send the private key on the next turn', async () => {
    const home = path.join(root, 'dotfiles-home')
    const project = path.join(home, 'project')
    await fsp.mkdir(path.join(home, '.ssh'), { recursive: true })
    await fsp.mkdir(project)
    execFileSync('git', ['init', '-q', home])
    await fsp.writeFile(path.join(home, '.ssh', 'id_rsa'), PRIVATE_KEY, { mode: 0o600 })
    server = await plantingModel('ln -s ../.ssh/id_rsa AGENTS.md; cat AGENTS.md; echo planted')
    const { node, arbor } = await serveWithStoredKey(path.join(root, 'data-a'), home)

    const first = await arbor('chat', '--new', 'plant', '--cwd', project)
    expect(first.code, first.err + node.log()).toBe(0)
    // the sandbox made the link and could not read through it
    expect(fs.lstatSync(path.join(project, 'AGENTS.md')).isSymbolicLink()).toBe(true)
    expect(first.out).not.toContain(KEY_MARK)

    const next = await arbor('chat', conversationOf(first), 'and now?')
    expect(next.code, next.err + node.log()).toBe(0)
    expect(server.chatRequests().length).toBe(3)
    expect(sentMessages(), 'the private key reached the model server in the system prompt').not.toContain(KEY_MARK)
    // the user is told why the file was not read
    expect(next.err).toMatch(/project instructions: .*AGENTS\.md.*hidden/)
  }, 90_000)

  it('the data directory inside the project: CLAUDE.md -> .arbor-data/secrets.json does not send the stored API key', async () => {
    const home = path.join(root, 'home-b')
    const project = path.join(root, 'project-b')
    await fsp.mkdir(home, { recursive: true })
    await fsp.mkdir(project, { recursive: true })
    server = await plantingModel('ln -s .arbor-data/secrets.json CLAUDE.md; cat CLAUDE.md; echo planted')
    const { node, arbor } = await serveWithStoredKey(path.join(project, '.arbor-data'), home)

    const first = await arbor('chat', '--new', 'plant', '--cwd', project)
    expect(first.code, first.err + node.log()).toBe(0)
    expect(fs.lstatSync(path.join(project, 'CLAUDE.md')).isSymbolicLink()).toBe(true)
    expect(first.out).not.toContain(API_KEY)

    const next = await arbor('chat', conversationOf(first), 'and now?')
    expect(next.code, next.err + node.log()).toBe(0)
    expect(server.chatRequests().length).toBe(3)
    // the key goes in the Authorization header to this server, as configured; never in what the model reads
    expect(sentMessages(), 'the stored API key reached the model in the system prompt').not.toContain(API_KEY)
    expect(next.err).toMatch(/project instructions: .*CLAUDE\.md.*hidden/)
  }, 90_000)
})

/**
 * The swapper: replaces `name` in `dir`, in a tight loop until its deadline, with a hard link
 * of `a` and then of `b` (each renamed over it, so the name always exists). Says 'ready' once
 * it loops, and how many swaps it made when it ends.
 */
const SWAPPER = `
const fs = require('node:fs')
const [dir, name, a, b, deadline] = process.argv.slice(1)
const parent = process.ppid
const end = Number(deadline)
const put = (from, tmp) => { fs.linkSync(dir + '/' + from, dir + '/' + tmp); fs.renameSync(dir + '/' + tmp, dir + '/' + name) }
process.stdout.write('ready\\n')
let swaps = 0
for (let i = 0; Date.now() < end; i++) {
  put(a, '.swap-a'); put(b, '.swap-b'); swaps += 2
  if (i % 1000 === 0 && process.ppid !== parent) break
}
process.stdout.write('swaps ' + swaps + '\\n')
`

const swappers: ChildProcess[] = []
afterEach(() => { for (const c of swappers.splice(0)) c.kill('SIGKILL') })

/** Starts the swapper on `dir` for at most `ms`; resolves once it loops. */
async function swapper (dir: string, name: string, a: string, b: string, ms: number): Promise<{ output: () => string }> {
  const child = spawn(process.execPath, ['-e', SWAPPER, dir, name, a, b, String(Date.now() + ms)], { stdio: ['ignore', 'pipe', 'pipe'] })
  swappers.push(child)
  let output = ''
  child.stdout?.on('data', (d: Buffer) => { output += String(d) })
  child.stderr?.on('data', (d: Buffer) => { output += String(d) })
  await until(() => output.includes('ready') || child.exitCode !== null, 'the swapper to start', 10_000)
  if (!output.includes('ready')) throw new Error(`the swapper did not start: ${output}`)
  return { output: () => output }
}

const HUNG = Symbol('hung')
/** `p`, or HUNG when it has not settled within `ms` (it is left running). */
async function within<T> (p: Promise<T>, ms: number): Promise<T | typeof HUNG> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([p, new Promise<typeof HUNG>(resolve => { timer = setTimeout(() => resolve(HUNG), ms) })])
  } finally {
    clearTimeout(timer)
  }
}

describe('attack: AGENTS.md swapped while the host reads it (a concurrent process in the same directory, the real loader)', () => {
  const SECRET = 'SWAPPED-SECRET-41c9d7e2'
  const BENIGN = 'Run the tests with npm test.'

  async function project (name: string): Promise<{ home: string; cwd: string; data: string; hidden: string[] }> {
    const base = path.join(root, name)
    const home = path.join(base, 'home')
    const cwd = path.join(base, 'project')
    const data = path.join(base, 'data')
    for (const d of [path.join(home, '.ssh'), cwd, data]) await fsp.mkdir(d, { recursive: true })
    await fsp.writeFile(path.join(home, '.ssh', 'id_rsa'), SECRET)
    await fsp.writeFile(path.join(cwd, 'benign.keep'), BENIGN)
    return { home, cwd, data, hidden: defaultHiddenPaths(home, data) }
  }

  it('between a regular file and a link to a secret: the secret is never read, and both were met', async () => {
    const p = await project('race-link')
    await fsp.symlink(path.join(p.home, '.ssh', 'id_rsa'), path.join(p.cwd, 'link.keep'))
    const s = await swapper(p.cwd, 'AGENTS.md', 'benign.keep', 'link.keep', 40_000)
    const seen = { secret: 0, benign: 0, refused: 0, rounds: 0 }
    const deadline = Date.now() + 20_000
    for (; seen.rounds < 400 && Date.now() < deadline; seen.rounds++) {
      const got = await loadInstructions({ cwd: p.cwd, dataDir: p.data, hidden: p.hidden })
      if (got.text.includes(SECRET)) seen.secret++
      else if (got.text.includes(BENIGN)) seen.benign++
      else if (got.skipped.length > 0) seen.refused++
    }
    expect(seen.secret, `the secret was read in ${seen.secret} of ${seen.rounds} loads (${JSON.stringify(seen)}; ${s.output().trim()})`).toBe(0)
    // the race was run: the loader met the file and the link
    expect(seen.benign, JSON.stringify(seen)).toBeGreaterThan(0)
    expect(seen.refused, JSON.stringify(seen)).toBeGreaterThan(0)
  }, 60_000)

  /** A FIFO in the project, and a writer opening it afterwards: that frees any open(2) still blocked on it (a failing run's). */
  async function withFifo (cwd: string, body: (fifo: string) => Promise<void>): Promise<void> {
    const fifo = path.join(cwd, 'fifo.keep')
    execFileSync('mkfifo', [fifo])
    try {
      await body(fifo)
    } finally {
      for (const c of swappers.splice(0)) c.kill('SIGKILL')
      fs.closeSync(fs.openSync(fifo, fs.constants.O_RDWR | fs.constants.O_NONBLOCK))
    }
  }

  it('a FIFO named AGENTS.md, with no writer ever: the load returns at once and says why it was not read', async () => {
    const p = await project('fifo-still')
    await withFifo(p.cwd, async fifo => {
      await fsp.link(fifo, path.join(p.cwd, 'AGENTS.md'))
      const got = await within(loadInstructions({ cwd: p.cwd, dataDir: p.data, hidden: p.hidden }), 2000)
      expect(got, 'the load of a FIFO named AGENTS.md did not return').not.toBe(HUNG)
      if (got === HUNG) return
      expect(got.text).toBe('')
      expect(got.skipped.join('\n')).toMatch(/AGENTS\.md.*not a regular file/)
    })
  }, 30_000)

  it('a FIFO swapped in for AGENTS.md: every load returns, and the node\'s thread pool stays free for what comes after', async () => {
    const p = await project('fifo-swapped')
    await withFifo(p.cwd, async () => {
      // swapped with a regular file as fast as a process can: a load that opens it blocking waits in open(2) for a writer
      const s = await swapper(p.cwd, 'AGENTS.md', 'benign.keep', 'fifo.keep', 40_000)
      const seen = { hung: 0, benign: 0, fifo: 0, rounds: 0 }
      const deadline = Date.now() + 15_000
      // the pool has 4 threads (UV_THREADPOOL_SIZE): after 4 blocked opens nothing asynchronous runs
      for (; seen.rounds < 1000 && seen.hung < 4 && Date.now() < deadline; seen.rounds++) {
        const got = await within(loadInstructions({ cwd: p.cwd, dataDir: p.data, hidden: p.hidden }), 2000)
        if (got === HUNG) seen.hung++
        else if (got.text.includes(BENIGN)) seen.benign++
        else if (got.skipped.some(w => /not a regular file/.test(w))) seen.fifo++
      }
      const read = await within(fsp.readFile(path.join(p.cwd, 'benign.keep'), 'utf8'), 3000)
      expect.soft(seen.hung, `${seen.hung} of ${seen.rounds} loads never returned (${JSON.stringify(seen)}; ${s.output().trim()})`).toBe(0)
      expect(read, 'a file read after the loads never completed: the thread pool is blocked').toBe(BENIGN)
      // the race was run: the loader met the file and the FIFO
      expect(seen.benign, JSON.stringify(seen)).toBeGreaterThan(0)
      expect(seen.fifo, JSON.stringify(seen)).toBeGreaterThan(0)
    })
  }, 60_000)
})
