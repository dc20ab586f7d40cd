import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { tempDirs } from '../../helpers/temp-dir'
import { launchChromium, newConversation, type Served, shot as screenshot, startServe, watchProblems } from '../../helpers/ui-session'

// Branching and reading in the web UI: "continue from here" from the tree and from the
// transcript, highlighted code in a reply, and both colour schemes. `arbor serve` in a real
// process, Debian's Chromium, the fake model (it echoes: "You said: …"). Screenshots go to
// test-results/.
const dirs = tempDirs()
let served: Served | undefined
let context: BrowserContext | undefined
let page: Page
const problems: string[] = []
const shot = (name: string): Promise<Buffer> => screenshot(page, `ui-branching-${name}`)

async function say (text: string, reply: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Message' }).fill(text)
  await page.keyboard.press('Enter')
  await page.getByText(reply, { exact: true }).waitFor({ timeout: 15_000 })
}

const cssVar = (name: string): Promise<string> => page.evaluate(n => getComputedStyle(document.documentElement).getPropertyValue(n).trim(), name)

beforeAll(async () => {
  // alone, offline
  served = await startServe(await dirs.make(), { name: 'ui-branching' })
  const url = served.url
  context = await launchChromium(await dirs.make(), { colorScheme: 'light' })
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(url).origin })
  page = await context.newPage()
  watchProblems(page, problems)
  await page.goto(url)
  await newConversation(page, 'Branching')
}, 60_000)

afterAll(async () => {
  await context?.close()
  await served?.stop()
  await dirs.cleanup()
})

