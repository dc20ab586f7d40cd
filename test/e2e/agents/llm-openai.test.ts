// The real `openai` SDK over HTTP against a local OpenAI-compatible server: streaming, tool
// calls, usage, every error mapping, retries, timeouts, cancel. Loopback only.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { IrMessage, IrStreamEvent, IrToolSpec } from '../../../src/shared/llm-ir'
import { memoryLogger } from '../../../src/shared/logger'
import { OpenAIProvider, type OpenAIProviderOptions } from '../../../src/main/llm/openai-provider'
import { LlmError, type ChatRequest } from '../../../src/main/llm/provider'
import { reply, startOpenAITestServer, type OpenAITestServer } from '../../helpers/openai-test-server'

let server: OpenAITestServer

beforeEach(async () => { server = await startOpenAITestServer({ apiKey: 'sk-test', models: ['test-model', 'other-model'] }) })
afterEach(async () => { await server.close() })

const TOOLS: IrToolSpec[] = [{ name: 'bash', description: 'Run a command', parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] } }]
const CONVERSATION: IrMessage[] = [
  { role: 'system', text: 'You are terse.' },
  { role: 'user', text: 'list files' },
  { role: 'assistant', text: '', toolCalls: [{ id: 'call_1', name: 'bash', args: { cmd: 'ls' } }] },
  { role: 'tool', callId: 'call_1', name: 'bash', output: 'a.txt\nb.txt', status: 'ok' },
  { role: 'user', text: 'and now?' }
]

function provider (opts: OpenAIProviderOptions = {}): OpenAIProvider {
  return new OpenAIProvider({ baseURL: server.baseURL, apiKey: 'sk-test', model: 'test-model', timeoutMs: 2000, maxRetries: 2, ...opts })
}

function request (extra: Partial<ChatRequest> = {}): ChatRequest {
  return { model: 'test-model', messages: CONVERSATION, tools: TOOLS, signal: new AbortController().signal, ...extra }
}

async function failure (p: Promise<unknown>): Promise<LlmError> {
  const e = await p.then(() => { throw new Error('expected the call to fail') }, (err: unknown) => err)
  expect(e).toBeInstanceOf(LlmError)
  return e as LlmError
}

describe('OpenAIProvider against an OpenAI-compatible server', () => {
  it('streams text, reports usage, and sends the conversation, tools, model and key', async () => {
    server.enqueue(reply.text('Two files: a.txt and b.txt.', { pieces: 3, usage: { prompt_tokens: 42, completion_tokens: 9 } }))
    const events: IrStreamEvent[] = []
    const result = await provider().chat(request({ onEvent: e => events.push(e), temperature: 0.2, maxTokens: 100 }))
    expect(result).toEqual({ text: 'Two files: a.txt and b.txt.', toolCalls: [], finish: 'stop', model: 'test-model', usage: { input: 42, output: 9 } })
    const deltas = events.flatMap(e => e.type === 'text' ? [e.delta] : [])
    expect(deltas.length).toBeGreaterThan(5)
    expect(deltas.join('')).toBe(result.text)

    const [sent] = server.chatRequests()
    expect(sent?.headers.authorization).toBe('Bearer sk-test')
    expect(sent?.headers).not.toHaveProperty('x-arbor-call')
    expect(sent?.body).toMatchObject({
      model: 'test-model',
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.2,
      max_tokens: 100,
      tools: [{ type: 'function', function: { name: 'bash', description: 'Run a command' } }],
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'list files' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'bash', arguments: '{"cmd":"ls"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'a.txt\nb.txt' },
        { role: 'user', content: 'and now?' }
      ]
    })
  })

  it('assembles tool calls split over many chunks, with reasoning', async () => {
    server.enqueue(reply.toolCalls([
      { id: 'call_a', name: 'bash', arguments: '{"cmd": "grep -r \\"TODO\\" src | wc -l"}' },
      { id: 'call_b', name: 'bash', arguments: '{"cmd": "echo ✓ done"}' }
    ], { pieces: 1, reasoning: 'I should count the TODOs.', reasoningField: 'reasoning', usage: { prompt_tokens: 10, completion_tokens: 30, reasoning_tokens: 7 } }))
    const events: IrStreamEvent[] = []
    const result = await provider().chat(request({ onEvent: e => events.push(e) }))
    expect(result.toolCalls).toEqual([
      { id: 'call_a', name: 'bash', args: { cmd: 'grep -r "TODO" src | wc -l' } },
      { id: 'call_b', name: 'bash', args: { cmd: 'echo ✓ done' } }
    ])
    expect(result.finish).toBe('tool_calls')
    expect(result.reasoning).toBe('I should count the TODOs.')
    expect(result.usage).toEqual({ input: 10, output: 30, reasoning: 7 })
    expect(events.filter(e => e.type === 'tool-call').length).toBeGreaterThan(40)
  })

  it('works without streaming too', async () => {
    server.enqueue(reply.toolCalls([{ id: 'c', name: 'bash', arguments: '{"cmd":"pwd"}' }], { text: 'Checking.', usage: { prompt_tokens: 5, completion_tokens: 6 } }))
    const events: IrStreamEvent[] = []
    const result = await provider({ stream: false }).chat(request({ onEvent: e => events.push(e) }))
    expect(result).toEqual({ text: 'Checking.', toolCalls: [{ id: 'c', name: 'bash', args: { cmd: 'pwd' } }], finish: 'tool_calls', model: 'test-model', usage: { input: 5, output: 6 } })
    expect(server.chatRequests()[0]?.body.stream).toBeFalsy()
    expect(events).toContainEqual({ type: 'text', delta: 'Checking.' })
  })

  it('lists the models the server offers', async () => {
    expect(await provider().listModels()).toEqual(['test-model', 'other-model'])
  })
})

