// `arbor serve` in a real process and Debian's Chromium driven by playwright-core, for the
// UI tests and bench/ui. Never `npx playwright install`: the system Chromium is used.
// No vitest here: bench/ui runs outside it.
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { chromiumPath } from '../../scripts/test-preflight.js'

const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'arbor.js')
const URL_RE = /http:\/\/127\.0\.0\.1:\d+\/#token=[0-9a-f]{64}/
const SHOTS = path.resolve(import.meta.dirname, '..', '..', 'test-results')

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

export interface Served {
  /** the page address with its token */
  url: string
  /** everything the node printed so far */
  log: () => string
  /** SIGTERM, then waits for the process to exit */
  stop: () => Promise<void>
  /** sends `signal` (SIGKILL: a crash), then waits for the process to exit */
  kill: (signal: NodeJS.Signals) => Promise<void>
}

export interface ServeOptions {
  /** the device's name (default 'ui') */
  name?: string
  /** the DHT to meet other devices on, host:port[,host:port] (default: one that answers nothing, so the node stays alone, offline) */
  bootstrap?: string
  /** more environment for the node (e.g. ARBOR_WORKSPACES) */
  env?: NodeJS.ProcessEnv
  timeoutMs?: number
}

/**
 * Runs `arbor serve --port 0` on `dataDir` (also its HOME) with the fake model as the node's
 * provider unless a settings.json is there already; resolves once it printed its address.
 */
export async function startServe (dataDir: string, o: ServeOptions = {}): Promise<Served> {
  const settings = path.join(dataDir, 'settings.json')
  if (!fs.existsSync(settings)) fs.writeFileSync(settings, JSON.stringify({ provider: 'fake' }))
  const child: ChildProcess = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--name', o.name ?? 'ui'], {
    env: { ...process.env, ARBOR_DATA: dataDir, ARBOR_BOOTSTRAP: o.bootstrap ?? '127.0.0.1:9', HOME: dataDir, ...o.env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let log = ''
  child.stdout?.on('data', d => { log += String(d) })
  child.stderr?.on('data', d => { log += String(d) })
  // if this process ends without stop() (a crash, a broken pipe), the node must not outlive it
  const orphanGuard = (): void => { child.kill('SIGKILL') }
  process.once('exit', orphanGuard)
  const exited = new Promise<void>(resolve => child.once('exit', () => { process.off('exit', orphanGuard); resolve() }))
  const kill = async (signal: NodeJS.Signals): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    await exited
  }
  const stop = (): Promise<void> => kill('SIGTERM')
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
  return { url, log: () => log, stop, kill }
}

/** A fresh Chromium profile in `userDataDir` with a fixed viewport (and the OS colour scheme to emulate, if given). */
export function launchChromium (userDataDir: string, o: { colorScheme?: 'light' | 'dark' } = {}): Promise<BrowserContext> {
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath(),
    viewport: { width: 1200, height: 800 },
    ...(o.colorScheme !== undefined ? { colorScheme: o.colorScheme } : {}),
    args: CHROMIUM_ARGS
  })
}

/**
 * Screenshots the page to test-results/<name>.png and fails unless it is not blank: a real
 * page compresses to far more than a flat colour does.
 */
export async function shot (page: Page, name: string): Promise<Buffer> {
  fs.mkdirSync(SHOTS, { recursive: true })
  const file = path.join(SHOTS, `${name}.png`)
  const png = await page.screenshot({ path: file })
  if (png.byteLength <= 8_000) throw new Error(`the screenshot ${file} is blank (${png.byteLength} bytes)`)
  return png
}

/** Keeps in `problems` what a page must never show: an uncaught error, a CSP refusal (an inline style or script the strict policy blocks). */
export function watchProblems (page: Page, problems: string[]): void {
  page.on('pageerror', e => problems.push(String(e)))
  page.on('console', m => { if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text()) })
}

/** Creates a conversation titled `title` from the sidebar's New conversation form (it opens). */
export async function newConversation (page: Page, title: string): Promise<void> {
  await page.getByRole('button', { name: 'New conversation', exact: true }).first().click()
  await page.getByRole('textbox', { name: 'Title', exact: true }).fill(title)
  await page.getByRole('button', { name: 'Create' }).click()
}
