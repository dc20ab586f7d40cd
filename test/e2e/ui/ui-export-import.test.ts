// Export and import in the web UI: `arbor serve` in a real process, Debian's Chromium driven by
// Playwright. A Pi session chosen in the sidebar's file picker opens as a conversation; the
// header's Export menu downloads the shown branch as the Markdown `arbor export` writes, and
// every entry as JSON that parses to what `arbor export --format json` gives, each entry valid.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { validateEntry } from '../../../src/main/history/store/entry-codec'
import { tempDirs } from '../../helpers/temp-dir'
import { launchChromium, shot as screenshot, startServe, type Served } from '../../helpers/ui-session'
import { E2E_FIXTURES, ROOT } from '../../helpers/paths'

const dirs = tempDirs()
const BIN = path.join(ROOT, 'bin', 'arbor.js')
let served: Served | undefined
let context: BrowserContext | undefined
let page: Page
let dataDir = ''

/** `arbor <argv>` against the served node (through its socket). */
const arbor = (...argv: string[]): string => execFileSync(process.execPath, [BIN, ...argv], { env: { ...process.env, ARBOR_DATA: dataDir, HOME: dataDir }, encoding: 'utf8', timeout: 30_000 })

beforeAll(async () => {
  dataDir = await dirs.make()
  served = await startServe(dataDir, { name: 'ui-export', env: { ARBOR_WORKSPACES: await dirs.make() } })
  context = await launchChromium(await dirs.make())
  page = await context.newPage()
}, 60_000)

afterAll(async () => {
  await context?.close()
  await served?.stop()
  await dirs.cleanup()
})

describe('export and import in the web UI', () => {
  it('imports a Pi session from the file picker, then exports its branch as Markdown and everything as JSON', async () => {
    const errors: string[] = []
    page.on('pageerror', e => errors.push(String(e)))
    await page.goto(served?.url ?? '')
    const chooser = page.waitForEvent('filechooser', { timeout: 10_000 })
    await page.getByRole('button', { name: 'Import session…' }).click()
    await (await chooser).setFiles(path.join(E2E_FIXTURES, 'pi-session.jsonl'))
    await page.getByRole('heading', { name: 'Project tooling questions', level: 2 }).waitFor({ timeout: 15_000 })
    await page.getByText('ESLint, with a flat config.').waitFor({ timeout: 5_000 })
    await page.getByRole('status').filter({ hasText: 'Imported 11 entries of a Pi session.' }).waitFor({ timeout: 5_000 })
    await screenshot(page, 'ui-imported')
    const [listed] = JSON.parse(arbor('ls', '--json')) as Array<{ id: string }>
    const id = listed?.id as string

    await page.getByText('Export', { exact: true }).click()
    const md = page.waitForEvent('download', { timeout: 10_000 })
    await page.getByRole('menuitem', { name: 'Export branch as Markdown' }).click()
    const mdFile = await md
    expect(mdFile.suggestedFilename()).toBe('Project-tooling-questions.md')
    const mdText = fs.readFileSync(await mdFile.path(), 'utf8')
    expect(mdText).toBe(arbor('export', id, '--format', 'md'))
    expect(mdText).toContain('ESLint, with a flat config.')

    await page.getByText('Export', { exact: true }).click()
    const json = page.waitForEvent('download', { timeout: 10_000 })
    await page.getByRole('menuitem', { name: 'Export conversation as JSON' }).click()
    const jsonFile = await json
    expect(jsonFile.suggestedFilename()).toBe('Project-tooling-questions.json')
    const exported = JSON.parse(fs.readFileSync(await jsonFile.path(), 'utf8')) as { conversation: string; entries: unknown[]; waiting: unknown[] }
    expect(exported).toEqual(JSON.parse(arbor('export', id, '--format', 'json')))
    expect(exported.conversation).toBe(id)
    expect(exported.entries.length).toBe(12)
    // round trip: every entry as its feed holds it, its id the hash of its bytes
    for (const e of exported.entries) expect(validateEntry(e).ok).toBe(true)
    expect(errors).toEqual([])
  }, 90_000)

  it('says why a file is not imported, and opens nothing', async () => {
    await page.goto(served?.url ?? '')
    const bad = path.join(await dirs.make(), 'notes.jsonl')
    fs.writeFileSync(bad, '{"hello":"world"}\n')
    await page.getByLabel('Session file to import (Pi or Claude Code, JSONL)').setInputFiles(bad)
    await page.getByRole('alert').filter({ hasText: /Not imported: .*not a Pi or Claude Code session/ }).waitFor({ timeout: 10_000 })
    expect((JSON.parse(arbor('ls', '--json')) as unknown[]).length).toBe(1)
  }, 60_000)
})
