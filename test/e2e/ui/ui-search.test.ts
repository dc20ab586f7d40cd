import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { tempDirs } from '../../helpers/temp-dir'
import { launchChromium, newConversation, type Served, shot as screenshot, startServe, watchProblems } from '../../helpers/ui-session'

// Ctrl+K in the web UI: a word written only in an old branch of another conversation is found,
// and picking it opens that conversation on that branch, scrolled to the entry and outlined.
// `arbor serve` in a real process, Debian's Chromium, the fake model ("You said: …").
const dirs = tempDirs()
let served: Served | undefined
let context: BrowserContext | undefined
let page: Page
const problems: string[] = []
const shot = (name: string): Promise<Buffer> => screenshot(page, `ui-search-${name}`)

async function say (text: string, reply: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Message' }).fill(text)
  await page.keyboard.press('Enter')
  await page.getByText(reply, { exact: true }).waitFor({ timeout: 15_000 })
}

async function create (title: string): Promise<void> {
  await newConversation(page, title)
  await page.getByRole('heading', { name: title }).waitFor({ timeout: 10_000 })
}

beforeAll(async () => {
  served = await startServe(await dirs.make(), { name: 'ui-search' })
  context = await launchChromium(await dirs.make(), { colorScheme: 'light' })
  page = await context.newPage()
  watchProblems(page, problems)
  await page.goto(served.url)
}, 60_000)

afterAll(async () => {
  await context?.close()
  await served?.stop()
  await dirs.cleanup()
})

describe('search in the web UI', () => {
  it('Ctrl+K finds a word written only in an old branch and shows it in its branch', async () => {
    await create('Travel')
    await say('Hello there', 'You said: Hello there')
    await say('What about the zeppelin?', 'You said: What about the zeppelin?')
    // a new branch after the first turn: the zeppelin is only on the old one now
    await page.getByRole('button', { name: 'Continue from here: a new branch after “Hello there”' }).click()
    await say('Trains then', 'You said: Trains then')
    expect(await page.getByText('You said: What about the zeppelin?', { exact: true }).count()).toBe(0)
    await create('Elsewhere')
    await say('Nothing to see', 'You said: Nothing to see')

    await page.keyboard.press('Control+k')
    const dialog = page.getByRole('dialog', { name: 'Search every conversation' })
    await dialog.waitFor({ timeout: 5_000 })
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Search')
    await page.keyboard.type('zeppe')
    const options = dialog.getByRole('option')
    await expect.poll(() => options.count(), { timeout: 5_000 }).toBe(2)
    // newest first: the reply, then the question; the match is marked
    expect(await options.nth(0).textContent()).toContain('You said: What about the zeppelin?')
    expect(await options.nth(1).textContent()).toBe('TravelWhat about the zeppelin?')
    expect(await options.nth(1).locator('mark').textContent()).toBe('zeppelin')
    await shot('palette')
    await page.keyboard.press('ArrowDown')
    expect(await options.nth(1).getAttribute('aria-selected')).toBe('true')
    await page.keyboard.press('Enter')
    await dialog.waitFor({ state: 'detached', timeout: 5_000 })

    // the conversation opens on the old branch, the entry outlined
    await page.getByRole('heading', { name: 'Travel' }).waitFor({ timeout: 10_000 })
    await page.getByText('You said: What about the zeppelin?', { exact: true }).waitFor({ state: 'visible', timeout: 5_000 })
    expect(await page.getByText('You said: Trains then', { exact: true }).count()).toBe(0)
    await page.getByRole('group', { name: 'Branch 1 of 2' }).waitFor({ state: 'visible', timeout: 5_000 })
    const hit = page.locator('.turn-slot.search-hit')
    await hit.waitFor({ timeout: 5_000 })
    expect(await hit.textContent()).toContain('What about the zeppelin?')
    expect(await hit.textContent()).not.toContain('You said')
    expect(await hit.isVisible()).toBe(true)
    await shot('landed')
    // opened again from the list: the old branch stays shown (the node keeps the selection), the outline does not come back
    const nav = page.getByRole('navigation', { name: 'Conversation list' })
    await nav.getByRole('button', { name: /Elsewhere/ }).click()
    await page.getByRole('heading', { name: 'Elsewhere' }).waitFor({ timeout: 10_000 })
    await nav.getByRole('button', { name: /Travel/ }).click()
    await page.getByText('You said: What about the zeppelin?', { exact: true }).waitFor({ state: 'visible', timeout: 10_000 })
    expect(await page.locator('.turn-slot.search-hit').count()).toBe(0)

    // Escape closes the palette without going anywhere
    await page.keyboard.press('Meta+k')
    await dialog.waitFor({ timeout: 5_000 })
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached', timeout: 5_000 })
    expect(problems).toEqual([])
  }, 90_000)
})