describe('branching and reading in the web UI', () => {
  it('continues from an older turn picked in the tree (keyboard) or the transcript: a new branch, selected, the old one kept', async () => {
    await say('First question', 'You said: First question')
    await say('Second question', 'You said: Second question')
    await say('Third question', 'You said: Third question')

    // the tree takes focus; arrows move the highlight; C starts a continuation there
    await page.getByRole('button', { name: 'Show the conversation tree' }).click()
    const tree = page.getByRole('tree', { name: 'Conversation tree' })
    await tree.waitFor({ state: 'visible', timeout: 5_000 })
    await expect.poll(() => tree.getByRole('treeitem').count(), { timeout: 5_000 }).toBe(4)
    expect(await page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('tree')
    await page.keyboard.press('ArrowUp')
    await page.keyboard.press('ArrowUp')
    const first = tree.getByRole('treeitem').filter({ hasText: 'First question' })
    expect(await first.getAttribute('aria-selected')).toBe('true')
    expect(await page.getByRole('group', { name: 'Highlighted turn' }).textContent()).toContain('First question')
    await shot('tree-highlight')
    await page.keyboard.press('c')
    await tree.waitFor({ state: 'detached', timeout: 5_000 })
    const note = page.getByRole('status').filter({ hasText: 'Continuing from' })
    await note.waitFor({ timeout: 5_000 })
    expect(await note.textContent()).toContain('Continuing from “First question” — new branch')
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label')), { timeout: 2_000 }).toBe('Message')

    // Escape cancels; the transcript's own action starts it again
    await page.keyboard.press('Escape')
    await note.waitFor({ state: 'detached', timeout: 5_000 })
    const actions = page.getByRole('button', { name: /^Continue from here: a new branch after/ })
    expect(await actions.count()).toBe(2) // the last turn has none: that is plain sending
    await page.getByRole('button', { name: 'Continue from here: a new branch after “First question”' }).click()
    await note.waitFor({ timeout: 5_000 })
    await shot('continue-note')

    await say('A different second question', 'You said: A different second question')
    await note.waitFor({ state: 'detached', timeout: 5_000 })
    // the new branch is the one shown: the old turns after the first are not on it
    expect(await page.getByText('You said: Second question', { exact: true }).count()).toBe(0)
    expect(await page.getByText('You said: Third question', { exact: true }).count()).toBe(0)
    await page.getByText('You said: First question', { exact: true }).waitFor({ timeout: 5_000 })
    await page.getByRole('group', { name: 'Branch 2 of 2' }).waitFor({ state: 'visible', timeout: 5_000 })

    // the tree: the new turn is on the shown branch, one lane in; the old branch is still there
    await page.getByRole('button', { name: 'Show the conversation tree' }).click()
    await tree.waitFor({ state: 'visible', timeout: 5_000 })
    await expect.poll(() => tree.getByRole('treeitem').count(), { timeout: 5_000 }).toBe(5)
    const fresh = tree.getByRole('treeitem').filter({ hasText: 'A different second question' })
    const old = tree.getByRole('treeitem').filter({ hasText: 'Second question' }).filter({ hasNotText: 'different' })
    expect(await fresh.getAttribute('aria-current')).toBe('true')
    expect(await fresh.getAttribute('aria-level')).toBe('2')
    expect(await old.getAttribute('aria-current')).toBeNull()
    expect(await first.getAttribute('aria-expanded')).toBe('true')
    await shot('tree-after-continue')
    await old.click()
    await page.getByText('You said: Third question', { exact: true }).waitFor({ state: 'visible', timeout: 5_000 })
    // the tree is gone, so focus went on to the message box
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label')), { timeout: 2_000 }).toBe('Message')
    await page.getByRole('group', { name: 'Branch 1 of 2' }).waitFor({ state: 'visible', timeout: 5_000 })
    expect(problems).toEqual([])
  }, 90_000)

  it('renders a fenced code block in a reply with highlighted tokens and a working Copy button', async () => {
    const code = 'const answer: number = 42 // the answer\nconsole.log("<b>" + answer)'
    await page.getByRole('textbox', { name: 'Message' }).fill('Some code:\n```ts\n' + code + '\n```')
    await page.keyboard.press('Enter')
    const block = page.locator('.assistant code.hl.language-typescript').last()
    await block.waitFor({ timeout: 15_000 })
    expect(await block.textContent()).toBe(code)
    expect(await block.locator('.tok-keyword').first().textContent()).toBe('const')
    expect(await block.locator('.tok-type').first().textContent()).toBe('number')
    expect(await block.locator('.tok-number').first().textContent()).toBe('42')
    expect(await block.locator('.tok-comment').first().textContent()).toBe('// the answer')
    expect(await block.locator('.tok-string').first().textContent()).toBe('"<b>"')
    // the markup in the string stayed text
    expect(await page.locator('.assistant b').count()).toBe(0)
    // the theme's colours apply: keywords differ from plain code
    const keyword = await block.locator('.tok-keyword').first().evaluate(el => getComputedStyle(el).color)
    expect(keyword).not.toBe(await block.evaluate(el => getComputedStyle(el).color))

    await page.getByRole('button', { name: 'Copy ts code' }).last().click()
    await page.getByRole('button', { name: 'Copy ts code' }).last().getByText('Copied').waitFor({ timeout: 5_000 })
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(code)
    await shot('code-light')
    expect(problems).toEqual([])
  }, 60_000)

  it('follows the OS colour scheme on every screen: dark, then light again', async () => {
    const lightBg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor)
    const lightKeyword = await cssVar('--tok-keyword')
    await page.emulateMedia({ colorScheme: 'dark' })
    await expect.poll(() => page.evaluate(() => getComputedStyle(document.body).backgroundColor), { timeout: 2_000 }).toBe('rgb(22, 24, 22)')
    expect(lightBg).toBe('rgb(251, 251, 249)')
    expect(await cssVar('--tok-keyword')).not.toBe(lightKeyword)
    const dark = await shot('dark-chat')
    // the tree and the two other screens in dark: non-blank, and their surfaces dark
    await page.getByRole('button', { name: 'Show the conversation tree' }).click()
    const tree = page.getByRole('tree', { name: 'Conversation tree' })
    await tree.waitFor({ state: 'visible', timeout: 5_000 })
    expect(await tree.evaluate(el => getComputedStyle(el).backgroundColor)).toBe('rgb(32, 36, 32)')
    await shot('dark-tree')
    await page.keyboard.press('Escape')
    // Esc closes the tree and gives focus back to the button that opened it
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label')), { timeout: 2_000 }).toBe('Show the conversation tree')
    await page.getByRole('button', { name: 'Settings', exact: true }).click()
    await page.getByRole('heading', { name: 'Settings' }).waitFor({ timeout: 5_000 })
    expect(await page.getByLabel('Provider', { exact: true }).evaluate(el => getComputedStyle(el).backgroundColor)).toBe('rgb(32, 36, 32)')
    await shot('dark-settings')
    await page.getByRole('button', { name: 'Devices', exact: true }).click()
    await page.getByRole('table', { name: 'Devices' }).getByText('this device').waitFor({ timeout: 5_000 })
    expect(await page.getByRole('heading', { name: 'Devices' }).evaluate(el => getComputedStyle(el).color)).toBe('rgb(230, 232, 227)')
    await shot('dark-devices')
    await page.emulateMedia({ colorScheme: 'light' })
    await expect.poll(() => page.evaluate(() => getComputedStyle(document.body).backgroundColor), { timeout: 2_000 }).toBe(lightBg)
    expect(dark.byteLength).toBeGreaterThan(8_000)
    expect(problems).toEqual([])
  }, 60_000)
})
