// Attacks on the node's local socket (<data>/arbor.sock), the door the `arbor` CLI drives a
// running node through: it serves the whole API (a conversation made, a message sent, the
// network switched, a device forgotten). Whoever reaches the socket without the node's token must be refused before
// anything runs, and no other user may reach it at all, not even in the moment after bind.
import { describe, expect, it } from 'vitest'
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { ArborNode } from '../../../src/main/node'
import { ServedNode } from '../../../src/main/api/served-node'
import { memoryLogger } from '../../../src/shared/logger'
import { runCli } from '../../../src/main/cli/run-cli'
import { perTest } from '../../helpers/per-test'
import { until } from '../../helpers/temp-dir'

const { dirs, defer } = perTest('arbor-attack-socket-')

const TOKEN_FILE = 'arbor.sock.token'
const REFUSED = /^this is not your Arbor node's token: /

/** A node with its local socket, as `arbor serve` runs it. */
async function startNode (dir?: string): Promise<{ node: ArborNode; served: ServedNode; dir: string; sock: string; log: ReturnType<typeof memoryLogger> }> {
  const d = dir ?? await dirs.make()
  fs.chmodSync(d, 0o755) // as `mkdir ~/.config/Arbor` leaves it: others may look inside
  const log = memoryLogger()
  const served = new ServedNode(new ArborNode({ dataDir: d, swarm: false, log, env: { HOME: d } }), { log })
  await served.ready()
  defer(() => served.close())
  return { node: served.node, served, dir: d, sock: path.join(d, 'arbor.sock'), log }
}

/** What an attacker would run through the socket: an API request of its choosing. */
const pwn = (_dir: string): unknown => ({ id: 1, method: 'conversation.create', params: { title: 'pwned' } })

interface Heard { replies: Array<{ id?: unknown; result?: unknown; error?: { message: string } }>; closed: boolean }

/** A raw client: writes `frames` as lines on `conn`, collects replies until the node closes it (or 5 s pass). */
function speak (conn: net.Socket, frames: unknown[]): Promise<Heard> {
  return new Promise(resolve => {
    const heard: Heard = { replies: [], closed: false }
    let buf = ''
    const timer = setTimeout(() => { conn.destroy(); resolve(heard) }, 5000)
    conn.setEncoding('utf8')
    conn.on('data', (d: string) => {
      buf += d
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        heard.replies.push(JSON.parse(buf.slice(0, i)) as Heard['replies'][number])
        buf = buf.slice(i + 1)
      }
      // the command answered: the attack worked, no need to wait for the close
      if (heard.replies.some(r => r.id === 1 && 'result' in r)) { clearTimeout(timer); conn.destroy(); resolve(heard) }
    })
    conn.on('error', () => { /* the close says it */ })
    conn.on('close', () => { clearTimeout(timer); heard.closed = true; resolve(heard) })
    for (const f of frames) conn.write(JSON.stringify(f) + '\n')
  })
}

const titles = (node: ArborNode): string[] => node.history.list().map(c => c.title)

function expectRefused (heard: Heard, node: ArborNode): void {
  expect(heard.replies.filter(r => 'result' in r)).toEqual([]) // nothing ran
  expect(heard.replies.map(r => r.error?.message)).toEqual([expect.stringMatching(REFUSED)])
  expect(heard.closed).toBe(true)
  expect(titles(node)).not.toContain('pwned')
}

/** Tries to connect to `sock` as the user nobody: 'connected' or the error code. */
function connectAsNobody (sock: string): string {
  const r = spawnSync(process.execPath, ['-e', `
    const c = require('node:net').connect(process.argv[1])
    c.on('connect', () => { process.stdout.write('connected'); process.exit(0) })
    c.on('error', e => { process.stdout.write(String(e.code)); process.exit(0) })`, sock], { uid: 65534, gid: 65534, encoding: 'utf8', timeout: 10_000 })
  return r.stdout
}

