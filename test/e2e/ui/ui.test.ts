import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { tempDirs } from '../../helpers/temp-dir'
import { launchChromium, type Served, shot as screenshot, startServe, newConversation as createConversation } from '../../helpers/ui-session'

// The web UI as a user sees it: `arbor serve` in a real process, Debian's Chromium driven by
// Playwright, the scripted `fake` model. Screenshots are kept in test-results/.
const dirs = tempDirs()
let served: Served | undefined
let url = ''
let context: BrowserContext | undefined
let page: Page
let dataDir = ''
const shot = (name: string): Promise<Buffer> => screenshot(page, `ui-${name}`)

/** The app opened afresh, a conversation created with `title` and shown. */
async function newConversation (title: string): Promise<void> {
  await page.goto(url)
  await createConversation(page, title)
  await page.getByRole('heading', { name: title, level: 2 }).waitFor({ timeout: 10_000 })
}

beforeAll(async () => {
  const data = await dirs.make()
  dataDir = data
  // The scripted model: "files" makes it run bash; "slowly" streams for a few seconds; anything else is echoed.
  const script = path.join(data, 'script.json')
  fs.writeFileSync(script, JSON.stringify({
    rules: [{ match: 'table', reply: { text: 'Here:\n\n| Tool | Runs |\n| :--- | ---: |\n| bash | 3 |\n| read_file | 12 |\n\n- [x] ~~old~~ AT&amp;T' } }, { match: 'slowly', reply: { text: 'Taking my time. '.repeat(20), chunkSize: 4, delayMsPerChunk: 25 } }, { match: 'files', reply: [{ toolCalls: [{ name: 'bash', args: { command: 'echo hello from the sandbox && ls -a' } }] }, { text: 'The tool said: {{lastToolOutput}}' }] }],
    default: { text: 'You said: {{lastUser}}' }
  }))
  fs.writeFileSync(path.join(data, 'settings.json'), JSON.stringify({ provider: 'fake', script }))
  // alone, offline; agents work in their own directory, outside Arbor's data (which tools never see)
  served = await startServe(data, { name: 'ui-test', env: { ARBOR_WORKSPACES: await dirs.make() } })
  url = served.url
  context = await launchChromium(await dirs.make())
  page = await context.newPage()
}, 60_000)

afterAll(async () => {
  await context?.close()
  await served?.stop()
  await dirs.cleanup()
})

