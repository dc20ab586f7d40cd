// What a device has shown survives its crash (issue 12, "Sync that never stalls or
// forgets"): two `arbor serve` nodes on a HyperDHT testnet on loopback; the laptop writes a
// conversation, the server receives it and lists it, opens it, answers in it, or shows what
// the laptop added to one it held since a clean start, and is SIGKILLed at several delays
// after it first did; restarted with its network off, it must
// list the conversation, open it, and hold every entry it had shown — from its own disk,
// with the index the kill left and again with the index rebuilt from the feeds.
import fs from 'node:fs/promises'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { runCli } from '../../../src/main/cli/run-cli'
import { processCluster, type ArborResult } from '../../helpers/arbor-processes'
import { until } from '../../helpers/temp-dir'

const DELAYS_MS = [0, 50, 150, 400]
/** trials per delay and kind (ARBOR_CRASH_TRIALS raises it to measure a failure rate) */
const TRIALS = Number(process.env.ARBOR_CRASH_TRIALS ?? 1)
const POSTS = 5

const cluster = processCluster()

/**
 * `arbor ...` run in this process, a client of the device's node over its local socket as the
 * CLI is: no process start between seeing a conversation and the kill.
 */
async function inNode (name: string, ...argv: string[]): Promise<ArborResult> {
  const dev = cluster.devices.get(name)
  if (dev === undefined) throw new Error(`no device ${name}`)
  let out = ''
  let err = ''
  const env = { ...process.env, ARBOR_DATA: dev.dir, ARBOR_WORKSPACES: dev.workspaces }
  if (!existsSync(path.join(dev.dir, 'arbor.sock'))) throw new Error(`${name}'s node does not serve`)
  const code = await runCli(argv, { out: t => { out += t }, err: t => { err += t }, env, cwd: dev.workspaces })
  return { code, out, err }
}

interface Listed { id: string; size: number }
const listed = async (name: string, conv: string): Promise<Listed | undefined> => {
  const r = await inNode(name, 'ls', '--json')
  if (r.code !== 0) throw new Error(`arbor ls on ${name} exited ${r.code}: ${r.err}`)
  return (JSON.parse(r.out) as Listed[]).find(c => c.id === conv)
}
const exported = async (name: string, conv: string): Promise<Array<{ id: string; kind: string; body: { text?: string } }> | null> => {
  const r = await inNode(name, 'export', conv, '--format', 'json')
  return r.code === 0 ? (JSON.parse(r.out) as { entries: Array<{ id: string; kind: string; body: { text?: string } }> }).entries : null
}

/** What the server showed before it was killed: the largest size listed, every entry id it printed. */
interface Shown { size: number; ids: Set<string>; reply?: string }

/** what the server did with the conversation: listed it, opened it, answered in it, or showed what was added to one it held */
type Kind = 'listed' | 'opened' | 'answered' | 'grown'
/** ARBOR_CRASH_KINDS=grown,listed picks some, to measure them alone */
const KINDS = (process.env.ARBOR_CRASH_KINDS?.split(',') ?? ['listed', 'opened', 'answered', 'grown']) as Kind[]
interface Outcome { kind: Kind; delay: number; ok: boolean; why: string }

async function connected (): Promise<void> {
  await until(async () => {
    const r = await inNode('server', 'devices', '--json')
    const { devices } = JSON.parse(r.out) as { devices: Array<{ self: boolean; connected: boolean; suspected: boolean }> }
    return devices.some(d => !d.self && d.connected && !d.suspected)
  }, 'the server to connect to the laptop', 60_000, 100)
}

