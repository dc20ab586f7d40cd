import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { tempDirs } from '../../helpers/temp-dir'
import { launchChromium, newConversation, type Served, shot as screenshot, startServe, watchProblems } from '../../helpers/ui-session'

// Retry and fork in the web UI: `arbor serve` in a real process, Debian's Chromium, the fake
// model with a script whose answer names the model it was asked as. Screenshots go to test-results/.
const dirs = tempDirs()
let served: Served | undefined
let context: BrowserContext | undefined
let page: Page
const problems: string[] = []
const shot = (name: string): Promise<Buffer> => screenshot(page, `ui-retry-fork-${name}`)

beforeAll(async () => {
  const data = await dirs.make()
  const script = path.join(await dirs.make(), 'script.json')
  fs.writeFileSync(script, JSON.stringify({ default: { text: 'Answer from {{model}}: {{lastUser}}' } }))
  fs.writeFileSync(path.join(data, 'settings.json'), JSON.stringify({ provider: 'fake', script }))
  served = await startServe(data, { name: 'ui-retry' })
  context = await launchChromium(await dirs.make(), { colorScheme: 'light' })
  page = await context.newPage()
  watchProblems(page, problems)
  await page.goto(served.url)
  await newConversation(page, 'Colours')
}, 60_000)

afterAll(async () => {
  await context?.close()
  await served?.stop()
  await dirs.cleanup()
})

describe('retry and fork in the web UI', () => {
  it('retry makes a sibling: the new reply is shown with the branch switcher at 2/2, the old one a step back', async () => {
    await page.getByRole('textbox', { name: 'Message' }).fill('Pick a colour')
    await page.keyboard.press('Enter')
    await page.getByText('Answer from fake: Pick a colour', { exact: true }).waitFor({ timeout: 15_000 })

    // with another model, this once
    await page.getByRole('button', { name: 'Retry with another model' }).click()
    await page.getByRole('textbox', { name: 'Model for the retry' }).fill('bigger-model')
    await page.getByRole('button', { name: 'Retry', exact: true }).click()
    await page.getByText('Answer from bigger-model: Pick a colour', { exact: true }).waitFor({ timeout: 15_000 })
    await page.getByRole('group', { name: 'Branch 2 of 2' }).waitFor({ state: 'visible', timeout: 5_000 })
    expect(await page.getByText('Answer from fake: Pick a colour', { exact: true }).count()).toBe(0)
    await shot('sibling')

    // plainly: the conversation's own model again, a third sibling
    await page.getByRole('button', { name: 'Retry this reply (a new branch)' }).click()
    await page.getByRole('group', { name: 'Branch 3 of 3' }).waitFor({ state: 'visible', timeout: 15_000 })
    await page.getByText('Answer from fake: Pick a colour', { exact: true }).waitFor({ timeout: 15_000 })
    // the older replies are kept: a step back shows the one from the other model
    await page.getByRole('button', { name: 'Previous branch' }).click()
    await page.getByText('Answer from bigger-model: Pick a colour', { exact: true }).waitFor({ timeout: 5_000 })
    await page.getByRole('group', { name: 'Branch 2 of 3' }).waitFor({ state: 'visible', timeout: 5_000 })
    expect(problems).toEqual([])
  }, 90_000)

  it('fork opens a new conversation whose header links back to the source where the copy ends', async () => {
    await page.getByRole('button', { name: 'Fork into a new conversation' }).click()
    const link = page.getByRole('button', { name: 'Forked from “Colours”: show it where this copy ends' })
    await link.waitFor({ timeout: 15_000 })
    await page.getByRole('heading', { name: 'Colours (fork)' }).waitFor({ timeout: 5_000 })
    await page.getByText('Answer from bigger-model: Pick a colour', { exact: true }).waitFor({ timeout: 5_000 })
    expect(await page.getByRole('group', { name: /^Branch \d of \d$/ }).count()).toBe(0) // only the branch copied
    await shot('fork')
    // the fork goes on by itself
    await page.getByRole('textbox', { name: 'Message' }).fill('And a shape?')
    await page.keyboard.press('Enter')
    await page.getByText('Answer from fake: And a shape?', { exact: true }).waitFor({ timeout: 15_000 })

    // back to the source, on the branch the fork was made from
    await link.click()
    await page.getByRole('heading', { name: 'Colours', exact: true }).waitFor({ timeout: 5_000 })
    await page.getByRole('group', { name: 'Branch 2 of 3' }).waitFor({ state: 'visible', timeout: 5_000 })
    await page.getByText('Answer from bigger-model: Pick a colour', { exact: true }).waitFor({ timeout: 5_000 })
    expect(await page.getByText('And a shape?').count()).toBe(0)
    expect(problems).toEqual([])
  }, 90_000)
})
