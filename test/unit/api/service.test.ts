import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import type { ApiEvent } from '../../../src/shared/api/api'
import type { Entry } from '../../../src/shared/entry/entry'
import { AGENT_BUSY_MESSAGE, ApiService } from '../../../src/main/api/api-service'
import type { ArborNode } from '../../../src/main/node'
import type { SecretName, SecretStore } from '../../../src/main/secrets/secret-store'
import { apiNodes, rejection, scriptedModel, type ApiNode } from '../../helpers/api-nodes'
import { until } from '../../helpers/temp-dir'

// The API against a real node in a temp dir, on a loopback testnet (no other device), with
// the scripted (fake) model.

const nodes = apiNodes('arbor-api-')

/** The node, and a directory for its agents to work in. */
async function start (secrets?: SecretStore): Promise<ApiNode & { work: string }> {
  const d = await nodes.start('laptop', secrets !== undefined ? { secrets } : {})
  return { ...d, work: await nodes.dirs.make() }
}

/** Makes the conversation's model a slow scripted one (its `llm` setting, as `arbor chat --script` keeps it). */
async function slowModel (node: ArborNode, conversation: string, dir: string): Promise<void> {
  await scriptedModel(node, conversation, dir, { default: { text: 'x'.repeat(400), chunkSize: 4, delayMsPerChunk: 50 } })
}

