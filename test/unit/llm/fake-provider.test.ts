// The scripted model: scripts, rules, files, slow streaming, failures, replay, cancel.
import fs from 'node:fs/promises'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { IrMessage, IrResult, IrStreamEvent } from '../../../src/shared/llm-ir'
import { FakeProvider, type FakeScript } from '../../../src/main/llm/fake-provider'
import { createProvider } from '../../../src/main/llm/provider-factory'
import { isLocalBaseURL, OpenAIProvider, openAIOptionsFromEnv } from '../../../src/main/llm/openai-provider'
import { LlmError, type ChatRequest } from '../../../src/main/llm/provider'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs('arbor-llm-fake-')
afterAll(() => dirs.cleanup())

function req (messages: IrMessage[], extra: Partial<ChatRequest> = {}): ChatRequest {
  return { model: '', messages, tools: [], signal: new AbortController().signal, ...extra }
}

async function failure (p: Promise<unknown>): Promise<LlmError> {
  const e = await p.then(() => { throw new Error('expected the call to fail') }, (err: unknown) => err)
  expect(e).toBeInstanceOf(LlmError)
  return e as LlmError
}

/** Runs an agent loop against the provider: answers every tool call with `tool <name> ran`. */
async function agentLoop (p: FakeProvider, user: string, history: IrMessage[] = []): Promise<IrMessage[]> {
  const messages: IrMessage[] = [...history, { role: 'user', text: user }]
  for (let i = 0; i < 10; i++) {
    const r = await p.chat(req(messages))
    messages.push({ role: 'assistant', text: r.text, toolCalls: r.toolCalls })
    if (r.toolCalls.length === 0) return messages
    for (const c of r.toolCalls) messages.push({ role: 'tool', callId: c.id, name: c.name, output: `tool ${c.name} ran`, status: 'ok' })
  }
  throw new Error('the loop did not end')
}