/** One trial: a new conversation on the laptop, shown on the server, the server killed `delay` ms later. */
async function trial (kind: Kind, delay: number, n: number): Promise<Outcome> {
  const conv = (await inNode('laptop', 'new', '--title', `${kind} ${delay} ms #${n}`)).out.trim()
  for (let k = 0; k < POSTS; k++) await inNode('laptop', 'post', conv, `message ${k}`)
  const shown: Shown = { size: 0, ids: new Set() }
  const show = (s: Listed | undefined): void => { if (s !== undefined) shown.size = Math.max(shown.size, s.size) }
  let first: Listed | undefined
  await until(async () => { first = await listed('server', conv); return first !== undefined && (kind !== 'grown' || first.size === 1 + POSTS) }, `the server to list ${conv.slice(0, 8)}`, 30_000, 5)
  if (kind === 'grown') {
    // A conversation the server held when it last closed cleanly; the laptop adds to it.
    await cluster.kill('server', 'SIGTERM')
    await cluster.serve('server')
    await connected()
    for (let k = 0; k < POSTS; k++) await inNode('laptop', 'post', conv, `more ${k}`)
    await until(async () => { first = await listed('server', conv); return (first?.size ?? 0) > 1 + POSTS }, `the server to list what the laptop added to ${conv.slice(0, 8)}`, 30_000, 5)
  }
  show(first)
  if (kind === 'opened' || kind === 'grown') {
    const es = await exported('server', conv)
    if (es === null) throw new Error(`the server lists ${conv.slice(0, 8)} but cannot open it`)
    for (const e of es) shown.ids.add(e.id)
  }
  if (kind === 'answered') {
    const chat = await inNode('server', 'chat', conv, `answer ${n}`, '--provider', 'fake')
    if (chat.code !== 0) throw new Error(`chat on the server exited ${chat.code}: ${chat.err}`)
    shown.reply = `You said: answer ${n}`
    if (!chat.out.includes(shown.reply)) throw new Error(`the server's chat did not answer: ${chat.out}`)
  }
  // Until the kill, keep showing: listing (and opening, for 'opened'); only answers that came back count.
  const proc = cluster.devices.get('server')?.proc
  if (proc == null) throw new Error('the server does not run')
  const exited = new Promise<void>(resolve => proc.once('exit', () => resolve()))
  let killed = false
  const kill = (): void => { killed = true; proc.kill('SIGKILL') }
  const t0 = Date.now()
  if (delay === 0) kill()
  else setTimeout(kill, Math.max(0, t0 + delay - Date.now()))
  while (!killed) {
    try {
      if (kind === 'opened' || kind === 'grown') {
        const es = await exported('server', conv)
        if (!killed && es !== null) for (const e of es) shown.ids.add(e.id)
      }
      const s = await listed('server', conv)
      if (!killed) show(s)
    } catch (err) {
      if (!killed) throw err
    }
  }
  await exited

  // From its own disk: the index as the kill left it, then without it (derived state: a
  // new version rebuilds it from the manifest and the feeds).
  await cluster.serve('server', ['--offline'])
  let why = await recovered(conv, shown)
  if (why === null) {
    await cluster.kill('server', 'SIGKILL')
    await fs.rm(path.join(cluster.devices.get('server')?.dir as string, 'index'), { recursive: true, force: true })
    await cluster.serve('server', ['--offline'])
    const rebuilt = await recovered(conv, shown)
    if (rebuilt !== null) why = `after a rebuild of the index: ${rebuilt}`
  }
  await inNode('server', 'net', 'on')
  await connected()
  return { kind, delay, ok: why === null, why: why ?? '' }
}

/** Why the restarted server does not hold what it had shown, or null if it does. */
async function recovered (conv: string, shown: Shown): Promise<string | null> {
  const after = await listed('server', conv)
  const transcript = await inNode('server', 'show', conv)
  if (after === undefined) return `not listed after the restart (shown with ${shown.size} entries); show says: ${(transcript.err + transcript.out).trim().slice(0, 120)}`
  if (transcript.code !== 0) return `listed but not openable: ${transcript.err.trim()}`
  if (after.size < shown.size) return `${after.size} entries after the restart, ${shown.size} listed before`
  const es = await exported('server', conv) ?? []
  const ids = new Set(es.map(e => e.id))
  const lost = [...shown.ids].filter(id => !ids.has(id))
  if (lost.length > 0) return `${lost.length} entries shown before are gone`
  if (shown.reply !== undefined && !es.some(e => e.kind === 'assistant' && e.body.text === shown.reply)) return 'the answer is gone'
  return null
}

describe('a conversation a device has shown survives its SIGKILL', () => {
  it(`listed, opened, answered or grown, then killed ${DELAYS_MS.join(', ')} ms later: still there after an offline restart`, async () => {
    await cluster.serve('laptop')
    await cluster.serve('server')
    await cluster.pair('laptop', 'server')
    await connected()
    const outcomes: Outcome[] = []
    for (let n = 0; n < TRIALS; n++) {
      for (const kind of KINDS) {
        for (const delay of DELAYS_MS) outcomes.push(await trial(kind, delay, n))
      }
    }
    for (const kind of KINDS) {
      for (const delay of DELAYS_MS) {
        const of = outcomes.filter(o => o.kind === kind && o.delay === delay)
        console.log(`${kind} + ${delay} ms: ${of.filter(o => !o.ok).length}/${of.length} lost${of.some(o => !o.ok) ? ` (${of.find(o => !o.ok)?.why ?? ''})` : ''}`)
      }
    }
    expect(outcomes.filter(o => !o.ok)).toEqual([])
  }, 900_000)
})
