import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { layoutTree, type TreeNode } from '../../../src/renderer/tree/tree-layout'
import { buildBigConversation, type BigConversation } from '../../fixtures/big-conversation'
import { tempDirs } from '../../helpers/temp-dir'
import { launchChromium, shot as screenshot, startServe, type Served } from '../../helpers/ui-session'

// The web UI at scale (issue 6): a 10,000-entry conversation with hundreds of branch points,
// opened in Chromium from a real `arbor serve`. Behaviour only (timings are bench/ui's): the
// transcript and the tree draw a bounded number of elements, reach both ends, and still
// select branches and move by keyboard. Screenshots are kept in test-results/.
const dirs = tempDirs()
let served: Served | undefined
let context: BrowserContext | undefined
let page: Page
let big: BigConversation
let rows: TreeNode[]
const errors: string[] = []

const shot = (name: string): Promise<Buffer> => screenshot(page, `ui-scale-${name}`)

/** Scrolls an element to `where` (a fraction of its scroll range) as a user dragging the scrollbar would. */
async function scrollTo (el: Locator, where: number): Promise<void> {
  await el.evaluate((e, w) => { e.scrollTop = w * (e.scrollHeight - e.clientHeight) }, where)
}

/** Whether drawn content covers the middle of the element's viewport (no blank gap where turns should be). */
function middleCovered (scroller: Locator, itemSelector: string): Promise<boolean> {
  return scroller.evaluate((e, sel) => {
    const r = e.getBoundingClientRect()
    const y = r.top + r.height / 2
    return Array.from(e.querySelectorAll(sel)).some(n => { const b = n.getBoundingClientRect(); return b.top <= y && b.bottom >= y })
  }, itemSelector)
}

/** Scrolls the transcript up a third of a screen at a time until `found` holds. */
async function scrollUpUntil (found: () => Promise<boolean>, steps = 40): Promise<void> {
  for (let i = 0; i < steps && !(await found()); i++) {
    await scroller().evaluate(e => { e.scrollTop -= 250 })
    await page.evaluate(() => new Promise(resolve => requestAnimationFrame(resolve)))
  }
  expect(await found()).toBe(true)
}

const transcript = (): Locator => page.getByRole('log', { name: 'Messages on this branch' })
const scroller = (): Locator => page.locator('.scroll')
const tree = (): Locator => page.getByRole('tree', { name: 'Conversation tree' })
/** A message's first words, as a tree row shows them. */
const words = (text: string): string => text.split(/\s+/).slice(0, 4).join(' ')

beforeAll(async () => {
  const data = await dirs.make()
  big = await buildBigConversation(data, { title: 'A long project' })
  rows = layoutTree(big.dag).rows
  served = await startServe(data, { name: 'ui-scale' })
  context = await launchChromium(await dirs.make())
  page = await context.newPage()
  page.on('pageerror', e => errors.push(String(e)))
  await page.goto(served.url)
  await page.getByRole('navigation', { name: 'Conversation list' }).getByText('A long project').click()
  await transcript().getByText(big.last.text).waitFor({ timeout: 30_000 })
  // it opens as a window of the branch's end and loads the rest behind that: wait for the whole
  await page.locator('.chat:not([data-window])').waitFor({ timeout: 30_000 })
}, 90_000)

afterAll(async () => {
  await context?.close()
  await served?.stop()
  await dirs.cleanup()
})