describe('FakeProvider', () => {
  it('echoes the last user message by default, streamed in chunks', async () => {
    const events: IrStreamEvent[] = []
    const r = await new FakeProvider().chat(req([{ role: 'user', text: 'hello there, fake model' }], { onEvent: e => events.push(e) }))
    expect(r).toMatchObject({ text: 'You said: hello there, fake model', toolCalls: [], finish: 'stop', model: 'fake' })
    expect(r.usage?.input).toBeGreaterThan(0)
    expect(events.length).toBeGreaterThan(3)
    expect(events.map(e => e.type === 'text' ? e.delta : '').join('')).toBe(r.text)
  })

  it('plays a script of turns by conversation position: tool call, then an answer using its output', async () => {
    const p = new FakeProvider([
      { reasoning: 'Need the listing.', toolCalls: [{ name: 'bash', args: { cmd: 'ls' } }], usage: { input: 10, output: 3 } },
      { text: 'The tool said: {{lastToolOutput}}' }
    ])
    const events: IrStreamEvent[] = []
    const first = await p.chat(req([{ role: 'user', text: 'list' }], { onEvent: e => events.push(e), model: 'my-model' }))
    expect(first).toMatchObject({ text: '', finish: 'tool_calls', reasoning: 'Need the listing.', usage: { input: 10, output: 3 }, model: 'my-model' })
    expect(first.toolCalls).toEqual([{ id: expect.stringMatching(/^call_[0-9a-f]{16}_0$/), name: 'bash', args: { cmd: 'ls' } }])
    expect(events[0]).toEqual({ type: 'reasoning', delta: 'Need the' })
    expect(events).toContainEqual({ type: 'tool-call', index: 0, id: first.toolCalls[0]?.id, name: 'bash' })

    const conversation = await agentLoop(p, 'list')
    expect(conversation.at(-1)).toMatchObject({ role: 'assistant', text: 'The tool said: tool bash ran' })
    // Past the script's end: the default (echo).
    const more = await agentLoop(p, 'again', conversation)
    expect(more.at(-1)).toMatchObject({ text: 'You said: again' })
  })

  it('answers by rules on the last user message, with multi-step replies and a default', async () => {
    const p = new FakeProvider({
      rules: [
        { match: '\\bweather\\b', flags: 'i', reply: [{ toolCalls: [{ name: 'http_get', args: { url: 'https://wttr.in' } }] }, { text: 'Sunny, says {{lastToolOutput}}.' }] },
        { match: '^fail', reply: { fail: { code: 'rate-limit', message: 'scripted 429' } } },
        { match: 'slowly', reply: { text: 'abcdef', chunkSize: 2, delayMsPerChunk: 30 } }
      ],
      default: { text: 'I only talk about the weather.' }
    })
    expect((await agentLoop(p, 'What is the Weather?')).slice(-3)).toMatchObject([
      { role: 'assistant', toolCalls: [{ name: 'http_get', args: { url: 'https://wttr.in' } }] },
      { role: 'tool', output: 'tool http_get ran' },
      { role: 'assistant', text: 'Sunny, says tool http_get ran.' }
    ])
    expect((await agentLoop(p, 'hello')).at(-1)).toMatchObject({ text: 'I only talk about the weather.' })

    const e = await failure(p.chat(req([{ role: 'user', text: 'fail now' }])))
    expect(e.code).toBe('rate-limit')
    expect(e.message).toBe('scripted 429')
    expect(e.transient).toBe(true)

    const times: number[] = []
    const t0 = Date.now()
    const r = await p.chat(req([{ role: 'user', text: 'reply slowly' }], { onEvent: () => times.push(Date.now() - t0) }))
    expect(r.text).toBe('abcdef')
    expect(times).toHaveLength(3)
    expect(times[2]).toBeGreaterThanOrEqual(80)
  })

  it('fails on demand: scripted by default, after streaming the text it has', async () => {
    const p = new FakeProvider([{ text: 'partial answer', fail: { message: 'the model fell over' } }])
    const events: IrStreamEvent[] = []
    const e = await failure(p.chat(req([{ role: 'user', text: 'x' }], { onEvent: ev => events.push(ev) })))
    expect(e.code).toBe('scripted')
    expect(e.message).toBe('the model fell over')
    expect(events.map(ev => ev.type === 'text' ? ev.delta : '').join('')).toBe('partial answer')
  })

  it('gives the same answers and tool call ids to a restarted agent replaying the conversation', async () => {
    const script: FakeScript = {
      turns: [{ toolCalls: [{ name: 'a', args: {} }, { name: 'b', args: { n: 1 } }] }, { toolCalls: [{ name: 'a', args: {} }] }, { text: 'done' }]
    }
    const run1 = await agentLoop(new FakeProvider(script), 'go')
    // A new process: a fresh provider; and the same provider asked again mid-conversation.
    const run2 = await agentLoop(new FakeProvider(script), 'go')
    expect(run2).toEqual(run1)
    const p = new FakeProvider(script)
    const prefix = run1.slice(0, 4) // user, assistant(2 calls), 2 tool results
    const again: IrResult[] = [await p.chat(req(prefix)), await p.chat(req(prefix))]
    expect(again[0]).toEqual(again[1])
    expect(again[0]?.toolCalls).toEqual((run1[4] as { toolCalls: unknown }).toolCalls)
    const ids = run1.flatMap(m => m.role === 'assistant' ? (m.toolCalls ?? []).map(c => c.id) : [])
    expect(new Set(ids).size).toBe(3)
    // Another conversation (a different branch) gets other ids.
    const other = await agentLoop(new FakeProvider(script), 'go elsewhere')
    expect(other.flatMap(m => m.role === 'assistant' ? (m.toolCalls ?? []).map(c => c.id) : [])).not.toContain(ids[0])
  })

  it('cancels promptly, even in the middle of a slow chunk', async () => {
    const p = new FakeProvider([{ text: 'a slow, slow answer', delayMsPerChunk: 1000 }])
    const ac = new AbortController()
    const t0 = Date.now()
    setTimeout(() => ac.abort(), 30)
    const e = await failure(p.chat(req([{ role: 'user', text: 'x' }], { signal: ac.signal })))
    expect(e.code).toBe('cancelled')
    expect(Date.now() - t0).toBeLessThan(300)

    expect((await failure(p.chat(req([{ role: 'user', text: 'x' }], { signal: AbortSignal.abort() })))).code).toBe('cancelled')
  })

  it('loads scripts from JSON files, with errors that name the file and the problem', async () => {
    const dir = await dirs.make()
    const good = path.join(dir, 'script.json')
    await fs.writeFile(good, JSON.stringify({ rules: [{ match: 'ping', reply: { text: 'pong' } }], model: 'fake-1' }))
    const p = FakeProvider.fromFile(good)
    expect(await p.chat(req([{ role: 'user', text: 'ping' }]))).toMatchObject({ text: 'pong', model: 'fake-1' })

    const typo = path.join(dir, 'typo.json')
    await fs.writeFile(typo, JSON.stringify([{ txet: 'oops' }]))
    expect(() => FakeProvider.fromFile(typo)).toThrow(/typo\.json: invalid fake provider script.*txet/s)
    const broken = path.join(dir, 'broken.json')
    await fs.writeFile(broken, '{ nope')
    expect(() => FakeProvider.fromFile(broken)).toThrow(/broken\.json is not valid JSON/)
    expect(() => FakeProvider.fromFile(path.join(dir, 'missing.json'))).toThrow(/cannot read the fake provider script .*missing\.json/)
    expect(() => new FakeProvider({ rules: [{ match: '(', reply: { text: '' } }] })).toThrow(/rules\[0\]\.match is not a valid regular expression/)
  })
})

