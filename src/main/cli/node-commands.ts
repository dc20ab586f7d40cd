import fs from 'node:fs'
import path from 'node:path'
import type { CliIo } from './cli-io'
import { terminalJson } from './terminal-text'
import type { CliApi } from './api-session'
import type { DeviceDto } from '../../shared/api/api'

/** Options the node commands take (a subset of the CLI's). */
export interface NodeCommandOptions {
  dir: string
  bootstrap?: string
  name?: string
  /** `serve`: the web UI's port (default 7777, 0: any free one) and address (default 127.0.0.1) */
  port?: string
  host?: string
  /** `serve --offline`: start with the network off (no packet is sent until `arbor net on`) */
  offline?: boolean
}

export class NodeCommandError extends Error {
  constructor (message: string, readonly exitCode = 1) {
    super(message)
    this.name = 'NodeCommandError'
  }
}

function bootstrapOf (o: NodeCommandOptions, io: CliIo): string | undefined {
  return o.bootstrap ?? io.env.ARBOR_BOOTSTRAP
}

/**
 * Tests of pauses only (ARBOR_TEST_SIGSTOP=1): at the step boundary named in the file
 * `<data>/test-sigstop-at`, the node deletes the file and stops itself (SIGSTOP), so a test
 * freezes it at an exact moment and wakes it with SIGCONT.
 */
function sigstopAt (dir: string): (point: string) => void {
  const file = path.join(dir, 'test-sigstop-at')
  return point => {
    let at: string
    try { at = fs.readFileSync(file, 'utf8').trim() } catch { return }
    if (at !== point) return
    fs.unlinkSync(file)
    process.kill(process.pid, 'SIGSTOP')
  }
}

function sleep (ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise(resolve => {
    const timer = setTimeout(done, ms)
    function done (): void { clearTimeout(timer); signal?.removeEventListener('abort', done); resolve() }
    signal?.addEventListener('abort', done, { once: true })
  })
}

function waitForAbort (signal: AbortSignal | undefined): Promise<void> {
  return new Promise(resolve => {
    if (signal === undefined) return
    if (signal.aborted) resolve()
    else signal.addEventListener('abort', () => resolve(), { once: true })
  })
}

/** `arbor serve`: runs this device's node, with the web UI, until Ctrl-C. */
export async function serve (o: NodeCommandOptions, io: CliIo): Promise<number> {
  const port = o.port === undefined ? undefined : Number(o.port)
  if (o.port !== undefined && !(/^\d{1,5}$/.test(o.port) && (port as number) < 65536)) throw new NodeCommandError(`--port ${o.port}: not a port number (0-65535; 0 picks a free one)`, 2)
  if (o.host !== undefined && o.host.trim() === '') throw new NodeCommandError('--host is empty', 2)
  const { nodeApi } = await import('./api-session')
  const running = await nodeApi(o.dir).catch(() => null)
  if (running !== null) { await running.close(); throw new NodeCommandError(`a node is already serving ${o.dir}`) }
  // The one composition root, as Electron's utility process opens it: with its local socket, so `arbor` commands go through it.
  const [{ ArborNode, parseBootstrap }, { ServedNode }] = await Promise.all([import('../node'), import('../api/served-node')])
  const b = bootstrapOf(o, io)
  const fault = process.env.ARBOR_TEST_SIGSTOP === '1' ? sigstopAt(o.dir) : undefined
  const node = new ArborNode({ dataDir: o.dir, ...(b !== undefined ? { bootstrap: parseBootstrap(b) } : {}), ...(o.name !== undefined ? { name: o.name } : {}), ...(o.offline === true ? { online: false } : {}), ...(fault !== undefined ? { fault } : {}) })
  const served = new ServedNode(node)
  await served.ready()
  try {
    const { WebServer } = await import('../api/web-server')
    // the node's own API, which its local socket serves too: one per node (one guard per conversation's agent)
    const api = served.api
    // The default port may be taken (another node on this machine): then any free one.
    const web = new WebServer({ api, ...(o.host !== undefined ? { host: o.host } : {}), ...(port !== undefined ? { port } : { fallbackPort: true }) })
    try {
      await web.listen()
    } catch (err) {
      throw new NodeCommandError(`the web UI cannot listen on ${o.host ?? '127.0.0.1'} port ${port ?? 7777}: ${(err as Error).message}`)
    }
    try {
      const peers = node.cluster.devices().filter(d => d.key !== node.device)
      io.out(`Arbor node ${node.device.slice(0, 12)} (${node.cluster.name}) is serving ${o.dir}\n`)
      io.out(peers.length === 0
        ? 'not paired with any device yet: `arbor invite` here and `arbor join <code>` on another device\n'
        : `paired with ${peers.map(p => p.name).join(', ')}\n`)
      if (o.offline === true) io.out('the network is off (--offline): this device works alone until `arbor net on`\n')
      io.out(`web UI (keep this address to yourself: it carries the access token): ${web.url}\n`)
      io.out('the `arbor` command now works through this node; Ctrl-C stops it\n')
      node.sync.on('peer', (ev: { device: string; state: string }) => {
        const name = node.cluster.devices().find(d => d.key === ev.device)?.name ?? ev.device.slice(0, 12)
        io.err(`${new Date().toISOString().slice(11, 19)} ${name} ${ev.state}\n`)
      })
      await waitForAbort(io.signal)
      io.out('stopping\n')
      return 0
    } finally {
      await web.close()
    }
  } finally {
    await served.close()
  }
}