describe('the local socket authenticates its callers', () => {
  it('refuses a client that presents no token', async () => {
    const { node, sock, dir } = await startNode()
    expectRefused(await speak(net.connect(sock), [pwn(dir)]), node)
  })

  it('refuses a wrong token', async () => {
    const { node, sock, dir } = await startNode()
    const real = fs.readFileSync(path.join(dir, TOKEN_FILE), 'utf8').trim()
    for (const token of ['0'.repeat(64), real.slice(0, -1), real + '0', '', real.toUpperCase() === real ? real.toLowerCase() : real.toUpperCase()]) {
      expectRefused(await speak(net.connect(sock), [{ token }, pwn(dir)]), node)
    }
    // nor does anything else in the first frame pass: another type, a request, junk, a flood
    for (const first of [{ token: 42 }, pwn(dir), 'hello', null, { token: real.repeat(100) }]) {
      expectRefused(await speak(net.connect(sock), [first, pwn(dir)]), node)
    }
  })

  it('refuses the token of another node of the same user', async () => {
    const a = await startNode()
    const b = await startNode()
    // (a node without token files has none to take: any string stands in for it)
    const bFile = path.join(b.dir, TOKEN_FILE)
    const token = fs.existsSync(bFile) ? fs.readFileSync(bFile, 'utf8').trim() : 'b'.repeat(64)
    expectRefused(await speak(net.connect(a.sock), [{ token }, pwn(a.dir)]), a.node)
    // and the token works where it belongs
    const ok = await speak(net.connect(b.sock), [{ token }, pwn(b.dir)])
    expect(ok.replies.filter(r => 'result' in r)).toEqual([{ id: 1, result: { id: expect.stringMatching(/^[0-9a-f]{64}$/) } }])
    expect(titles(b.node)).toContain('pwned')
  })

  it('refuses a connection made the moment the socket exists, and no other user can make one', async () => {
    const dir = await dirs.make()
    const sock = path.join(dir, 'arbor.sock')
    let early: Promise<Heard> | undefined
    let nobody: string | undefined
    // The earliest moment a caller can connect: right after bind, before listen's callback
    // (where the socket used to be chmod-ed). The user's umask is as permissive as can be.
    const listen = net.Server.prototype.listen
    const umask = process.umask(0)
    net.Server.prototype.listen = function (this: net.Server, ...args: unknown[]) {
      const r = (listen as (...a: unknown[]) => net.Server).apply(this, args)
      if (args[0] === sock) {
        if (process.getuid?.() === 0) nobody = connectAsNobody(sock)
        early = speak(net.connect(sock), [pwn(dir)])
      }
      return r
    } as typeof listen
    let node: ArborNode
    try {
      node = (await startNode(dir)).node
    } finally {
      net.Server.prototype.listen = listen
      process.umask(umask)
    }
    expect(early, 'the node listened on its socket').toBeDefined()
    expectRefused(await (early as Promise<Heard>), node)
    if (process.getuid?.() === 0) expect(nobody).toBe('EACCES') // root can be nobody: another user of the machine
    expect(fs.statSync(sock).mode & 0o077).toBe(0)
  })

  it('keeps the token in a file only its user can read, new on every start, never logged', async () => {
    const { served, dir, log } = await startNode()
    const file = path.join(dir, TOKEN_FILE)
    const token = fs.readFileSync(file, 'utf8').trim()
    expect(token).toMatch(/^[0-9a-f]{64}$/)
    expect(fs.statSync(file).mode & 0o777).toBe(0o600)
    expect(fs.readdirSync(dir).filter(f => f.endsWith('.tmp'))).toEqual([])
    expect(JSON.stringify(log.lines)).not.toContain(token)
    await served.close()
    expect(fs.existsSync(file)).toBe(false) // gone with the node
    const again = await startNode(dir)
    expect(fs.readFileSync(file, 'utf8').trim()).not.toBe(token)
    await again.served.close()
  })

  it('the CLI works through the node with the token, and says so plainly when its token is not the node\'s', async () => {
    const { node, dir } = await startNode()
    let out = ''
    let err = ''
    const io = { out: (t: string) => { out += t }, err: (t: string) => { err += t }, env: { ARBOR_DATA: dir }, cwd: dir }
    expect(await runCli(['new', '--title', 'mine'], io)).toBe(0)
    expect(titles(node)).toEqual(['mine'])
    expect(await runCli(['ls'], io)).toBe(0)
    expect(out).toContain('mine')

    // A token file that is not the running node's (another node's, or a stale copy)
    fs.writeFileSync(path.join(dir, TOKEN_FILE), 'f'.repeat(64) + '\n', { mode: 0o600 })
    out = ''
    expect(await runCli(['new', '--title', 'not mine'], io)).toBe(1)
    expect(err).toMatch(/^arbor: the running node failed: this is not your Arbor node's token: /)
    expect(titles(node)).toEqual(['mine'])
  })

  it('a stale socket and token left by a killed node do not stop the next one', async () => {
    const dir = await dirs.make()
    const sock = path.join(dir, 'arbor.sock')
    const child = spawn(process.execPath, ['-e', 'require("node:net").createServer().listen(process.argv[1], () => console.log("up"))', sock], { stdio: ['ignore', 'pipe', 'inherit'] })
    await until(() => fs.existsSync(sock), 'the stand-in node to listen')
    child.kill('SIGKILL')
    await new Promise(resolve => child.on('exit', resolve))
    expect(fs.existsSync(sock)).toBe(true)
    fs.writeFileSync(path.join(dir, TOKEN_FILE), 'e'.repeat(64) + '\n', { mode: 0o600 })
    const { node } = await startNode(dir)
    let err = ''
    expect(await runCli(['new', '--title', 'after the crash'], { out: () => {}, err: t => { err += t }, env: { ARBOR_DATA: dir }, cwd: dir }), err).toBe(0)
    expect(titles(node)).toEqual(['after the crash'])
  })
})
