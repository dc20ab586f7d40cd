import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { tempDirs } from '../../helpers/temp-dir'
import { launchChromium, newConversation, type Served, shot as screenshot, startServe, watchProblems } from '../../helpers/ui-session'

// A conversation's limits in the web UI: its token budget set in the header's Limits menu stops
// the agent once spent (the scripted model reports usage), and the menu says what was used.
// `arbor serve` in a real process, Debian's Chromium, the fake model (it echoes).
const dirs = tempDirs()
let served: Served | undefined
let context: BrowserContext | undefined
let page: Page
const problems: string[] = []

beforeAll(async () => {
  served = await startServe(await dirs.make(), { name: 'ui-limits' })
  context = await launchChromium(await dirs.make(), { colorScheme: 'light' })
  page = await context.newPage()
  watchProblems(page, problems)
  await page.goto(served.url)
  await newConversation(page, 'Budgeted')
}, 60_000)

afterAll(async () => {
  await context?.close()
  await served?.stop()
  await dirs.cleanup()
})

describe('limits of a conversation in the web UI', () => {
  it('a token budget set in the Limits menu stops the agent once spent, and the menu counts what was used', async () => {
    const menu = page.locator('details.export-menu', { hasText: 'Limits' })
    await menu.locator('summary').click()
    const form = page.getByRole('form', { name: 'Limits of this conversation' })
    // nothing set here: the step limit shown is the default's
    await expect.poll(() => form.getByLabel('Model steps per turn').getAttribute('placeholder')).toBe('50 (the default)')
    await expect.poll(() => form.getByText(/has used 0 tokens here/).isVisible()).toBe(true)
    await form.getByLabel('Token budget').fill('abc')
    await form.getByRole('button', { name: 'Save limits' }).click()
    await form.getByRole('alert').getByText(/token budget must be a whole number/).waitFor({ timeout: 5_000 })
    await form.getByLabel('Token budget').fill('1')
    await form.getByRole('button', { name: 'Save limits' }).click()
    await expect.poll(() => form.getByRole('button', { name: 'Save limits' }).isEnabled()).toBe(true)
    await menu.locator('summary').click() // closed

    // the first turn spends the budget; the second stops before its model step, saying why
    await page.getByRole('textbox', { name: 'Message' }).fill('first')
    await page.keyboard.press('Enter')
    await page.getByText('You said: first', { exact: true }).waitFor({ timeout: 15_000 })
    await page.getByRole('textbox', { name: 'Message' }).fill('second')
    await page.keyboard.press('Enter')
    await page.getByText('The agent stopped: the conversation reached its token budget').waitFor({ timeout: 15_000 })
    expect(await page.getByText('You said: second', { exact: true }).count()).toBe(0)

    await menu.locator('summary').click()
    expect(await form.getByLabel('Token budget').inputValue()).toBe('1')
    await expect.poll(async () => Number((await form.getByText(/has used [\d,]+ tokens here/).textContent() ?? '').replace(/\D/g, ''))).toBeGreaterThan(0)
    await screenshot(page, 'ui-limits-budget')
    // it closes as menus do: Escape, and a press outside it
    const isOpen = (): Promise<boolean> => menu.evaluate(d => (d as HTMLDetailsElement).open)
    await page.keyboard.press('Escape')
    await expect.poll(isOpen).toBe(false)
    await menu.locator('summary').click()
    await expect.poll(isOpen).toBe(true)
    await page.getByRole('textbox', { name: 'Message' }).click()
    await expect.poll(isOpen).toBe(false)
    expect(problems).toEqual([])
  }, 60_000)
})
