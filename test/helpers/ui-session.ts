// `arbor serve` in a real process and Debian's Chromium driven by playwright-core, for the
// UI tests and bench/ui. Never `npx playwright install`: the system Chromium is used.
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { chromium, type BrowserContext } from 'playwright-core'

const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'arbor.js')
const URL_RE = /http:\/\/127\.0\.0\.1:\d+\/#token=[0-9a-f]{64}/

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

export interface Served {
  /** the page address with its token */
  url: string
  /** everything the node printed so far */
  log: () => string
  /** SIGTERM, then waits for the process to exit */
  stop: () => Promise<void>
}

/**
 * Runs `arbor serve --port 0` on `dataDir` with the fake model as the node's provider, alone
 * and offline (a bootstrap that answers nothing); resolves once it printed its address.
 */
export async function startServe (dataDir: string, o: { name?: string; timeoutMs?: number } = {}): Promise<Served> {
  const settings = path.join(dataDir, 'settings.json')
  if (!fs.existsSync(settings)) fs.writeFileSync(settings, JSON.stringify({ provider: 'fake' }))
  const child: ChildProcess = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--name', o.name ?? 'ui'], {
    env: { ...process.env, ARBOR_DATA: dataDir, ARBOR_BOOTSTRAP: '127.0.0.1:9', HOME: dataDir },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let log = ''
  child.stdout?.on('data', d => { log += String(d) })
  child.stderr?.on('data', d => { log += String(d) })
  // if this process ends without stop() (a crash, a broken pipe), the node must not outlive it
  const orphanGuard = (): void => { child.kill('SIGKILL') }
  process.once('exit', orphanGuard)
  const exited = new Promise<void>(resolve => child.once('exit', () => { process.off('exit', orphanGuard); resolve() }))
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
  }
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => { cleanup(); reject(new Error(`arbor serve printed no address in ${o.timeoutMs ?? 30_000} ms:\n${log}`)) }, o.timeoutMs ?? 30_000)
    const check = (): void => {
      const m = URL_RE.exec(log)
      if (m !== null) { cleanup(); resolve(m[0]) }
    }
    const onExit = (): void => { cleanup(); reject(new Error(`arbor serve exited (${child.exitCode}):\n${log}`)) }
    const cleanup = (): void => {
      clearTimeout(timer)
      child.stdout?.off('data', check)
      child.off('exit', onExit)
    }
    child.stdout?.on('data', check)
    child.once('exit', onExit)
  }).catch(async err => { await stop(); throw err })
  return { url, log: () => log, stop }
}

/** A fresh Chromium profile in `userDataDir` with a fixed viewport. */
export function launchChromium (userDataDir: string, viewport = { width: 1200, height: 800 }): Promise<BrowserContext> {
  return chromium.launchPersistentContext(userDataDir, { executablePath: '/usr/bin/chromium', viewport, args: CHROMIUM_ARGS })
}
