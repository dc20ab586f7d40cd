// A device as the e2e UI tests run it: `arbor serve` in a real process with its own data
// directory (the scripted `fake` model set up), its API over the WebSocket the browser uses,
// and the `arbor` CLI against it; and the two-device UI tests' setup.
import { afterAll, beforeAll } from 'vitest'
import createTestnet from 'hyperdht/testnet.js'
import type { BrowserContext, Page } from 'playwright-core'
import WebSocket from 'ws'
import type { ApiEvent, ApiMethod, ApiMethods, ServerMessage } from '../../src/shared/api/api'
import { runArbor, type ArborResult } from './arbor-processes'
import { tempDirs } from './temp-dir'
import { launchChromium, shot, startServe, type Served } from './ui-session'

/** A client of a node's API over its WebSocket, as the browser speaks it. */
export class ApiSocket {
  readonly events: ApiEvent[] = []
  private next = 1
  private readonly waiting = new Map<number, (m: ServerMessage) => void>()
  private constructor (private readonly ws: WebSocket) {
    ws.on('message', data => {
      const m = JSON.parse(String(data)) as ServerMessage
      if ('event' in m) this.events.push(m.event)
      else this.waiting.get(m.id)?.(m)
    })
  }

  static open (url: string): Promise<ApiSocket> {
    const u = new URL(url)
    const token = new URLSearchParams(u.hash.slice(1)).get('token') ?? ''
    const ws = new WebSocket(`ws://${u.host}/api?token=${token}`, { origin: u.origin })
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new ApiSocket(ws)))
      ws.once('error', reject)
    })
  }

  request<M extends ApiMethod> (method: M, params: ApiMethods[M]['params']): Promise<ApiMethods[M]['result']> {
    const id = this.next++
    return new Promise((resolve, reject) => {
      this.waiting.set(id, m => {
        this.waiting.delete(id)
        if ('error' in m) reject(new Error(`${method}: ${m.error.message}`))
        else resolve((m as { result: unknown }).result as ApiMethods[M]['result'])
      })
      this.ws.send(JSON.stringify({ id, method, params }))
    })
  }

  close (): void { this.ws.close() }
}

export interface ServedNode extends Served { name: string; dir: string; bootstrap: string; api: ApiSocket }

/**
 * `arbor serve` for one device in `dir` (startServe), meeting its devices on the DHT
 * `bootstrap` (host:port,…); resolves once it printed its address and its API answers.
 * Its stop() closes the API socket too.
 */
export async function serveNode (name: string, dir: string, bootstrap: string): Promise<ServedNode> {
  const served = await startServe(dir, { name, bootstrap })
  const api = await ApiSocket.open(served.url).catch(async (err: unknown) => { await served.stop(); throw err })
  return { ...served, name, dir, bootstrap, api, stop: async () => { api.close(); await served.stop() } }
}

/** Runs `arbor ...` against a device (through its running node). */
export function arbor (dev: ServedNode, ...args: string[]): Promise<ArborResult> {
  return runArbor({ ...process.env, ARBOR_DATA: dev.dir, ARBOR_BOOTSTRAP: dev.bootstrap, HOME: dev.dir }, args, 30_000)
}

export interface LaptopAndServer {
  laptop: ServedNode
  server: ServedNode
  /** a Chromium page, for the laptop's web UI */
  page: Page
  /** shot() of the page to test-results/<prefix>-<name>.png */
  shot: (name: string) => Promise<Buffer>
}

/**
 * The two-device UI tests' setup, registered as the file's hooks (call it at its top level):
 * a HyperDHT testnet on loopback, `laptop` and `server` served on it (not paired yet) and a
 * Chromium page; all stopped after the file, each node's output printed when ARBOR_TEST_LOGS is set.
 */
export function laptopAndServer (prefix: string): LaptopAndServer {
  const dirs = tempDirs(`arbor-${prefix}-`)
  let testnet: { bootstrap: Array<{ host: string; port: number }>; destroy: () => Promise<void> } | undefined
  let context: BrowserContext | undefined
  const devices: ServedNode[] = [] // started so far, stopped after the tests even if another failed to start
  const ui = { shot: name => shot(ui.page, `${prefix}-${name}`) } as LaptopAndServer
  beforeAll(async () => {
    testnet = await createTestnet(3)
    const bootstrap = testnet.bootstrap.map(b => `${b.host}:${b.port}`).join(',')
    const serve = async (name: string): Promise<ServedNode> => {
      const d = await serveNode(name, await dirs.make(), bootstrap)
      devices.push(d)
      return d
    }
    ;[ui.laptop, ui.server, context] = await Promise.all([serve('laptop'), serve('server'), dirs.make().then(launchChromium)])
    ui.page = await context.newPage()
  }, 60_000)
  afterAll(async () => {
    await context?.close()
    for (const d of devices) await d.stop()
    // What each node said, to read when a test fails.
    if (process.env.ARBOR_TEST_LOGS !== undefined) for (const d of devices) console.log(`--- ${d.name}\n${d.log().slice(-3000)}`)
    await testnet?.destroy()
    await dirs.cleanup()
  })
  return ui
}