/** `arbor invite`: prints a one-time invite code (and, from a node opened for the command, waits for the join). */
export async function invite (api: CliApi, io: CliIo): Promise<number> {
  const inv = await api.call('devices.invite', {})
  io.out(`${inv.code}\n`)
  io.err(`on the other device: arbor join ${inv.code}\n(one use; expires at ${new Date(inv.expiresAt).toLocaleTimeString()})\n`)
  if (api.live) return 0
  io.err('waiting for the other device to join (Ctrl-C to stop)…\n')
  const before = (await api.call('devices.list', {})).length
  let joined: Array<{ device: string; name: string }> | null = null
  // bounded by the invite's expiry (and Ctrl-C)
  while (joined === null && Date.now() < inv.expiresAt && io.signal?.aborted !== true) {
    await sleep(200, io.signal)
    const now = await api.call('devices.list', {})
    if (now.length > before) joined = now
  }
  if (joined === null) { io.err('no device joined\n'); return 1 }
  const d = joined.at(-1)
  io.out(`paired with ${d?.name ?? 'a device'} (${d?.device.slice(0, 12) ?? ''})\n`)
  await new Promise(resolve => setTimeout(resolve, 2000)) // let the first sync start while both are here
  return 0
}

/** `arbor join <code>`. */
export async function join (api: CliApi, code: string, io: CliIo): Promise<number> {
  io.err('looking for the inviting device…\n')
  // Ctrl-C ends the session: the node aborts the join it was carrying out for it.
  const stop = (): void => { void api.close() }
  io.signal?.addEventListener('abort', stop, { once: true })
  try {
    const { inviter } = await api.call('devices.join', { code })
    io.out(`joined the cluster of ${inviter.slice(0, 12)}\n`)
  } finally {
    io.signal?.removeEventListener('abort', stop)
  }
  if (!api.live) {
    io.err('syncing for a moment; run `arbor serve` to keep this device in sync\n')
    await new Promise(resolve => setTimeout(resolve, 3000))
  }
  return 0
}

/** A device's row as `arbor devices --json` has always printed it (what the node knows, without the agents on it). */
function deviceRow (d: DeviceDto, live: boolean): Omit<DeviceDto, 'agents'> {
  const { agents: _agents, ...row } = d
  if (live) return row
  // a node opened for the command has met no device: what the cluster file remembers
  return { device: d.device, name: d.self ? `${d.name} (this device)` : d.name, self: d.self, connected: false, suspected: false, behind: 0, ...(d.lastSeen !== undefined && !d.self ? { lastSeen: d.lastSeen } : {}) }
}

/** `arbor devices`: this device and the paired ones. */
export async function devices (api: CliApi, io: CliIo, json: boolean): Promise<number> {
  const live = api.live
  const rows = (await api.call('devices.list', {})).map(d => deviceRow(d, live))
  if (json) { io.out(terminalJson({ live, devices: rows }) + '\n'); return 0 }
  const table = [['DEVICE', 'NAME', 'STATE', 'LAST SEEN', 'BEHIND']]
  const advice: string[] = []
  for (const r of rows) {
    const since = r.suspectedSince !== undefined ? ` since ${new Date(r.suspectedSince).toLocaleTimeString()}` : ''
    const notSyncing = r.version?.compat === 'too-old' || r.version?.compat === 'too-new'
    const state = r.self ? 'this device' : !live ? '-' : notSyncing ? `not syncing (${r.version?.compat === 'too-old' ? 'too old' : 'too new'})` : r.connected ? (r.suspected ? `suspected${since}` : 'online') : `offline${since}`
    table.push([r.device.slice(0, 12), r.name, state, r.self ? '-' : r.lastSeen !== undefined ? new Date(r.lastSeen).toLocaleString() : 'never', r.self || !live ? '-' : `${r.behind} entries`])
    if (r.version?.advice !== undefined) advice.push(r.version.advice)
  }
  const widths = table[0]?.map((_, i) => Math.max(...table.map(row => (row[i] ?? '').length))) ?? []
  io.out(table.map(row => row.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n') + '\n')
  // What to do about a device of another version, under the table (the rows stay one line each).
  for (const a of advice) io.out(`${a}\n`)
  if (!live) io.err('no node is running here: states are unknown (`arbor serve` runs one)\n')
  return 0
}

/** `arbor forget <device>`: from a node opened for the command, the others hear of it when this device's node runs. */
export async function forget (api: CliApi, device: string, io: CliIo): Promise<number> {
  io.out(`${(await api.call('devices.forget', { device })).text}\n`)
  return 0
}

/** `arbor net on|off`: switches the running node (`running`: its API, null when none runs). */
export async function netSwitch (arg: string | undefined, running: () => Promise<CliApi | null>, io: CliIo): Promise<number> {
  if (arg !== 'on' && arg !== 'off') throw new NodeCommandError('say `arbor net on` or `arbor net off`', 2)
  const api = await running()
  if (api === null) throw new NodeCommandError('no node is running here; `arbor serve` starts one (net on|off switches a running node)')
  await api.call('net.set', { on: arg === 'on' })
  io.out(arg === 'on' ? 'network on: syncing with paired devices\n' : 'network off: this device works alone until `arbor net on`\n')
  return 0
}
