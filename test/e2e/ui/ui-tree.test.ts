import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { tempDirs } from '../../helpers/temp-dir'
import { launchChromium, newConversation, type Served, shot as screenshot, startServe, watchProblems } from '../../helpers/ui-session'

// The tree view as a tree people use: fork connectors, folding a fork (toggle and ←/→),
// naming a branch (the row, the switcher's tooltip), a compaction marked in the tree and
// unfolded in the transcript. `arbor serve` in a real process, Debian's Chromium, the fake
// model (it echoes: "You said: …", and summarises a compaction deterministically).
const dirs = tempDirs()
let served: Served | undefined
let context: BrowserContext | undefined
let page: Page
const problems: string[] = []
const shot = (name: string): Promise<Buffer> => screenshot(page, `ui-tree-${name}`)

async function say (text: string, reply: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Message' }).fill(text)
  await page.keyboard.press('Enter')
  await page.getByText(reply, { exact: true }).waitFor({ timeout: 15_000 })
}

const tree = (): Locator => page.getByRole('tree', { name: 'Conversation tree' })
const row = (text: string): Locator => tree().getByRole('treeitem').filter({ hasText: text })
async function openTree (): Promise<void> {
  await page.getByRole('button', { name: 'Show the conversation tree' }).click()
  await tree().waitFor({ state: 'visible', timeout: 5_000 })
}
const activeText = (): Promise<string | null> => tree().evaluate(t => {
  const id = t.getAttribute('aria-activedescendant')
  return id === null ? null : document.getElementById(id)?.textContent ?? null
})

beforeAll(async () => {
  served = await startServe(await dirs.make(), { name: 'ui-tree' })
  context = await launchChromium(await dirs.make(), { colorScheme: 'light' })
  page = await context.newPage()
  watchProblems(page, problems)
  await page.goto(served.url)
  await newConversation(page, 'Trees')
  // First → Second → Third, and First → Other second (shown)
  await say('First question', 'You said: First question')
  await say('Second question', 'You said: Second question')
  await say('Third question', 'You said: Third question')
  await page.getByRole('button', { name: 'Continue from here: a new branch after “First question”' }).click()
  await say('Other second', 'You said: Other second')
}, 90_000)

afterAll(async () => {
  await context?.close()
  await served?.stop()
  await dirs.cleanup()
})