describe('failures become LlmErrors that say what to do', () => {
  it('401: auth, naming the base URL and where to set the key; not retried', async () => {
    const e = await failure(provider({ apiKey: 'sk-wrong' }).chat(request()))
    expect(e.code).toBe('auth')
    expect(e.status).toBe(401)
    expect(e.message).toContain(`the API key was refused by ${server.baseURL}`)
    expect(e.message).toContain('set OPENAI_API_KEY or the key in settings')
    expect(server.chatRequests()).toHaveLength(1)
    expect(e.transient).toBe(false)
  })

  it('404 model_not_found: names the model and the base URL', async () => {
    const e = await failure(provider().chat(request({ model: 'gpt-nonexistent' })))
    expect(e.code).toBe('model-not-found')
    expect(e.message).toContain('"gpt-nonexistent"')
    expect(e.message).toContain(server.baseURL)
    expect(server.chatRequests()).toHaveLength(1)
  })

  it('404 on a wrong base URL path says to check the base URL', async () => {
    const e = await failure(provider({ baseURL: server.baseURL.replace(/\/v1$/, '') }).chat(request()))
    expect(e.code).toBe('bad-request')
    expect(e.message).toContain('check the base URL')
  })

  it('400: bad-request with the server message', async () => {
    server.enqueue(reply.badRequest("Invalid value for 'temperature': expected a number."))
    const e = await failure(provider().chat(request()))
    expect(e.code).toBe('bad-request')
    expect(e.message).toContain("Invalid value for 'temperature': expected a number.")
  })

  it('400 saying the request is over the context window: context-length, with the window it names (compaction answers it)', async () => {
    server.enqueue(reply.badRequest("This model's maximum context length is 8192 tokens.", 'context_length_exceeded'))
    const e = await failure(provider().chat(request()))
    expect(e.code).toBe('context-length')
    expect(e.message).toContain("This model's maximum context length is 8192 tokens.")
  })

  it('429 then success: retried with backoff, observable in the requests and the log', async () => {
    server.enqueue(reply.rateLimited(), reply.rateLimited(), reply.text('finally'))
    const logger = memoryLogger()
    const result = await provider({ logger }).chat(request())
    expect(result.text).toBe('finally')
    expect(server.chatRequests().map(r => r.headers['x-stainless-retry-count'])).toEqual(['0', '1', '2'])
    expect(logger.lines.map(l => l.message)).toEqual([
      `retry 1 of 2: POST ${server.baseURL}/chat/completions`,
      `retry 2 of 2: POST ${server.baseURL}/chat/completions`
    ])
  })

  it('429 after the retries: rate-limit, transient', async () => {
    server.respond = () => reply.rateLimited()
    const e = await failure(provider({ maxRetries: 2 }).chat(request()))
    expect(e.code).toBe('rate-limit')
    expect(e.message).toContain('429 after 2 retries')
    expect(e.transient).toBe(true)
    expect(server.chatRequests()).toHaveLength(3)
  })

  it('5xx: retried, then success or server', async () => {
    server.enqueue(reply.serverError(500), reply.serverError(503), reply.text('ok'))
    expect((await provider().chat(request())).text).toBe('ok')
    expect(server.chatRequests()).toHaveLength(3)

    server.respond = () => reply.serverError(502)
    const e = await failure(provider({ maxRetries: 1 }).chat(request()))
    expect(e.code).toBe('server')
    expect(e.message).toContain('502 after 1 retry:')
    expect(server.chatRequests()).toHaveLength(5)
  })

  it('times out when the server never answers', async () => {
    server.enqueue(reply.hang())
    const t0 = Date.now()
    const e = await failure(provider({ timeoutMs: 150, maxRetries: 0 }).chat(request()))
    expect(e.code).toBe('timeout')
    expect(e.message).toContain('did not answer within 150 ms')
    expect(Date.now() - t0).toBeLessThan(1500)
  })

  it('times out when the stream stops mid-answer', async () => {
    server.enqueue(reply.text('Hello there, this stalls', { fault: { after: 3, kind: 'hang' } }))
    const events: IrStreamEvent[] = []
    const e = await failure(provider({ timeoutMs: 150, maxRetries: 0 }).chat(request({ onEvent: ev => events.push(ev) })))
    expect(e.code).toBe('timeout')
    expect(events.length).toBeGreaterThan(0)
  })

  it('cancels mid-stream promptly', async () => {
    server.enqueue(reply.text('x'.repeat(200), { pieces: 1, delayMs: 20 }))
    const ac = new AbortController()
    let abortedAt = 0
    const p = provider().chat(request({ signal: ac.signal, onEvent: e => { if (e.type === 'text' && abortedAt === 0) { abortedAt = Date.now(); ac.abort() } } }))
    const e = await failure(p)
    expect(e.code).toBe('cancelled')
    expect(Date.now() - abortedAt).toBeLessThan(200)
  })

  it('cancels while waiting for the server, and during a retry backoff', async () => {
    server.enqueue(reply.hang())
    const ac = new AbortController()
    const p = provider().chat(request({ signal: ac.signal }))
    await server.waitForChatRequests(1)
    ac.abort()
    expect((await failure(p)).code).toBe('cancelled')

    server.enqueue(reply.rateLimited(10_000))
    const ac2 = new AbortController()
    const p2 = provider().chat(request({ signal: ac2.signal }))
    await server.waitForChatRequests(2)
    const t0 = Date.now()
    ac2.abort()
    expect((await failure(p2)).code).toBe('cancelled')
    expect(Date.now() - t0).toBeLessThan(200)
    expect(server.chatRequests()).toHaveLength(2)

    const pre = new AbortController()
    pre.abort()
    expect((await failure(provider().chat(request({ signal: pre.signal })))).code).toBe('cancelled')
    expect(server.chatRequests()).toHaveLength(2)
  })

  it('unreachable: names the base URL and says the server must be running', async () => {
    const dead = await startOpenAITestServer()
    const baseURL = dead.baseURL
    await dead.close()
    const e = await failure(new OpenAIProvider({ baseURL, maxRetries: 0 }).chat(request()))
    expect(e.code).toBe('unreachable')
    expect(e.message).toContain(`cannot connect to ${baseURL} (ECONNREFUSED)`)
    expect(e.message).toContain('must be running')
    expect(e.message).toContain('11434')
    expect(e.transient).toBe(true)
  })

  it('a missing API key for a non-local server fails before any request; a local one needs none', async () => {
    const remote = new OpenAIProvider({ baseURL: 'https://api.example.com/v1' })
    expect(remote.missingKey).toBe(true)
    const e = await failure(remote.chat(request()))
    expect(e.code).toBe('auth')
    expect(e.message).toContain('no API key for https://api.example.com/v1')
    expect(e.message).toContain('OPENAI_API_KEY')

    const keyless = await startOpenAITestServer()
    try {
      keyless.enqueue(reply.text('hi'))
      const local = new OpenAIProvider({ baseURL: keyless.baseURL })
      expect((await local.chat(request())).text).toBe('hi')
      expect(keyless.chatRequests()[0]?.headers.authorization).toMatch(/^Bearer \S+/)
    } finally {
      await keyless.close()
    }
  })

  it('a malformed stream is a bad-response; a dropped one is unreachable', async () => {
    server.enqueue(reply.text('Hello world', { fault: { after: 2, kind: 'malformed' } }))
    const e = await failure(provider().chat(request()))
    expect(e.code).toBe('bad-response')
    expect(e.message).toContain('not valid JSON')

    server.enqueue(reply.text('Hello world', { fault: { after: 2, kind: 'drop' } }))
    const e2 = await failure(provider().chat(request()))
    expect(e2.code).toBe('unreachable')
    expect(e2.message).toContain('lost mid-answer')
  })
})
