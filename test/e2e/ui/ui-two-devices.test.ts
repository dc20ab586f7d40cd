import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { arbor, laptopAndServer } from '../../helpers/served-node'
import { until } from '../../helpers/temp-dir'

// Two devices as a user sees them: two `arbor serve` processes (separate data directories)
// paired on a HyperDHT testnet on loopback, Chromium showing the laptop's web UI, the
// server driven through its own API and CLI. The scripted `fake` model answers on the server.
const ui = laptopAndServer('ui-two')

describe('the web UI of one device, with a second device paired', () => {
  it('shows the other device\'s entries and agent live, and the network switch cuts and restores sync', async () => {
    const { laptop, server, page, shot } = ui
    const errors: string[] = []
    page.on('pageerror', e => errors.push(String(e)))

    // pair through the API, as the Devices screen does
    const { code } = await laptop.api.request('devices.invite', {})
    await server.api.request('devices.join', { code })
    await until(async () => (await laptop.api.request('net.get', {})).peers === 1, 'the laptop to connect to the server', 30_000)
    const serverKey = (await server.api.request('hello', {})).device

    await page.goto(laptop.url)
    const sidebar = page.getByRole('complementary', { name: 'Conversations' })
    const network = sidebar.getByRole('status', { name: 'Network' })
    await expect.poll(() => network.textContent(), { timeout: 10_000 }).toBe('Online · 1 of 1 device connected')

    // the server starts a conversation (its scripted model answers "slowly" slowly, thinking first)
    const script = path.join(server.dir, 'script.json')
    fs.writeFileSync(script, JSON.stringify({ rules: [{ match: 'slowly', reply: { reasoning: 'Let me think about that slowly.', text: 'z'.repeat(4000), chunkSize: 4, delayMsPerChunk: 100 } }] }))
    const chat = await arbor(server, 'chat', '--new', 'Hello from the server', '--provider', 'fake', '--script', script)
    expect(chat.code, chat.err).toBe(0)
    const conversation = (chat.out.match(/^conversation ([0-9a-f]{64})$/m) as RegExpMatchArray)[1] as string

    // it arrives in the laptop's list live; opened, it shows the server's turn
    const item = sidebar.getByRole('button', { name: 'Hello from the server' })
    await item.waitFor({ timeout: 20_000 })
    await item.click()
    const log = page.getByRole('log', { name: 'Messages on this branch' })
    await log.getByText('You said: Hello from the server').waitFor({ timeout: 20_000 })

    // the tree marks its turns (the start, the message) as the other device's
    await page.getByRole('button', { name: 'Show the conversation tree' }).click()
    const tree = page.getByRole('tree', { name: 'Conversation tree' })
    await expect.poll(() => tree.getByRole('treeitem').count(), { timeout: 10_000 }).toBe(2)
    // marked once this device knows who it is (hello) — polled, not read at one instant
    await expect.poll(() => tree.getByRole('treeitem').filter({ hasText: `from ${serverKey.slice(0, 8)}` }).count(), { timeout: 10_000 }).toBe(2)
    await shot('tree')
    await tree.press('Escape')
    await tree.waitFor({ state: 'detached', timeout: 5_000 })

    // a message sent on the server: it arrives live, its agent shows as running there, thinking and writing
    await server.api.request('message.send', { conversation, text: 'Now answer slowly' })
    await log.getByText('Now answer slowly').waitFor({ timeout: 20_000 })
    await page.getByRole('status').filter({ hasText: 'agent running on server' }).waitFor({ timeout: 20_000 })
    const writing = page.getByRole('region', { name: 'Agent is writing' })
    await writing.getByText('Let me think about that slowly.').waitFor({ timeout: 20_000 })
    await writing.getByText(/zzzz/).waitFor({ timeout: 20_000 })
    expect(await page.getByRole('button', { name: 'Stop the agent' }).count()).toBe(0) // not this device's to stop
    expect(await page.locator('#composer-hint').textContent()).toBe('The agent is working on server; a message you send goes to it')
    await shot('remote-agent')

    // the Devices screen says what each device runs
    await page.getByRole('button', { name: 'Devices', exact: true }).click()
    const table = page.getByRole('table', { name: 'Devices' })
    await table.getByRole('row').filter({ hasText: 'server' }).getByRole('list', { name: 'Agents running on server' }).getByText('Hello from the server').waitFor({ timeout: 10_000 })
    expect(await table.getByRole('row').filter({ hasText: 'this device' }).getByText('none').count()).toBe(1)
    await shot('devices')
    await server.api.request('agent.cancel', { conversation })
    await table.getByRole('list', { name: 'Agents running on server' }).waitFor({ state: 'detached', timeout: 20_000 })

    // the network switch: off, the laptop says so and hears nothing from the server
    const netSwitch = page.getByRole('checkbox', { name: 'Network on' })
    expect(await netSwitch.isChecked()).toBe(true)
    await netSwitch.uncheck()
    await expect.poll(() => network.textContent(), { timeout: 10_000 }).toBe('Offline: network off')
    expect(await netSwitch.isChecked()).toBe(false)
    await until(async () => (await server.api.request('net.get', {})).peers === 0, 'the server to lose the laptop', 20_000)
    await server.api.request('message.send', { conversation, text: 'Written while apart' })
    const { id: apart } = await server.api.request('conversation.create', { title: 'Made while apart' })
    await until(async () => !(await server.api.request('conversation.open', { id: conversation })).running, 'the server\'s agent to answer', 20_000)
    await page.getByRole('button', { name: 'Back to chat' }).click()
    await log.getByText('Now answer slowly').waitFor({ timeout: 5_000 })
    await new Promise(resolve => setTimeout(resolve, 1500)) // time enough for anything to arrive, were it connected
    expect(await log.getByText('Written while apart').count()).toBe(0)
    expect(await sidebar.getByRole('button', { name: 'Made while apart' }).count()).toBe(0)
    expect((await laptop.api.request('conversations.list', {})).some(c => c.id === apart)).toBe(false)
    await shot('offline')

    // on again: what was written meanwhile arrives, in the open conversation and the list
    await page.getByRole('button', { name: 'Devices', exact: true }).click()
    await page.getByRole('checkbox', { name: 'Network on' }).check()
    await page.getByRole('button', { name: 'Back to chat' }).click()
    await log.getByText('You said: Written while apart').waitFor({ timeout: 30_000 })
    await sidebar.getByRole('button', { name: 'Made while apart' }).waitFor({ timeout: 20_000 })
    await expect.poll(() => network.textContent(), { timeout: 20_000 }).toBe('Online · 1 of 1 device connected')
    await shot('online-again')
    expect(errors).toEqual([])
  }, 90_000)
})
