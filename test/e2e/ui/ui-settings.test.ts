import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { tempDirs } from '../../helpers/temp-dir'
import { launchChromium, shot, startServe, type Served } from '../../helpers/ui-session'

// The Settings screen when the stored settings load slowly: `arbor serve` in a real process,
// Chromium, and the page's WebSocket routed through Playwright so that the answer to
// settings.get arrives late. What the user chose meanwhile must survive the load and be saved.
const SLOW_MS = 2500
const dirs = tempDirs()
let served: Served | undefined
let context: BrowserContext | undefined
let page: Page
let dataDir = ''
/** when each delayed settings.get answer was handed to the page */
const delivered: number[] = []

beforeAll(async () => {
  dataDir = await dirs.make()
  fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({ provider: 'fake', model: 'stored-model' }))
  served = await startServe(dataDir, { name: 'ui-settings' })
  context = await launchChromium(await dirs.make())
  page = await context.newPage()
  await page.routeWebSocket(/\/api(\?|$)/, ws => {
    const server = ws.connectToServer()
    const slow = new Set<number>()
    ws.onMessage(m => {
      const req = JSON.parse(String(m)) as { id?: number; method?: string }
      if (req.method === 'settings.get' && typeof req.id === 'number') slow.add(req.id)
      server.send(m)
    })
    server.onMessage(m => {
      const res = JSON.parse(String(m)) as { id?: number }
      if (typeof res.id === 'number' && slow.has(res.id)) setTimeout(() => { delivered.push(Date.now()); ws.send(m) }, SLOW_MS)
      else ws.send(m)
    })
  })
}, 60_000)

afterAll(async () => {
  await context?.close()
  await served?.stop()
  await dirs.cleanup()
})

describe('Settings, with the stored settings loading slowly', () => {
  it('keeps a provider, base URL and model chosen before the load arrived, and saves them', async () => {
    const errors: string[] = []
    page.on('pageerror', e => errors.push(String(e)))
    await page.goto(served?.url ?? '')
    await page.getByRole('button', { name: 'Settings', exact: true }).click()
    await page.getByRole('heading', { name: 'Settings' }).waitFor({ timeout: 10_000 })
    const loading = page.getByRole('status').getByText(/Loading the stored settings/)
    const saidLoading = await loading.isVisible()

    // the user's choice, within the first second
    await page.getByLabel('Provider', { exact: true }).selectOption('compatible')
    await page.getByLabel('Base URL', { exact: true }).fill('http://127.0.0.1:9/v1')
    await page.getByLabel('Model', { exact: true }).fill('my-model')
    expect(delivered).toEqual([]) // all of it before the stored settings arrived

    // Save is enabled once the stored settings are there
    const save = page.getByRole('button', { name: 'Save' })
    await expect.poll(() => save.isEnabled(), { timeout: SLOW_MS + 10_000 }).toBe(true)
    expect(delivered.length).toBeGreaterThan(0)
    expect(await page.getByLabel('Provider', { exact: true }).inputValue()).toBe('compatible')
    expect(await page.getByLabel('Base URL', { exact: true }).inputValue()).toBe('http://127.0.0.1:9/v1')
    expect(await page.getByLabel('Model', { exact: true }).inputValue()).toBe('my-model')
    // an untouched field took the stored value
    await page.getByText(/No key is stored/).waitFor({ timeout: 5_000 })
    await shot(page, 'ui-settings-slow-load')

    // and the screen said, while it waited, that it was loading and that changes are kept
    expect(saidLoading).toBe(true)
    expect(await loading.isVisible()).toBe(false)

    // the window of a model whose server does not say it
    await page.getByLabel('Context window (tokens)', { exact: true }).fill('16384')
    await save.click()
    await page.getByRole('status').getByText('Saved.').waitFor({ timeout: 5_000 })
    const written = JSON.parse(fs.readFileSync(path.join(dataDir, 'settings.json'), 'utf8')) as Record<string, unknown>
    expect(written).toMatchObject({ provider: 'openai', baseURL: 'http://127.0.0.1:9/v1', model: 'my-model', contextWindow: 16384 })
    expect(written.maxSteps).toBeUndefined() // the step limit left as shown stays the default
    expect(await page.getByLabel('Provider', { exact: true }).inputValue()).toBe('compatible')
    expect(errors).toEqual([])
  }, 60_000)
})
