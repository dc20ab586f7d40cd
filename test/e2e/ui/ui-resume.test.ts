import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { arbor, laptopAndServer } from '../../helpers/served-node'
import { until } from '../../helpers/temp-dir'

// Moving an agent between devices as a user does it: two `arbor serve` processes paired on a
// loopback testnet, Chromium showing the laptop's web UI. The conversation's agent runs on
// the server; the laptop's chat says so, hands messages to it, and `/resume` moves it to the
// laptop — offline, with a message waiting. The scripted `fake` model answers on both.
const ui = laptopAndServer('ui-resume')

describe('moving the agent with /resume in the web UI', () => {
  it('shows where the agent runs, hands messages to it, moves it here with /resume, and keeps auto-revival', async () => {
    const { laptop, server, page, shot } = ui
    const errors: string[] = []
    page.on('pageerror', e => errors.push(String(e)))
    const { code } = await laptop.api.request('devices.invite', {})
    await server.api.request('devices.join', { code })
    // (under load the first lookups on the testnet can miss; the next come 1, 2, 4, 8, 16 s later)
    await until(async () => (await laptop.api.request('net.get', {})).peers === 1, 'the laptop to connect to the server', 60_000)

    // the server's agent answers the first message there (its scripted model takes a while with the laptop's)
    const script = path.join(server.dir, 'script.json')
    fs.writeFileSync(script, JSON.stringify({ rules: [{ match: 'from the laptop', reply: { text: 'You said: {{lastUser}}', chunkSize: 100, delayMsPerChunk: 2000 } }] }))
    const chat = await arbor(server, 'chat', '--new', 'Runs on the server', '--provider', 'fake', '--script', script)
    expect(chat.code, chat.err).toBe(0)
    const id = (chat.out.match(/^conversation ([0-9a-f]{64})$/m) as RegExpMatchArray)[1] as string

    // the laptop's chat says the agent is the server's, and offers to move it
    await page.goto(laptop.url)
    await page.getByRole('complementary', { name: 'Conversations' }).getByRole('button', { name: 'Runs on the server' }).click({ timeout: 20_000 })
    const log = page.getByRole('log', { name: 'Messages on this branch' })
    await log.getByText('You said: Runs on the server').waitFor({ timeout: 20_000 })
    const bar = page.getByRole('region', { name: 'Where the agent runs' })
    const where = bar.getByRole('status')
    await expect.poll(() => where.textContent(), { timeout: 10_000 }).toBe('Agent: server · epoch 0')
    expect(await bar.getByRole('button', { name: 'Resume here' }).isVisible()).toBe(true)
    await shot('on-server')

    // a message from the laptop goes to the server's agent, which answers it (the note stays until it does)
    const box = page.getByRole('textbox', { name: 'Message', exact: true })
    await box.fill('hello from the laptop')
    await box.press('Enter')
    const sentNote = page.getByRole('status').filter({ hasText: 'Sent to the agent on server' })
    await sentNote.waitFor({ timeout: 10_000 })
    await log.getByText('You said: hello from the laptop').waitFor({ timeout: 20_000 })
    await sentNote.waitFor({ state: 'detached', timeout: 5_000 })
    const reply = (await laptop.api.request('conversation.open', { id })).entries.find(e => e.kind === 'assistant' && e.body.text === 'You said: hello from the laptop')
    expect(reply?.author.device).toBe((await server.api.request('hello', {})).device)

    // off the network: the server's agent cannot be reached; a message waits for it
    await laptop.api.request('net.set', { on: false })
    await expect.poll(() => where.textContent(), { timeout: 10_000 }).toBe('Agent: server · epoch 0 (not connected: this device is offline)')
    await box.fill('hello while apart')
    await box.press('Enter')
    await page.getByRole('status').filter({ hasText: 'server is not connected: the message waits for it — type /resume to run the agent here' }).waitFor({ timeout: 10_000 })

    // "/" shows the commands; /resume moves the agent here, and it answers the waiting message
    await box.fill('/')
    const help = page.getByRole('status').filter({ hasText: '/resume — run the agent on this device from now on' })
    await help.waitFor({ timeout: 5_000 })
    expect(await help.innerText()).toMatch(/\/compact — .* \(Enter\)$/) // every command, then what Enter does
    await shot('command-help')
    await box.pressSequentially('resume')
    await page.getByRole('status').filter({ hasText: /^\/resume — run the agent on this device from now on \(Enter\)$/ }).waitFor({ timeout: 5_000 })
    await box.press('Enter')
    await expect.poll(() => where.textContent(), { timeout: 20_000 }).toMatch(/^Agent: this device · epoch 1( · working)?$/)
    await log.getByText('Agent moved to this device (resumed from server) · epoch 1').waitFor({ timeout: 10_000 })
    await log.getByText('You said: hello while apart').waitFor({ timeout: 20_000 })
    await expect.poll(() => where.textContent(), { timeout: 10_000 }).toBe('Agent: this device · epoch 1')
    expect(await box.inputValue()).toBe('')
    expect(await bar.getByRole('button', { name: 'Resume here' }).count()).toBe(0)
    expect(await page.getByRole('status').filter({ hasText: 'server is not connected' }).count()).toBe(0)
    await shot('resumed')
    // in the dark scheme the bar and the lifecycle line take its colours
    const colour = (): Promise<string> => bar.locator('.agent-place').evaluate(el => getComputedStyle(el).color)
    const light = await colour()
    await page.emulateMedia({ colorScheme: 'dark' })
    expect(await colour()).not.toBe(light)
    await shot('resumed-dark')
    await page.emulateMedia({ colorScheme: 'light' })

    // back online, the server sees the move: epoch 1 on the laptop, in its API and its `arbor status`
    await laptop.api.request('net.set', { on: true })
    await until(async () => {
      const s = await server.api.request('agent.status', { conversation: id })
      return s.owner?.name === 'laptop' && s.ownerConnected && !s.ownerDown
    }, 'the server to learn of the move and hear from the laptop again', 60_000)
    expect((await server.api.request('agent.status', { conversation: id })).owner).toMatchObject({ name: 'laptop', self: false, epoch: 1 })
    const status = await arbor(server, 'status', id.slice(0, 12))
    expect(status.code, status.err).toBe(0)
    expect(status.out).toMatch(/^agent: laptop \(epoch 1\)$/m)
    expect(status.out).toMatch(/resumed on laptop from server \(epoch 0\), epoch 1$/m)

    // the moves, listed in the bar
    await bar.getByText('Moves (2)').click()
    await bar.getByRole('listitem').filter({ hasText: 'resumed on laptop from server (epoch 0), epoch 1' }).waitFor({ timeout: 5_000 })
    await bar.getByText('Moves (2)').click()

    // auto-revival: on here, kept across a reload, and followed by the server
    const revival = bar.getByRole('switch', { name: 'Auto-revival' })
    expect(await revival.isChecked()).toBe(false)
    await revival.check()
    await expect.poll(() => revival.isChecked(), { timeout: 10_000 }).toBe(true)
    await page.reload()
    await log.getByText('You said: hello while apart').waitFor({ timeout: 20_000 })
    await expect.poll(() => where.textContent(), { timeout: 10_000 }).toBe('Agent: this device · epoch 1')
    expect(await bar.getByRole('switch', { name: 'Auto-revival' }).isChecked()).toBe(true)
    await until(async () => (await server.api.request('agent.status', { conversation: id })).autoRevival, 'the server to hold the setting', 20_000)
    await shot('auto-revival')

    // a new conversation can start with auto-revival on
    await page.getByRole('button', { name: 'New conversation', exact: true }).click()
    const form = page.getByRole('form', { name: 'New conversation' })
    await form.getByLabel('Title').fill('Keep it alive')
    await form.getByRole('checkbox', { name: 'Auto-revival' }).check()
    await form.getByRole('button', { name: 'Create' }).click()
    await page.getByRole('heading', { name: 'Keep it alive' }).waitFor({ timeout: 10_000 })
    await expect.poll(() => bar.getByRole('switch', { name: 'Auto-revival' }).isChecked(), { timeout: 10_000 }).toBe(true)
    await expect.poll(() => where.textContent(), { timeout: 10_000 }).toBe('Agent: not started yet — your first message starts it on this device')
    expect(errors).toEqual([])
  }, 180_000)
})