describe('the tree view', () => {
  it('draws fork connectors and folds a fork by its toggle and by ←/→, saying what it hides; the shown branch opens again', async () => {
    await openTree()
    await expect.poll(() => tree().getByRole('treeitem').count(), { timeout: 5_000 }).toBe(5)
    // connectors: the first child of the fork hangs from a ├, the last from a └
    expect(await row('Second question').locator('.tree-lane.tee').count()).toBe(1)
    expect(await row('Other second').locator('.tree-lane.elbow').count()).toBe(1)
    expect(await row('Third question').locator('.tree-lane.pipe').count()).toBe(1)
    const first = row('First question')
    expect(await first.getAttribute('aria-expanded')).toBe('true')
    expect(await activeText()).toContain('Other second')

    // fold by the toggle: the shown branch's row goes, and the highlight moves to the fold
    await first.locator('.tree-fold').click()
    await expect.poll(() => tree().getByRole('treeitem').count()).toBe(2)
    expect(await first.getAttribute('aria-expanded')).toBe('false')
    expect(await first.textContent()).toContain('12 entries, 2 branches folded') // three turns of four
    expect(await first.getAttribute('aria-current')).toBe('true') // the shown branch runs through the fold
    expect(await activeText()).toContain('First question')
    expect(await tree().isVisible()).toBe(true) // a toggle is not a pick
    await shot('folded')

    // → unfolds, → again steps in; ← on a plain row goes up to its fork; ← there folds
    await page.keyboard.press('ArrowRight')
    await expect.poll(() => tree().getByRole('treeitem').count()).toBe(5)
    expect(await first.getAttribute('aria-expanded')).toBe('true')
    await page.keyboard.press('ArrowRight')
    await expect.poll(activeText).toContain('Second question')
    await page.keyboard.press('ArrowDown')
    await expect.poll(activeText).toContain('Third question')
    await page.keyboard.press('ArrowLeft')
    await expect.poll(activeText).toContain('First question')
    await page.keyboard.press('ArrowLeft')
    await expect.poll(() => tree().getByRole('treeitem').count()).toBe(2)

    // folded over the shown branch, the tree opens with it in view again
    await page.keyboard.press('Escape')
    await tree().waitFor({ state: 'detached', timeout: 5_000 })
    await openTree()
    await expect.poll(() => tree().getByRole('treeitem').count()).toBe(5)
    expect(await row('First question').getAttribute('aria-expanded')).toBe('true')
    await expect.poll(activeText).toContain('Other second')
    expect(problems).toEqual([])
  }, 60_000)

  it('names a branch from the tree (F2 and the button): the row shows it, so does the switcher\'s tooltip', async () => {
    await expect.poll(activeText).toContain('Other second')
    await page.keyboard.press('F2')
    const form = page.getByRole('form', { name: 'Name the branch' })
    await form.waitFor({ timeout: 5_000 })
    await form.getByRole('textbox').fill('Plan B')
    await page.keyboard.press('Enter')
    await form.waitFor({ state: 'detached', timeout: 5_000 })
    await expect.poll(() => row('Other second').locator('.tree-name').textContent(), { timeout: 5_000 }).toBe('Plan B')
    expect(await page.getByRole('group', { name: 'Highlighted turn' }).textContent()).toContain('Plan B')
    // the button on another row; a rename there, Escape cancels without writing
    await page.keyboard.press('ArrowUp')
    await page.keyboard.press('ArrowUp')
    await expect.poll(activeText).toContain('Second question')
    await page.getByRole('button', { name: 'Name branch' }).click()
    await form.getByRole('textbox').fill('Plan A')
    await form.getByRole('button', { name: 'Save name' }).click()
    await expect.poll(() => row('Second question').locator('.tree-name').textContent(), { timeout: 5_000 }).toBe('Plan A')
    await page.getByRole('button', { name: 'Rename branch' }).click()
    await form.getByRole('textbox').fill('never saved')
    await page.keyboard.press('Escape')
    await form.waitFor({ state: 'detached', timeout: 5_000 })
    expect(await row('Second question').locator('.tree-name').textContent()).toBe('Plan A')
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('tree')
    await shot('named')

    // the transcript's switcher at the fork: this branch's name, and the other's
    await page.keyboard.press('Escape')
    await tree().waitFor({ state: 'detached', timeout: 5_000 })
    const switcher = page.getByRole('group', { name: 'Branch 2 of 2' })
    await switcher.waitFor({ timeout: 5_000 })
    await expect.poll(() => switcher.getAttribute('title'), { timeout: 5_000 }).toBe('This branch: Plan B')
    expect(await switcher.getByRole('button', { name: 'Previous branch' }).getAttribute('title')).toBe('Previous branch: Plan A')
    expect(problems).toEqual([])
  }, 60_000)

  it('marks a compaction in the tree and unfolds, in the transcript, the earlier conversation it summarised', async () => {
    await page.getByRole('textbox', { name: 'Message' }).fill('/compact')
    await page.keyboard.press('Enter')
    const toggle = page.getByRole('button', { name: /Earlier conversation summarised \(\d+ entries\)/ })
    await toggle.waitFor({ timeout: 15_000 })
    expect(await toggle.getAttribute('aria-expanded')).toBe('false')
    await toggle.click()
    expect(await toggle.getAttribute('aria-expanded')).toBe('true')
    const folded = page.getByRole('list', { name: 'Messages the summary stands for' })
    await folded.waitFor({ timeout: 5_000 })
    expect(await folded.textContent()).toContain('You: First question')
    expect(await folded.textContent()).toContain('Agent: You said: First question')
    await shot('compaction-transcript')
    await toggle.click()
    await folded.waitFor({ state: 'detached', timeout: 5_000 })

    await openTree()
    const marked = tree().locator('[role="treeitem"].compacted')
    await expect.poll(() => marked.count(), { timeout: 5_000 }).toBe(1)
    expect(await marked.textContent()).toMatch(/compacted \d+ entries/)
    expect(await marked.textContent()).toContain('Other second') // at the tip of the shown branch
    await shot('compaction-tree')
    expect(problems).toEqual([])
  }, 60_000)
})
