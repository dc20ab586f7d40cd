// A local OpenAI-compatible server for tests: node:http on loopback, a random port, the wire
// format of the real Chat Completions API (SSE `data: {...}\n\n` chat.completion.chunk objects,
// a final usage chunk when asked, `data: [DONE]`), scripted per test, with the faults a real
// deployment shows (401, 404 model_not_found, 429, 5xx, hangs, dropped and malformed streams).
// It records every request so tests can assert what the SDK sent.
import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions'

export interface ScriptedToolCall { id?: string; name: string; arguments: string }

export interface ScriptedCompletion {
  text?: string
  reasoning?: string
  /** How the reasoning is sent: DeepSeek/llama.cpp style or Ollama/OpenRouter style. */
  reasoningField?: 'reasoning_content' | 'reasoning'
  toolCalls?: ScriptedToolCall[]
  /** Default: tool_calls when there are tool calls, else stop. */
  finish?: 'stop' | 'tool_calls' | 'length' | 'content_filter' | null
  usage?: { prompt_tokens: number; completion_tokens: number; reasoning_tokens?: number }
  /** The model the server names in its answer; default: the requested one. */
  model?: string
  /** How strings are cut into deltas: max characters per piece, or a function. Default 4. */
  pieces?: number | ((s: string) => string[])
  /** Pause between chunks. */
  delayMs?: number
  /** After `after` SSE chunks: stop sending but keep the connection open, cut it, or send a line that is not JSON. */
  fault?: { after: number; kind: 'hang' | 'drop' | 'malformed' }
}

export type Reply =
  | ({ type: 'completion' } & ScriptedCompletion)
  | { type: 'error'; status: number; body?: unknown; headers?: Record<string, string> }
  /** Accept the request and never answer (not even headers). */
  | { type: 'hang' }

export interface RecordedRequest {
  method: string
  path: string
  headers: http.IncomingHttpHeaders
  /** Parsed JSON body (undefined for GET or unparseable bodies). */
  body: any // eslint-disable-line @typescript-eslint/no-explicit-any
  /** Of a chat request: the tokens the server counts in it (~4 characters of its messages and tools a token). */
  tokens?: number
}

export const reply = {
  text: (text: string, extra: ScriptedCompletion = {}): Reply => ({ type: 'completion', text, ...extra }),
  toolCalls: (toolCalls: ScriptedToolCall[], extra: ScriptedCompletion = {}): Reply => ({ type: 'completion', toolCalls, ...extra }),
  error: (status: number, message: string, type: string, code: string | null = null, headers?: Record<string, string>): Reply =>
    ({ type: 'error', status, body: { error: { message, type, param: null, code } }, ...(headers ? { headers } : {}) }),
  unauthorized: (): Reply => reply.error(401, 'Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.', 'invalid_request_error', 'invalid_api_key'),
  modelNotFound: (model: string): Reply => reply.error(404, `The model \`${model}\` does not exist or you do not have access to it.`, 'invalid_request_error', 'model_not_found'),
  /** `retry-after-ms` keeps the SDK's backoff short in tests (the SDK honours it as it would the real API's). */
  rateLimited: (retryAfterMs = 5): Reply => reply.error(429, 'Rate limit reached for requests', 'requests', 'rate_limit_exceeded', { 'retry-after-ms': String(retryAfterMs) }),
  serverError: (status = 500, retryAfterMs = 5): Reply => reply.error(status, 'The server had an error while processing your request.', 'server_error', null, { 'retry-after-ms': String(retryAfterMs) }),
  badRequest: (message: string, code = 'invalid_value'): Reply => reply.error(400, message, 'invalid_request_error', code),
  /** OpenAI's answer to a request longer than the model's window */
  contextLengthExceeded: (window: number, tokens: number): Reply => reply.error(400, `This model's maximum context length is ${window} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`, 'invalid_request_error', 'context_length_exceeded'),
  hang: (): Reply => ({ type: 'hang' })
}

function cutter (pieces: ScriptedCompletion['pieces']): (s: string) => string[] {
  if (typeof pieces === 'function') return pieces
  const n = Math.max(1, pieces ?? 4)
  return s => {
    const out: string[] = []
    for (let i = 0; i < s.length; i += n) out.push(s.slice(i, i + n))
    return out
  }
}

const CREATED = 1_700_000_000