describe('the web UI served by arbor serve, in Chromium', () => {
  it('creates a conversation, chats, branches with edit-and-resend, and moves between branches', async () => {
    const errors: string[] = []
    page.on('pageerror', e => errors.push(String(e)))
    await newConversation('Trip planning')
    await page.getByRole('textbox', { name: 'Message' }).fill('Where should we go?')
    await page.keyboard.press('Enter')
    await page.getByText('You said: Where should we go?').waitFor({ timeout: 15_000 })
    await shot('chat')

    // edit and resend: a new branch beside the first
    await page.getByRole('button', { name: /Edit this message/ }).click()
    const edit = page.getByRole('textbox', { name: 'Edited message' })
    await edit.fill('Somewhere warm?')
    await edit.press('Enter')
    await page.getByText('You said: Somewhere warm?').waitFor({ timeout: 15_000 })
    await page.getByRole('group', { name: 'Branch 2 of 2' }).waitFor({ state: 'visible', timeout: 5_000 })
    expect(await page.getByText('You said: Where should we go?').count()).toBe(0)
    await shot('branch-2')

    // back to the first branch
    await page.getByRole('button', { name: 'Previous branch' }).click()
    await page.getByText('You said: Where should we go?').waitFor({ timeout: 5_000 })
    await page.getByRole('group', { name: 'Branch 1 of 2' }).waitFor({ state: 'visible', timeout: 5_000 })
    await shot('branch-1')

    // the tree: the root and both branches' turns; picking the other branch shows it
    await page.getByRole('button', { name: 'Show the conversation tree' }).click()
    const tree = page.getByRole('tree', { name: 'Conversation tree' })
    await tree.waitFor({ state: 'visible', timeout: 5_000 })
    const items = tree.getByRole('treeitem')
    await expect.poll(() => items.count(), { timeout: 5_000 }).toBe(3)
    const first = items.filter({ hasText: 'Where should we go?' })
    const second = items.filter({ hasText: 'Somewhere warm?' })
    expect(await first.getAttribute('aria-current')).toBe('true')
    expect(await second.getAttribute('aria-current')).toBeNull()
    expect(await second.getAttribute('aria-level')).toBe('2')
    // fork connectors like `arbor tree`'s: ├ for the first branch, └ for the last
    expect(await first.locator('.tree-lane.tee').count()).toBe(1)
    expect(await second.locator('.tree-lane.elbow').count()).toBe(1)
    await shot('tree')
    await second.click()
    await tree.waitFor({ state: 'detached', timeout: 5_000 })
    await page.getByText('You said: Somewhere warm?').waitFor({ state: 'visible', timeout: 5_000 })
    await page.getByRole('group', { name: 'Branch 2 of 2' }).waitFor({ state: 'visible', timeout: 5_000 })
    expect(await page.getByText('You said: Where should we go?').count()).toBe(0)

    // the list shows it with its two branches; the UI never threw
    await page.getByRole('navigation', { name: 'Conversation list' }).getByText('Trip planning').waitFor({ state: 'visible', timeout: 5_000 })
    expect(errors).toEqual([])
  }, 60_000)

  it('renders the Markdown models write: a GFM table as a table, task lists, strikethrough, entities', async () => {
    await newConversation('Markdown')
    await page.getByRole('textbox', { name: 'Message' }).fill('show me a table')
    await page.keyboard.press('Enter')
    const table = page.getByRole('table')
    await table.waitFor({ timeout: 15_000 })
    expect(await table.getByRole('columnheader').allInnerTexts()).toEqual(['Tool', 'Runs'])
    expect(await table.getByRole('cell').allInnerTexts()).toEqual(['bash', '3', 'read_file', '12'])
    expect(await page.getByRole('checkbox', { name: 'done' }).isChecked()).toBe(true)
    expect(await page.locator('.md del').innerText()).toBe('old')
    await page.getByText('AT&T', { exact: false }).waitFor({ timeout: 5_000 })
    expect(await page.getByText('| Tool |').count()).toBe(0)
    // the header: the shown branch's context against the window this device's model has
    await page.locator('.chat-meta .usage').filter({ hasText: /^context [\d.]+k? \/ [\d.]+[kM]? · / }).waitFor({ timeout: 5_000 })
    await shot('markdown')
  }, 60_000)

  it('queues a message sent while the agent works: answered after its turn, in order', async () => {
    await newConversation('Queueing')
    const box = page.getByRole('textbox', { name: 'Message' })
    await box.fill('take it slowly')
    await page.keyboard.press('Enter')
    await page.getByRole('button', { name: 'Stop the agent' }).waitFor({ timeout: 10_000 })
    await box.fill('and after that?')
    await page.keyboard.press('Enter')
    await page.getByText(/One message waits for the agent's turn to end/).waitFor({ timeout: 5_000 })
    await shot('queued')
    await page.getByText('You said: and after that?').waitFor({ timeout: 20_000 })
    // in order: the slow answer, then the queued message and its answer
    const text = await page.locator('.scroll').innerText()
    const slow = text.indexOf('Taking my time.')
    const asked = text.indexOf('and after that?')
    expect(slow).toBeGreaterThanOrEqual(0)
    expect(asked).toBeGreaterThan(slow)
    expect(text.indexOf('You said: and after that?')).toBeGreaterThan(asked)
    expect(await page.getByRole('group', { name: /Branch \d of/ }).count()).toBe(0) // one branch: not forked mid-turn
  }, 60_000)

  it('chats through a tool call: a card with its arguments, output and status, then the answer', async () => {
    const errors: string[] = []
    page.on('pageerror', e => errors.push(String(e)))
    await page.goto(url)
    await page.getByRole('button', { name: 'New conversation', exact: true }).first().click()
    await page.getByRole('textbox', { name: 'Title', exact: true }).fill('Tools')
    await page.getByRole('textbox', { name: 'Model', exact: true }).fill('scripted-tools')
    await page.getByRole('button', { name: 'Create' }).click()
    // the new conversation is open (typing earlier would go to the one it replaces)
    await page.getByRole('heading', { name: 'Tools', level: 2 }).waitFor({ timeout: 10_000 })
    await page.getByRole('textbox', { name: 'Message' }).fill('show me the files')
    await page.keyboard.press('Enter')
    await page.getByText(/The tool said: hello from the sandbox/).waitFor({ timeout: 45_000 }).catch(async (err: unknown) => {
      // say what the page and the node showed instead
      throw new Error(`${String(err)}\n--- the chat:\n${await page.locator('.chat').innerText().catch(() => '?')}\n--- the node:\n${served?.log().slice(-3000)}`)
    })
    // the model chosen for this conversation answered
    await page.getByText(/scripted-tools/).first().waitFor({ timeout: 5_000 })
    const head = page.getByRole('button', { name: /bash.*echo hello from the sandbox.*done/ })
    await head.waitFor({ state: 'visible', timeout: 5_000 })
    if (await head.getAttribute('aria-expanded') !== 'true') await head.click()
    const body = page.locator('.tool-card.status-ok .tool-body')
    await body.getByText('effect: workspace').waitFor({ timeout: 5_000 })
    expect(await body.getByLabel('Arguments').textContent()).toContain('echo hello from the sandbox')
    await body.getByText(/hello from the sandbox/).first().waitFor({ timeout: 5_000 })
    await shot('tool-call')
    // collapsed again by its head
    await head.click()
    expect(await head.getAttribute('aria-expanded')).toBe('false')
    expect(errors).toEqual([])
  }, 90_000)

  it('keeps settings across a reload, lists this device and makes an invite code', async () => {
    const errors: string[] = []
    page.on('pageerror', e => errors.push(String(e)))
    await page.goto(url)
    const settings = page.getByRole('button', { name: 'Settings', exact: true })
    // first OpenAI, then Fake: each choice is saved by the node
    await settings.click()
    const provider = page.getByLabel('Provider', { exact: true })
    await provider.selectOption('openai')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('status').getByText('Saved.').waitFor({ timeout: 5_000 })
    expect(JSON.parse(fs.readFileSync(path.join(dataDir, 'settings.json'), 'utf8'))).toMatchObject({ provider: 'openai' })
    await provider.selectOption('fake')
    await page.getByLabel('Model', { exact: true }).fill('scripted')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('status').getByText('Saved.').waitFor({ timeout: 5_000 })
    await page.reload()
    await page.getByRole('button', { name: 'Settings', exact: true }).click()
    await page.getByRole('heading', { name: 'Settings' }).waitFor({ timeout: 5_000 })
    await expect.poll(() => page.getByLabel('Model', { exact: true }).inputValue(), { timeout: 5_000 }).toBe('scripted')
    expect(await page.getByLabel('Provider', { exact: true }).inputValue()).toBe('fake')
    expect(JSON.parse(fs.readFileSync(path.join(dataDir, 'settings.json'), 'utf8'))).toMatchObject({ provider: 'fake', model: 'scripted' })
    await shot('settings')

    // Escape goes back to the chat; Devices lists this device and makes an invite code
    await page.keyboard.press('Escape')
    await page.getByRole('heading', { name: 'Settings' }).waitFor({ state: 'detached', timeout: 5_000 })
    await page.getByRole('button', { name: 'Devices', exact: true }).click()
    const table = page.getByRole('table', { name: 'Devices' })
    await table.getByRole('row').filter({ hasText: 'ui-test' }).getByText('this device').waitFor({ timeout: 5_000 })
    await page.getByRole('button', { name: 'Invite a device' }).click()
    const code = page.getByLabel('Invite code', { exact: true })
    await code.waitFor({ timeout: 10_000 })
    expect(await code.textContent()).toMatch(/^[ybndrfg8ejkmcpqxot1uwisza345h769]{40,}$/)
    await shot('devices')
    expect(errors).toEqual([])
  }, 60_000)
})