describe('a 10,000-entry conversation in the web UI', () => {
  it('draws a screenful of the transcript, reaches its start and comes back to the end', async () => {
    expect(big.entries).toBeGreaterThanOrEqual(10_000)
    const turns = transcript().getByRole('region')
    // opened at the end: the last message in view, a bounded number of turns drawn
    await expect.poll(() => transcript().getByText(big.last.text).isVisible()).toBe(true)
    expect(await turns.count()).toBeLessThan(120)
    expect(big.mainTurns * 2).toBeGreaterThan(1500)
    // a tool call opened near the end stays open after it was scrolled out of the drawn window and back
    const cards = transcript().locator('.tool-card > button[aria-expanded]') // the tool cards' heads (other buttons fold too)
    await scrollUpUntil(async () => await cards.count() > 0)
    const card = cards.last()
    const cardText = (await card.textContent() ?? '').replace(/^[▸▾]/, '') // the chevron turns when opened
    expect(cardText).toContain('bash')
    await card.click()
    expect(await card.getAttribute('aria-expanded')).toBe('true')
    await shot('end')

    // the middle: drawn turns fill the view, still bounded
    await scrollTo(scroller(), 0.5)
    await expect.poll(() => middleCovered(scroller(), 'section')).toBe(true)
    expect(await turns.count()).toBeLessThan(120)

    // the start (like Home): the first message; several jumps as a user would scroll there
    for (const w of [0.2, 0.05, 0]) await scrollTo(scroller(), w)
    await expect.poll(() => transcript().getByText(big.first.text).isVisible(), { timeout: 10_000 }).toBe(true)
    expect(await turns.count()).toBeLessThan(120)
    await shot('start')

    // reading upwards from the middle keeps the turn being read in place (turns drawn above do not push it)
    await scrollTo(scroller(), 0.6)
    await expect.poll(() => middleCovered(scroller(), 'section')).toBe(true)
    const anchored = await scroller().evaluate(e => {
      const r = e.getBoundingClientRect()
      const first = Array.from(e.querySelectorAll<HTMLElement>('section')).find(n => n.getBoundingClientRect().bottom > r.top + 100) as HTMLElement
      first.dataset.probe = 'anchor'
      return first.getBoundingClientRect().top - r.top
    })
    for (let i = 0; i < 20; i++) await scroller().evaluate(e => { e.scrollTop -= 40 })
    await page.evaluate(() => new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve))))
    const moved = await scroller().evaluate(e => (e.querySelector('[data-probe="anchor"]') as HTMLElement).getBoundingClientRect().top - e.getBoundingClientRect().top)
    expect(Math.abs(moved - anchored - 800)).toBeLessThan(2)

    // back to the end: the last message again, and the tool call still open
    await scrollTo(scroller(), 1)
    await expect.poll(() => transcript().getByText(big.last.text).isVisible(), { timeout: 10_000 }).toBe(true)
    const again = cards.filter({ hasText: cardText })
    await scrollUpUntil(async () => await again.count() > 0)
    expect(await again.getAttribute('aria-expanded')).toBe('true')
    expect(errors).toEqual([])
  }, 60_000)

  it('draws a bounded tree of thousands of turns, reaches both ends by scrolling and keyboard, and shows a deep branch', async () => {
    await page.getByRole('button', { name: 'Show the conversation tree' }).click()
    await tree().waitFor({ state: 'visible', timeout: 10_000 })
    const items = tree().getByRole('treeitem')
    const forks = rows.filter(r => r.childCount > 1).length
    expect(rows.length).toBeGreaterThan(1500)
    expect(forks).toBeGreaterThanOrEqual(300)
    await page.getByText(`${rows.length} turns · ${forks} branch points`).waitFor({ timeout: 5_000 })
    // opened at the shown branch's last turn, with a screenful of rows
    await expect.poll(() => tree().locator('[aria-current="true"]').filter({ hasText: words(big.last.text) }).isVisible()).toBe(true)
    expect(await items.count()).toBeLessThan(300)
    await shot('tree')

    // keyboard at this size: Home, a few rows down, End
    await page.keyboard.press('Home')
    const active = (): Promise<string | null> => tree().evaluate(t => {
      const id = t.getAttribute('aria-activedescendant')
      return id === null ? null : document.getElementById(id)?.textContent ?? null
    })
    await expect.poll(active).toContain('A long project')
    for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowDown')
    await expect.poll(active).toContain(words((rows[3] as TreeNode).label))
    await page.keyboard.press('End')
    await expect.poll(active).toContain(words((rows[rows.length - 1] as TreeNode).label))
    expect(await items.count()).toBeLessThan(300)
    // a page up from the end, then Enter: that turn's branch is shown
    await page.keyboard.press('PageUp')
    const picked = (await active()) ?? ''
    const pickedRow = rows.find(r => picked.includes(r.label)) as TreeNode
    expect(pickedRow).toBeDefined()
    await page.keyboard.press('Enter')
    await tree().waitFor({ state: 'detached', timeout: 5_000 })
    const pickedText = big.dag.get(pickedRow.id)?.body as { text: string }
    await expect.poll(() => transcript().getByText(pickedText.text).isVisible(), { timeout: 10_000 }).toBe(true)

    // scrolling the tree to its far end and back; a message halfway down the main chain,
    // picked there, is shown at the top of the transcript, hundreds of turns above the end
    await page.getByRole('button', { name: 'Show the conversation tree' }).click()
    await tree().waitFor({ state: 'visible', timeout: 10_000 })
    await scrollTo(tree(), 1)
    const last = items.filter({ hasText: words((rows[rows.length - 1] as TreeNode).label) })
    await expect.poll(() => last.isVisible()).toBe(true)
    expect(await items.count()).toBeLessThan(300)
    await scrollTo(tree(), 0)
    await expect.poll(() => items.filter({ hasText: 'A long project' }).isVisible()).toBe(true)
    const midAt = rows.findIndex(r => r.label.startsWith(`m${Math.floor(big.mainTurns / 2)} `))
    const mid = rows[midAt] as TreeNode
    await tree().evaluate((t, y) => { t.scrollTop = y }, midAt * 32 - 200)
    await items.filter({ hasText: mid.label }).click()
    await tree().waitFor({ state: 'detached', timeout: 5_000 })
    const midText = (big.dag.get(mid.id)?.body as { text: string }).text
    await expect.poll(() => transcript().getByText(midText).isVisible(), { timeout: 10_000 }).toBe(true)
    const fromTop = await scroller().evaluate((e, text) => {
      const bubble = Array.from(e.querySelectorAll('section')).find(n => n.textContent?.includes(text)) as HTMLElement
      return bubble.getBoundingClientRect().top - e.getBoundingClientRect().top
    }, midText)
    expect(fromTop).toBeGreaterThanOrEqual(0)
    expect(fromTop).toBeLessThan(40)
    expect(await transcript().getByText(big.last.text).count()).toBe(0)

    await page.getByRole('button', { name: 'Show the conversation tree' }).click()
    await tree().waitFor({ state: 'visible', timeout: 10_000 })

    // a turn deep in a branch off a branch: scroll to it and click it
    const deepAt = rows.findIndex(r => r.id === big.deep.id)
    const deepRow = rows[deepAt] as TreeNode
    expect(deepRow.lane).toBeGreaterThanOrEqual(2)
    await tree().evaluate((t, y) => { t.scrollTop = y }, deepAt * 32 - 200)
    const deep = items.filter({ hasText: words(big.deep.text) })
    await expect.poll(() => deep.isVisible()).toBe(true)
    await deep.click()
    await tree().waitFor({ state: 'detached', timeout: 5_000 })
    await expect.poll(() => transcript().getByText(big.deep.text).isVisible(), { timeout: 10_000 }).toBe(true)
    expect(await transcript().getByText(big.last.text).count()).toBe(0)
    // the branch runs through forks: their switchers are there to step back to the others
    await expect.poll(() => transcript().getByRole('group', { name: /^Branch \d+ of \d+$/ }).count()).toBeGreaterThan(0)
    await shot('deep-branch')
    expect(errors).toEqual([])
  }, 60_000)
})