/** The chunks the real API streams for a completion (without the SSE framing). */
export function completionChunks (c: ScriptedCompletion, req: { model: string; includeUsage: boolean }): ChatCompletionChunk[] {
  const cut = cutter(c.pieces)
  const model = c.model ?? req.model
  const base = { id: 'chatcmpl-test', object: 'chat.completion.chunk' as const, created: CREATED, model, system_fingerprint: 'fp_test' }
  const usageField = req.includeUsage ? { usage: null } : {}
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): ChatCompletionChunk =>
    ({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...usageField }) as ChatCompletionChunk
  const out: ChatCompletionChunk[] = [chunk({ role: 'assistant', content: '', refusal: null })]
  const field = c.reasoningField ?? 'reasoning_content'
  for (const p of cut(c.reasoning ?? '')) out.push(chunk({ [field]: p }))
  for (const p of cut(c.text ?? '')) out.push(chunk({ content: p }))
  ;(c.toolCalls ?? []).forEach((tc, index) => {
    out.push(chunk({ tool_calls: [{ index, id: tc.id ?? `call_test_${index}`, type: 'function', function: { name: tc.name, arguments: '' } }] }))
    for (const p of cut(tc.arguments)) out.push(chunk({ tool_calls: [{ index, function: { arguments: p } }] }))
  })
  out.push(chunk({}, finishOf(c)))
  if (req.includeUsage && c.usage) {
    out.push({ ...base, choices: [], usage: wireUsage(c.usage) } as ChatCompletionChunk)
  }
  return out
}

function finishOf (c: ScriptedCompletion): string | null {
  if (c.finish !== undefined) return c.finish
  return (c.toolCalls ?? []).length > 0 ? 'tool_calls' : 'stop'
}

function wireUsage (u: NonNullable<ScriptedCompletion['usage']>): NonNullable<ChatCompletion['usage']> {
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.prompt_tokens + u.completion_tokens,
    ...(u.reasoning_tokens !== undefined ? { completion_tokens_details: { reasoning_tokens: u.reasoning_tokens } } : {})
  }
}

/** The non-streamed answer. */
export function completionObject (c: ScriptedCompletion, req: { model: string }): ChatCompletion {
  const calls = (c.toolCalls ?? []).map((tc, index) => ({ id: tc.id ?? `call_test_${index}`, type: 'function' as const, function: { name: tc.name, arguments: tc.arguments } }))
  const message: Record<string, unknown> = { role: 'assistant', content: c.text ?? (calls.length ? null : ''), refusal: null }
  if (calls.length) message.tool_calls = calls
  if (c.reasoning) message[c.reasoningField ?? 'reasoning_content'] = c.reasoning
  return {
    id: 'chatcmpl-test',
    object: 'chat.completion',
    created: CREATED,
    model: c.model ?? req.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishOf(c) }],
    ...(c.usage ? { usage: wireUsage(c.usage) } : {})
  } as unknown as ChatCompletion
}

export interface OpenAITestServerOptions {
  /** When set, requests without `Authorization: Bearer <apiKey>` get the real API's 401. */
  apiKey?: string
  /** When set, a chat request for another model gets the real API's 404 model_not_found; also what GET /v1/models lists. */
  models?: string[]
  /**
   * The model's context window in tokens: a chat request counted over it gets the 400
   * `context_length_exceeded` OpenAI answers with, a completion scripted without usage reports
   * the counted prompt tokens, and the window is reported as `reports` says.
   */
  contextWindow?: number
  /** How the window is reported: vLLM's /v1/models max_model_len (the default), llama.cpp's /props (new or old shape), Ollama's /api/show, or not at all. */
  reports?: 'vllm' | 'llama.cpp' | 'llama.cpp-old' | 'ollama' | 'none'
}

/** What the test server counts of a chat request: ~4 characters of its messages and tools a token. */
export function countTokens (body: { messages?: unknown; tools?: unknown } | undefined): number {
  return Math.ceil(JSON.stringify({ messages: body?.messages ?? [], tools: body?.tools ?? [] }).length / 4)
}

export interface OpenAITestServer {
  /** e.g. http://127.0.0.1:40123/v1 */
  readonly baseURL: string
  readonly port: number
  /** Every request, in arrival order. */
  readonly requests: RecordedRequest[]
  /** Chat completion requests only. */
  chatRequests (): RecordedRequest[]
  /** Replies for the next chat requests, in order. */
  enqueue (...replies: Reply[]): void
  /** Used when the queue is empty; default: a 500 saying nothing was scripted (not retried). */
  respond: ((req: RecordedRequest, index: number) => Reply) | undefined
  /** Resolves when the server has received `n` chat requests in total. */
  waitForChatRequests (n: number, ms?: number): Promise<void>
  close (): Promise<void>
}