describe('createProvider', () => {
  it('builds the fake provider from a script or a file', async () => {
    const dir = await dirs.make()
    const file = path.join(dir, 's.json')
    await fs.writeFile(file, JSON.stringify([{ text: 'from file' }]))
    const a = createProvider({ provider: 'fake', script: file }, {})
    expect(a.model).toBe('fake')
    expect((await a.provider.chat(req([{ role: 'user', text: 'x' }]))).text).toBe('from file')
    const b = createProvider({ provider: 'fake', model: 'demo' }, {})
    expect(b.model).toBe('demo')
    expect((await b.provider.chat(req([{ role: 'user', text: 'x' }], { model: b.model }))).text).toBe('You said: x')
  })

  it('builds the openai provider from settings over the environment over defaults', () => {
    const env = { OPENAI_API_KEY: 'sk-env', OPENAI_BASE_URL: 'http://localhost:11434/v1/', OPENAI_MODEL: 'llama3.2' }
    const fromEnv = createProvider({ provider: 'openai' }, env)
    expect(fromEnv.model).toBe('llama3.2')
    expect(fromEnv.provider).toBeInstanceOf(OpenAIProvider)
    expect((fromEnv.provider as OpenAIProvider).baseURL).toBe('http://localhost:11434/v1')
    const explicit = createProvider({ provider: 'OpenAI', model: 'gpt-x', baseURL: 'https://example.com/v1', apiKey: 'sk-set', maxRetries: 5, timeoutMs: 1000 }, env)
    expect(explicit.model).toBe('gpt-x')
    expect(explicit.provider).toMatchObject({ baseURL: 'https://example.com/v1', maxRetries: 5, timeoutMs: 1000, missingKey: false })
    const defaults = createProvider({ provider: 'openai' }, {})
    expect(defaults.model).toBe('gpt-4o-mini')
    expect(defaults.provider).toMatchObject({ baseURL: 'https://api.openai.com/v1', missingKey: true })
  })

  it('reads the environment explicitly, and knows which servers need no key', () => {
    expect(openAIOptionsFromEnv({ OPENAI_API_KEY: ' sk-1 ', OPENAI_BASE_URL: '', OPENAI_ORG_ID: 'org' })).toEqual({ apiKey: 'sk-1', organization: 'org' })
    const local = ['http://localhost:11434/v1', 'http://127.0.0.1:8080/v1', 'http://[::1]:8000/v1', 'http://192.168.1.20:11434/v1', 'http://10.0.0.5/v1', 'http://ollama:11434/v1', 'http://box.local:1234/v1']
    const remote = ['https://api.openai.com/v1', 'https://openrouter.ai/api/v1', 'http://8.8.8.8/v1', 'http://172.32.0.1/v1', 'not a url']
    expect(local.filter(u => !isLocalBaseURL(u))).toEqual([])
    expect(remote.filter(u => isLocalBaseURL(u))).toEqual([])
  })

  it('names the valid providers when given an unknown one', () => {
    expect(() => createProvider({ provider: 'anthropic' }, {})).toThrow(/unknown LLM provider "anthropic": use "openai" .* or "fake"/)
  })
})
