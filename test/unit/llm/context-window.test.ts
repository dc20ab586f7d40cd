import { afterEach, describe, expect, it } from 'vitest'
import { ContextWindows, DEFAULT_CONTEXT_WINDOW, knownWindow } from '../../../src/main/llm/context-window'
import { OpenAIProvider } from '../../../src/main/llm/openai-provider'
import { FakeProvider } from '../../../src/main/llm/fake-provider'
import type { LlmError } from '../../../src/main/llm/provider'
import { reply, startOpenAITestServer, type OpenAITestServer } from '../../helpers/openai-test-server'

let server: OpenAITestServer | undefined
afterEach(async () => { await server?.close(); server = undefined })

const provider = (s: OpenAITestServer, model = 'test-model'): OpenAIProvider => new OpenAIProvider({ baseURL: s.baseURL, apiKey: 'sk-local', model, maxRetries: 0 })

describe('the context window of a model', () => {
  for (const reports of ['vllm', 'llama.cpp', 'llama.cpp-old', 'ollama'] as const) {
    it(`is what the server reports (${reports})`, async () => {
      const s = server = await startOpenAITestServer({ apiKey: 'sk-local', models: ['test-model'], contextWindow: 5120, reports })
      expect(await new ContextWindows().resolve({ provider: provider(s), model: 'test-model' })).toEqual({ tokens: 5120, source: 'server' })
    })
  }

  it('is asked of the server once per provider and model, and an explicit value wins', async () => {
    const s = server = await startOpenAITestServer({ apiKey: 'sk-local', models: ['test-model'], contextWindow: 5120 })
    const windows = new ContextWindows()
    const p = provider(s)
    await windows.resolve({ provider: p, model: 'test-model' })
    await windows.resolve({ provider: p, model: 'test-model' })
    expect(s.requests.filter(r => r.path === '/v1/models')).toHaveLength(1)
    expect(await windows.resolve({ provider: p, model: 'test-model', explicit: 4000 })).toEqual({ tokens: 4000, source: 'explicit' })
  })

  it('without a word from the server: the table of known models, else 8192', async () => {
    const s = server = await startOpenAITestServer({ apiKey: 'sk-local' })
    const windows = new ContextWindows()
    expect(await windows.resolve({ provider: provider(s, 'gpt-4o-mini'), model: 'gpt-4o-mini' })).toEqual({ tokens: 128_000, source: 'known-model' })
    expect(await windows.resolve({ provider: provider(s, 'my-own-model'), model: 'my-own-model' })).toEqual({ tokens: DEFAULT_CONTEXT_WINDOW, source: 'default' })
    expect(knownWindow('openrouter/llama-3.1-8b-instruct')).toBe(131_072)
  })

  it('a window a server names when it refuses a request wins, even over an explicit larger one', async () => {
    const s = server = await startOpenAITestServer({ apiKey: 'sk-local', models: ['test-model'], contextWindow: 5120 })
    const windows = new ContextWindows()
    const p = provider(s)
    windows.learn(p, 'test-model', 3000)
    expect(await windows.resolve({ provider: p, model: 'test-model', explicit: 8000 })).toEqual({ tokens: 3000, source: 'refused' })
  })

  it('of the fake provider: its script\'s', async () => {
    const windows = new ContextWindows()
    expect((await windows.resolve({ provider: new FakeProvider({ contextWindow: 1000 }), model: 'fake' })).tokens).toBe(1000)
  })
})

describe('a request over the window', () => {
  it('is a typed error naming the window (OpenAI, vLLM: context_length_exceeded; llama.cpp: exceed_context_size_error)', async () => {
    const s = server = await startOpenAITestServer({ apiKey: 'sk-local', models: ['test-model'] })
    const p = provider(s)
    const ask = async (): Promise<LlmError> => await p.chat({ model: 'test-model', messages: [{ role: 'user', text: 'hi' }], tools: [], signal: new AbortController().signal }).then(() => { throw new Error('answered') }, (e: LlmError) => e)
    s.enqueue(reply.contextLengthExceeded(4096, 5000))
    expect(await ask()).toMatchObject({ code: 'context-length', window: 4096, status: 400 })
    // vLLM: a 400 with the same words and no code
    s.enqueue(reply.error(400, "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the messages, 100 in the completion).", 'BadRequestError', null))
    expect(await ask()).toMatchObject({ code: 'context-length', window: 2048 })
    // llama.cpp
    s.enqueue({ type: 'error', status: 400, body: { error: { code: 400, message: 'the request exceeds the available context size, try increasing it', type: 'exceed_context_size_error', n_prompt_tokens: 5000, n_ctx: 4096 } } })
    expect(await ask()).toMatchObject({ code: 'context-length', window: 4096 })
    // Ollama
    s.enqueue(reply.error(400, 'input length exceeds the context length', 'api_error', null))
    expect(await ask()).toMatchObject({ code: 'context-length' })
    // any other 400 stays a bad request
    s.enqueue(reply.error(400, 'Invalid schema for function "bash"', 'invalid_request_error', null))
    expect(await ask()).toMatchObject({ code: 'bad-request' })
  })
})