export async function startOpenAITestServer (options: OpenAITestServerOptions = {}): Promise<OpenAITestServer> {
  const requests: RecordedRequest[] = []
  const queue: Reply[] = []
  const sockets = new Set<Socket>()
  const waiters: Array<() => void> = []
  let chatCount = 0

  const server = http.createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (b: Buffer) => parts.push(b))
    req.on('end', () => {
      const raw = Buffer.concat(parts).toString('utf8')
      let body: unknown
      try { body = raw ? JSON.parse(raw) : undefined } catch { body = undefined }
      const url = new URL(req.url ?? '/', 'http://localhost')
      const rec: RecordedRequest = { method: req.method ?? 'GET', path: url.pathname, headers: req.headers, body }
      requests.push(rec)
      handle(rec, res)
    })
  })
  server.on('connection', s => { sockets.add(s); s.on('close', () => sockets.delete(s)) })

  function sendJson (res: http.ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'content-type': 'application/json', ...headers })
    res.end(JSON.stringify(value))
  }

  function handle (rec: RecordedRequest, res: http.ServerResponse): void {
    if (options.apiKey !== undefined && rec.headers.authorization !== `Bearer ${options.apiKey}`) {
      const r = reply.unauthorized() as Extract<Reply, { type: 'error' }>
      if (rec.path.endsWith('/chat/completions')) countChat()
      sendJson(res, r.status, r.body)
      return
    }
    const window = options.contextWindow
    const reports = window === undefined ? 'none' : options.reports ?? 'vllm'
    if (rec.method === 'GET' && rec.path === '/v1/models') {
      sendJson(res, 200, { object: 'list', data: (options.models ?? ['test-model']).map(id => ({ id, object: 'model', created: CREATED, owned_by: 'test', ...(reports === 'vllm' ? { max_model_len: window } : {}) })) })
      return
    }
    if (rec.method === 'GET' && rec.path === '/props' && (reports === 'llama.cpp' || reports === 'llama.cpp-old')) {
      sendJson(res, 200, reports === 'llama.cpp' ? { default_generation_settings: { n_ctx: window, temperature: 0.8 }, total_slots: 1 } : { n_ctx: window })
      return
    }
    if (rec.method === 'POST' && rec.path === '/api/show' && reports === 'ollama') {
      sendJson(res, 200, { modelfile: '', details: { family: 'llama' }, model_info: { 'general.architecture': 'llama', 'llama.context_length': window, 'llama.embedding_length': 4096 } })
      return
    }
    if (rec.method !== 'POST' || rec.path !== '/v1/chat/completions') {
      sendJson(res, 404, { error: { message: `Invalid URL (${rec.method} ${rec.path})`, type: 'invalid_request_error', param: null, code: null } })
      return
    }
    const index = countChat()
    const model = String(rec.body?.model ?? '')
    rec.tokens = countTokens(rec.body)
    let r: Reply
    if (options.models && !options.models.includes(model)) r = reply.modelNotFound(model)
    else if (window !== undefined && rec.tokens > window) r = reply.contextLengthExceeded(window, rec.tokens)
    else r = queue.shift() ?? exports.respond?.(rec, index) ?? { type: 'error', status: 500, body: { error: { message: 'test server: no reply scripted for this request', type: 'server_error', param: null, code: null } }, headers: { 'x-should-retry': 'false' } }
    switch (r.type) {
      case 'hang': return
      case 'error': sendJson(res, r.status, r.body ?? {}, r.headers); return
      case 'completion':
        if (window !== undefined && r.usage === undefined) r = { ...r, usage: { prompt_tokens: rec.tokens, completion_tokens: Math.ceil(((r.text ?? '').length + JSON.stringify(r.toolCalls ?? []).length) / 4) } }
        if (rec.body?.stream === true) void stream(res, r, { model, includeUsage: rec.body?.stream_options?.include_usage === true })
        else sendJson(res, 200, completionObject(r, { model }))
    }
  }

  async function stream (res: http.ServerResponse, c: ScriptedCompletion, req: { model: string; includeUsage: boolean }): Promise<void> {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' })
    const chunks = completionChunks(c, req)
    for (let i = 0; i < chunks.length; i++) {
      if (c.fault && i === c.fault.after) {
        if (c.fault.kind === 'hang') return
        if (c.fault.kind === 'drop') { res.socket?.destroy(); return }
        res.write('data: {"id":"chatcmpl-test","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"broken\n\n')
        res.end()
        return
      }
      if (c.delayMs && i > 0) await new Promise(resolve => setTimeout(resolve, c.delayMs))
      if (res.destroyed) return
      // Flushed before the next step, so a fault after it happens after the client got it.
      await new Promise<void>(resolve => res.write(`data: ${JSON.stringify(chunks[i])}\n\n`, () => resolve()))
    }
    res.end('data: [DONE]\n\n')
  }

  function countChat (): number {
    const index = chatCount++
    for (const w of waiters.splice(0)) w()
    return index
  }

  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port

  const exports: OpenAITestServer = {
    baseURL: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    chatRequests: () => requests.filter(r => r.path === '/v1/chat/completions'),
    enqueue: (...replies) => { queue.push(...replies) },
    respond: undefined,
    async waitForChatRequests (n, ms = 5000) {
      const deadline = Date.now() + ms
      while (chatCount < n) {
        if (Date.now() > deadline) throw new Error(`test server: ${chatCount} chat requests after ${ms} ms, expected ${n}`)
        await new Promise<void>(resolve => { waiters.push(resolve); setTimeout(resolve, 20) })
      }
    },
    async close () {
      for (const s of sockets) s.destroy()
      server.closeAllConnections()
      await new Promise<void>(resolve => server.close(() => resolve()))
    }
  }
  return exports
}