describe('ApiService', () => {
  it('lists, creates, opens, sends: the agent runs and its tokens, entries and running state arrive as events', async () => {
    const { node, api, events, work } = await start()
    expect(await api.request('hello', {})).toEqual({ device: node.device, name: 'laptop', version: 'test' })
    expect(await api.request('conversations.list', {})).toEqual([])
    await api.request('settings.set', { provider: 'fake' })

    const { id } = await api.request('conversation.create', { title: 'Plan the trip', cwd: work })
    const list = await api.request('conversations.list', {})
    expect(list).toEqual([expect.objectContaining({ id, title: 'Plan the trip', size: 1, heads: 1, waiting: 0, running: false })])
    expect(await api.request('conversations.list', { query: 'TRIP' })).toHaveLength(1)
    expect(await api.request('conversations.list', { query: 'nothing like it' })).toHaveLength(0)
    const before = await api.request('conversation.open', { id: id.slice(0, 10) })
    expect(before).toMatchObject({ id, title: 'Plan the trip', selected: id, running: false, usage: { input: 0, output: 0 } })
    expect(before.entries.map(e => e.kind)).toEqual(['conversation'])

    const { entry } = await api.request('message.send', { conversation: id, text: 'where to go?' })
    expect(entry).toMatchObject({ kind: 'user', body: { text: 'where to go?' }, parents: [id] })
    await until(() => events.some(e => e.type === 'agent' && !e.running), 'the agent to end')

    const mine = events.filter(e => 'conversation' in e && e.conversation === id)
    const tokens = mine.flatMap(e => e.type === 'token' ? [e.delta] : []).join('')
    expect(tokens).toBe('You said: where to go?')
    const kinds = mine.flatMap(e => e.type === 'entries' ? e.entries.map(x => x.kind) : [])
    expect(kinds).toEqual(['conversation', 'user', 'agent.started', 'assistant', 'agent.stopped'])
    const running = mine.flatMap(e => e.type === 'agent' ? [e.running] : [])
    expect(running).toEqual([true, false])
    expect(mine.flatMap(e => e.type === 'agent' ? [e.agents] : [])).toEqual([[{ device: node.device, name: 'laptop', self: true }], []])
    // the first token comes after the agent was announced running, the last entry before it ended
    expect(mine.findIndex(e => e.type === 'agent')).toBeLessThan(mine.findIndex(e => e.type === 'token'))

    // the window the header measures the branch against: this device's model's
    expect(await api.request('conversation.window', { conversation: id })).toEqual({ tokens: expect.any(Number) as number, source: expect.stringMatching(/^(server|explicit|known-model|default)$/) as string })
    const after = await api.request('conversation.open', { id })
    expect(after.entries.map(e => e.kind)).toEqual(['conversation', 'user', 'agent.started', 'assistant', 'agent.stopped'])
    expect(after.running).toBe(false)
    expect(after.usage.output).toBeGreaterThan(0)
    // parents before children
    const seen = new Set<string>()
    for (const e of after.entries) { for (const p of e.parents) expect(seen.has(p)).toBe(true); seen.add(e.id) }

    // a second message goes on from the tip; a third branches from the first user message
    await api.request('message.send', { conversation: id, text: 'and then?' })
    await until(() => events.filter(e => e.type === 'agent' && !e.running).length === 2, 'the second turn to end')
    const { entry: branch } = await api.request('message.send', { conversation: id, text: 'somewhere else', parent: entry.id })
    expect(branch.parents).toEqual([entry.id])
    await until(() => events.filter(e => e.type === 'agent' && !e.running).length === 3, 'the third turn to end')
    const tree = await api.request('conversation.open', { id })
    expect((await api.request('conversations.list', {}))[0]?.heads).toBe(2)
    expect(tree.selected).toBe(branch.id) // the branch shown: the new message, and on down to its answer

    await api.request('conversation.select', { id, entry: entry.id })
    expect((await api.request('conversation.open', { id })).selected).toBe(entry.id)
  })

  it('refuses a message while the agent runs, and cancel stops it cleanly', async () => {
    const { node, api, events, dir, work } = await start()
    await api.request('settings.set', { provider: 'fake' })
    const { id } = await api.request('conversation.create', { title: 'slow', cwd: work })
    await slowModel(node, id, dir)
    await api.request('message.send', { conversation: id, text: 'go slowly' })
    await until(() => events.some(e => e.type === 'token'), 'the first token')
    expect((await api.request('conversation.open', { id })).running).toBe(true)
    expect((await api.request('conversations.list', {}))[0]?.running).toBe(true)
    const size = (await api.request('conversation.open', { id })).entries.length
    expect(await rejection(api.request('message.send', { conversation: id, text: 'hurry up' }))).toBe(AGENT_BUSY_MESSAGE)
    expect((await api.request('conversation.open', { id })).entries).toHaveLength(size) // nothing written

    await api.request('agent.cancel', { conversation: id })
    await until(() => events.some(e => e.type === 'agent' && !e.running), 'the agent to end')
    const after = await api.request('conversation.open', { id })
    expect(after.running).toBe(false)
    expect(after.entries.at(-1)).toMatchObject({ kind: 'agent.stopped', body: { reason: 'cancelled' } })
    expect(await api.request('agent.cancel', { conversation: id })).toEqual({}) // nothing runs: nothing to do
  })

  it('queues a message while the agent runs: written after what the run wrote, once it ends, and answered; kept across a restart', async () => {
    const { node, api, events, dir, work } = await start()
    await api.request('settings.set', { provider: 'fake' })
    const { id } = await api.request('conversation.create', { title: 'queue', cwd: work })
    await scriptedModel(node, id, dir, { default: { text: 'y'.repeat(40), chunkSize: 4, delayMsPerChunk: 30 } })
    expect(await api.request('message.queue', { conversation: id, text: 'first' })).toMatchObject({ entry: { kind: 'user' } }) // nothing runs: sent
    await until(() => events.some(e => e.type === 'token'), 'the first token')
    const size = (await api.request('conversation.open', { id })).entries.length
    expect(await api.request('message.queue', { conversation: id, text: 'second' })).toEqual({ queued: 1 })
    expect(await api.request('message.queue', { conversation: id, text: 'third' })).toEqual({ queued: 2 })
    expect((await api.request('conversation.open', { id })).entries).toHaveLength(size) // not written into the turn under way
    await until(() => events.filter(e => e.type === 'agent' && !e.running).length === 2, 'the queued messages to be answered')
    const dag = (await api.request('conversation.open', { id })).entries
    const byId = new Map(dag.map(e => [e.id, e]))
    const second = dag.find(e => e.kind === 'user' && (e.body as { text: string }).text === 'second') as Entry
    const third = dag.find(e => e.kind === 'user' && (e.body as { text: string }).text === 'third') as Entry
    expect(byId.get(second.parents[0] as string)?.kind).toBe('agent.stopped') // after the first run's end
    expect(third.parents).toEqual([second.id])
    const answers = dag.filter(e => e.kind === 'agent.started').map(e => e.parents[0])
    expect(answers).toContain(third.id)

    // held when the node closes mid-turn: the next node writes and answers it
    await until(() => !node.agents.isRunning(id), 'the agent to be idle')
    await api.request('message.queue', { conversation: id, text: 'fourth' })
    expect(node.agents.isRunning(id)).toBe(true)
    expect(await api.request('message.queue', { conversation: id, text: 'fifth' })).toEqual({ queued: 1 })
    api.close()
    await node.close()
    const again = await nodes.start('laptop', { dataDir: dir, env: { HOME: dir } })
    await until(async () => (await again.api.request('conversation.open', { id })).entries.some(e => e.kind === 'user' && (e.body as { text: string }).text === 'fifth'), 'the held message to be written after the restart')
    await until(async () => {
      const es = (await again.api.request('conversation.open', { id })).entries
      const fifth = es.find(e => e.kind === 'user' && (e.body as { text: string }).text === 'fifth') as Entry
      return es.some(e => e.kind === 'agent.started' && e.parents[0] === fifth.id)
    }, 'the held message to be answered after the restart')
  })

  it('keeps settings; the API key is stored apart, readable by this user only, and never returned', async () => {
    const { api, dir, work } = await start()
    const apiKeyStorage = `in ${path.join(dir, 'secrets.json')}, readable only by you`
    expect(await api.request('settings.get', {})).toEqual({ provider: 'openai', apiKeySet: false, apiKeyStorage, maxSteps: 50 })
    const set = await api.request('settings.set', { provider: 'openai', baseURL: 'http://127.0.0.1:11434/v1', model: 'llama3', apiKey: 'sk-very-secret', defaultCwd: work })
    expect(set).toEqual({ provider: 'openai', baseURL: 'http://127.0.0.1:11434/v1', model: 'llama3', apiKeySet: true, apiKeyStorage, defaultCwd: work, maxSteps: 50 })
    expect(await api.request('settings.get', {})).toEqual(set)
    expect(JSON.stringify(set)).not.toContain('sk-very-secret')
    expect(fs.readFileSync(path.join(dir, 'settings.json'), 'utf8')).not.toContain('sk-very-secret')
    expect(fs.statSync(path.join(dir, 'secrets.json')).mode & 0o777).toBe(0o600)

    // partial updates keep the rest; '' clears
    expect(await api.request('settings.set', { model: 'qwen' })).toMatchObject({ model: 'qwen', baseURL: 'http://127.0.0.1:11434/v1', apiKeySet: true })
    expect(await api.request('settings.set', { apiKey: '', baseURL: '' })).toEqual({ provider: 'openai', model: 'qwen', apiKeySet: false, apiKeyStorage, defaultCwd: work, maxSteps: 50 })
    // the step limit: set, and 0 back to the default
    expect(await api.request('settings.set', { maxSteps: 7 })).toMatchObject({ maxSteps: 7 })
    expect(await api.request('settings.set', { maxSteps: 0 })).toMatchObject({ maxSteps: 50 })

    // a new conversation works in the default directory
    const { id } = await api.request('conversation.create', {})
    // its limits: the default, then the Settings', then its own; a budget set and cleared
    expect(await api.request('agent.limits', { conversation: id })).toEqual({ maxSteps: 50, maxStepsFrom: 'default', tokensSpent: 0 })
    await api.request('settings.set', { maxSteps: 9 })
    expect(await api.request('agent.limits', { conversation: id })).toEqual({ maxSteps: 9, maxStepsFrom: 'settings', tokensSpent: 0 })
    await api.request('agent.configure', { conversation: id, limits: { maxSteps: 3, tokenBudget: 500 } }).catch(() => undefined) // no model here: the limits are kept all the same
    expect(await api.request('agent.limits', { conversation: id })).toEqual({ maxSteps: 3, maxStepsFrom: 'conversation', tokenBudget: 500, tokensSpent: 0 })
    await api.request('agent.configure', { conversation: id, limits: { maxSteps: 0, tokenBudget: 0 } }).catch(() => undefined)
    expect(await api.request('agent.limits', { conversation: id })).toEqual({ maxSteps: 9, maxStepsFrom: 'settings', tokensSpent: 0 })
    await api.request('settings.set', { maxSteps: 0 })
    expect((await api.request('conversation.open', { id })).entries[0]).toMatchObject({ body: { cwd: work } })

    expect(await rejection(api.call('settings.set', { baseURL: 'file:///etc/passwd' }))).toMatch(/invalid params for settings\.set: baseURL/)
    expect(await rejection(api.call('settings.set', { provider: 'anthropic' }))).toMatch(/provider/)
    expect(await rejection(api.call('settings.set', { apiKeySet: true }))).toMatch(/unknown field.*apiKeySet/)
    expect(await rejection(api.call('settings.set', { defaultCwd: 'relative/dir' }))).toMatch(/defaultCwd must be an absolute path/)
  })

  it('keeps the key in the node\'s SecretStore when it has another one (the desktop app\'s), and the agent gets it from there', async () => {
    const kept = new Map<SecretName, string>()
    const vault: SecretStore = {
      description: 'encrypted by the system keychain',
      get: async name => kept.get(name),
      set: async (name, value) => { if (value === undefined || value === '') kept.delete(name); else kept.set(name, value) }
    }
    const { node, api, dir, work } = await start(vault)
    const set = await api.request('settings.set', { provider: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKey: 'sk-in-the-vault' })
    expect(set).toMatchObject({ apiKeySet: true, apiKeyStorage: 'encrypted by the system keychain' })
    expect(kept.get('apiKey')).toBe('sk-in-the-vault')
    expect(fs.existsSync(path.join(dir, 'secrets.json'))).toBe(false)
    const { id } = await api.request('conversation.create', { cwd: work })
    const { config } = await node.agentConfig(id)
    expect((config.provider as unknown as { apiKey?: string }).apiKey).toBe('sk-in-the-vault')
    await api.request('settings.set', { apiKey: '' })
    expect(kept.size).toBe(0)
  })

  it('answers bad requests with clear errors and writes nothing', async () => {
    const { node, api, work } = await start()
    const { id } = await api.request('conversation.create', { title: 't', cwd: work })
    expect(await rejection(api.call('conversation.delete', { id }))).toMatch(/unknown method "conversation\.delete"/)
    expect(await rejection(api.call(42, {}))).toMatch(/unknown method 42/)
    expect(await rejection(api.call('message.send', { conversation: id }))).toMatch(/invalid params for message\.send: text/)
    expect(await rejection(api.call('message.send', { conversation: id, text: '   ' }))).toMatch(/text is empty/)
    expect(await rejection(api.call('message.send', { conversation: 'not hex', text: 'hi' }))).toMatch(/conversation must be a hex id/)
    expect(await rejection(api.call('message.send', { conversation: id, text: 'hi', parent: 'f'.repeat(64) }))).toMatch(/entry ffffffffffff is not in conversation/)
    expect(await rejection(api.call('conversation.open', { id: 'abcdef0123' }))).toMatch(/no conversation matches "abcdef0123"/)
    expect(await rejection(api.call('conversation.open', null))).toMatch(/invalid params for conversation\.open: id/)
    expect(await rejection(api.call('conversation.select', { id, entry: 'e'.repeat(64) }))).toMatch(/is not in conversation/)
    expect(await rejection(api.call('conversation.create', { cwd: 'relative' }))).toMatch(/cwd must be an absolute path/)
    expect(await rejection(api.call('net.set', { on: 'yes' }))).toMatch(/invalid params for net\.set: on/)
    expect(await rejection(api.call('hello', { extra: 1 }))).toMatch(/unknown field/)
    // no model set up (no settings, no OPENAI_* in the node's environment): refused before anything is written
    expect(await rejection(api.call('message.send', { conversation: id, text: 'hi' }))).toMatch(/no model is set up/)
    expect((await node.history.open(id)).size).toBe(1)
  })

  it('devices and the network switch', async () => {
    const { node, api, events } = await start()
    const devices = await api.request('devices.list', {})
    expect(devices).toEqual([expect.objectContaining({ device: node.device, name: 'laptop', self: true })])
    const inv = await api.request('devices.invite', {})
    expect(inv.code).toMatch(/^[a-z0-9]{40,}$/)
    expect(inv.expiresAt).toBeGreaterThan(Date.now())
    expect(devices[0]?.agents).toEqual([])
    await api.request('net.set', { on: false })
    expect(node.sync.isOnline).toBe(false)
    await api.request('net.set', { on: true })
    expect(node.sync.isOnline).toBe(true)
    // peer events are passed on as they are
    node.sync.emit('peer', { device: 'd'.repeat(64), state: 'connected' })
    expect(events.at(-1)).toEqual({ type: 'peer', device: 'd'.repeat(64), state: 'connected' })
  })

  it('streams reasoning and text with the branch they extend and the run, and tools starting and ending, in order with the entries', async () => {
    const { node, api, events, dir, work } = await start()
    await api.request('settings.set', { provider: 'fake' })
    fs.writeFileSync(path.join(work, 'notes.txt'), 'hello\n')
    const { id } = await api.request('conversation.create', { title: 'look around', cwd: work })
    await scriptedModel(node, id, dir, [
      { reasoning: 'I should look at the files first.', toolCalls: [{ name: 'list_dir', args: { path: '.' } }], chunkSize: 5 },
      { reasoning: 'One file.', text: 'There is notes.txt.', chunkSize: 5 }
    ])
    await api.request('message.send', { conversation: id, text: 'what is here?' })
    await until(() => events.some(e => e.type === 'agent' && e.conversation === id && !e.running), 'the agent to end')

    const mine = events.filter(e => 'conversation' in e && e.conversation === id)
    const entries = mine.flatMap(e => e.type === 'entries' ? e.entries : [])
    const started = entries.find(e => e.kind === 'agent.started') as Entry
    const intent = entries.find(e => e.kind === 'tool.intent') as Entry & { kind: 'tool.intent' }
    const result = entries.find(e => e.kind === 'tool.result') as Entry & { kind: 'tool.result' }
    const streamed = (type: 'token' | 'reasoning', parent: string): string => mine.flatMap(e => e.type === type && e.parent === parent ? [e.delta] : []).join('')
    // the first model call hangs its message on agent.started, the second on the tool's result
    expect(streamed('reasoning', started.id)).toBe('I should look at the files first.')
    expect(streamed('token', started.id)).toBe('')
    expect(streamed('reasoning', result.id)).toBe('One file.')
    expect(streamed('token', result.id)).toBe('There is notes.txt.')
    const runs = new Set(mine.flatMap(e => 'run' in e ? [e.run] : []))
    expect(runs.size).toBe(1) // one run throughout
    expect(mine.every(e => !('device' in e) || e.device === node.device)).toBe(true)

    // the tool: start after its intent is recorded, end before its result is
    const at = (pred: (e: ApiEvent) => boolean): number => mine.findIndex(pred)
    const toolStart = at(e => e.type === 'tool-start')
    const end = at(e => e.type === 'tool-end')
    expect(mine[toolStart]).toMatchObject({ type: 'tool-start', callId: intent.body.callId, tool: 'list_dir', args: { path: '.' } })
    expect(mine[end]).toMatchObject({ type: 'tool-end', callId: intent.body.callId, status: 'ok' })
    expect(at(e => e.type === 'entries' && e.entries.some(x => x.id === intent.id))).toBeLessThan(toolStart)
    expect(toolStart).toBeLessThan(end)
    expect(end).toBeLessThan(at(e => e.type === 'entries' && e.entries.some(x => x.id === result.id)))
    expect(result.body.output).toContain('notes.txt')
    const open = await api.request('conversation.open', { id })
    expect(open.entries.filter(e => e.kind === 'assistant').map(e => (e.body as { reasoning?: string }).reasoning)).toEqual(['I should look at the files first.', 'One file.'])
  })

  it('net.get tells the network state; every change of it is an event, whoever flipped the switch', async () => {
    const { node, api, events } = await start()
    const bootstrap = nodes.bootstrap().map(b => `${b.host}:${b.port}`)
    expect(await api.request('net.get', {})).toEqual({ online: true, peers: 0, paired: 0, bootstrap })
    expect(await api.request('net.set', { on: false })).toEqual({ online: false, peers: 0, paired: 0, bootstrap })
    expect(events.filter(e => e.type === 'net')).toEqual([{ type: 'net', state: { online: false, peers: 0, paired: 0, bootstrap } }])
    await api.request('net.set', { on: false }) // no change: no event
    expect(events.filter(e => e.type === 'net')).toHaveLength(1)
    await node.setOnline(true) // as `arbor net on` does, through the node
    expect(events.filter(e => e.type === 'net').at(-1)).toEqual({ type: 'net', state: { online: true, peers: 0, paired: 0, bootstrap } })
    expect((await api.request('net.get', {})).online).toBe(true)
    expect(await rejection(api.call('net.get', { on: true }))).toMatch(/unknown field/)
  })

  it('settings.detect reports the local servers found (the finder is injectable)', async () => {
    const { node } = await start()
    const found = [{ name: 'Ollama', baseURL: 'http://127.0.0.1:11434/v1', models: ['llama3'] }]
    const api = new ApiService(node, { version: 'test', detectLocalServers: async () => found })
    try {
      expect(await api.request('settings.detect', {})).toEqual(found)
      expect(await rejection(api.call('settings.detect', { port: 1 }))).toMatch(/unknown field/)
    } finally {
      api.close()
    }
  })

  it('message.post adds a user message to the history only: no agent runs, a parent prefix branches, bad parents are refused', async () => {
    const { node, api, events, work } = await start()
    await api.request('settings.set', { provider: 'fake' })
    const { id } = await api.request('conversation.create', { title: 'notes', cwd: work })
    const first = (await api.request('message.post', { conversation: id.slice(0, 8), text: 'one' })).entry
    expect(first).toMatchObject({ kind: 'user', body: { text: 'one', reply: false }, parents: [id] })
    const second = (await api.request('message.post', { conversation: id, text: 'two' })).entry
    expect(second.parents).toEqual([first.id]) // after the selected tip
    const branch = (await api.request('message.post', { conversation: id, text: 'other', parent: id.slice(0, 10) })).entry
    expect(branch.parents).toEqual([id])
    expect((await api.request('conversation.open', { id })).selected).toBe(branch.id)
    expect(await rejection(api.call('message.post', { conversation: id, text: 'x', parent: 'ffff' }))).toMatch(/^no entry of this conversation matches "ffff"/)
    expect(await rejection(api.call('message.post', { conversation: id, text: ' ' }))).toMatch(/text is empty/)
    expect(await rejection(api.call('message.post', { conversation: id, text: 'x', parent: 'not hex' }))).toMatch(/parent must be a hex id/)
    expect(events.some(e => e.type === 'agent')).toBe(false)
    expect([...(await node.history.open(id)).entries()].map(e => e.kind)).toEqual(['conversation', 'user', 'user', 'user'])
  })

  it('devices.forget stops accepting a paired device and says so; an unknown one is refused in words', async () => {
    const { node, api } = await start()
    expect(await rejection(api.call('devices.forget', { device: 'nobody' }))).toBe('no paired device matches "nobody"; `arbor devices` lists them')
    expect(await rejection(api.call('devices.forget', { device: ' ' }))).toMatch(/device is empty/)
    const other = 'c'.repeat(64)
    node.cluster.trust(other, 'phone')
    expect(node.cluster.isTrusted(other)).toBe(true)
    const { text } = await api.request('devices.forget', { device: 'phone' })
    expect(text).toMatch(/phone/)
    expect(node.cluster.isTrusted(other)).toBe(false)
  })
})
