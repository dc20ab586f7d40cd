// A model behind any OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama, llama.cpp,
// vLLM, LM Studio, OpenRouter ...), through the official `openai` SDK. Every failure becomes an
// LlmError whose message says what to do.
import { createHash } from 'node:crypto'
import type OpenAI from 'openai'
import type { ChatCompletionChunk, ChatCompletionCreateParamsBase } from 'openai/resources/chat/completions'
import type { IrResult } from '../../shared/llm-ir'
import type { Logger } from '../../shared/logger'
import { ChatStreamAccumulator, fromOpenAICompletion, toOpenAIMessages, toOpenAITools } from './openai-mapping'
import { isContextOverflow, LlmError, windowInMessage, type ChatRequest, type LlmProvider } from './provider'
import { serverContextWindow } from './context-window'

export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1'
export const DEFAULT_OPENAI_MODEL = 'gpt-4o-mini'
/** Sent to local servers that need no key (Ollama, llama.cpp); the SDK insists on one. */
export const LOCAL_DUMMY_API_KEY = 'local-no-key'

export interface OpenAIProviderOptions {
  /** Required unless the base URL is local (see isLocalBaseURL). */
  apiKey?: string
  /** Default https://api.openai.com/v1. Ollama: http://localhost:11434/v1. */
  baseURL?: string
  /** The model used when a request names none. */
  model?: string
  /**
   * How long to wait for the server: for the response to start (per attempt; the SDK
   * retries timeouts) and then for each next streamed chunk. Default 180 000 ms.
   */
  timeoutMs?: number
  /** Retries of connection failures, timeouts, 408/409/429/5xx, with exponential backoff (or the server's retry-after). Default 2. */
  maxRetries?: number
  /** Stream the answer (default true). Off for servers whose streaming is broken. */
  stream?: boolean
  /** Retries and other diagnostics. */
  logger?: Logger
  /** Extra `OpenAI-Organization` / `OpenAI-Project` headers, as the SDK's env vars would set. */
  organization?: string | null
  project?: string | null
}

/**
 * Provider options from the environment, explicitly (the SDK would read process.env itself;
 * we pass everything so a settings value always wins and tests are hermetic):
 * OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL, OPENAI_ORG_ID, OPENAI_PROJECT_ID.
 * Empty strings count as unset.
 */
export function openAIOptionsFromEnv (env: Record<string, string | undefined>): OpenAIProviderOptions {
  const get = (k: string): string | undefined => {
    const v = env[k]?.trim()
    return v ? v : undefined
  }
  const opts: OpenAIProviderOptions = {}
  const apiKey = get('OPENAI_API_KEY'); if (apiKey) opts.apiKey = apiKey
  const baseURL = get('OPENAI_BASE_URL'); if (baseURL) opts.baseURL = baseURL
  const model = get('OPENAI_MODEL'); if (model) opts.model = model
  const org = get('OPENAI_ORG_ID'); if (org) opts.organization = org
  const project = get('OPENAI_PROJECT_ID'); if (project) opts.project = project
  return opts
}

/**
 * Whether a base URL points at a server on this machine or the local network, which may
 * need no API key: loopback, private IPv4 ranges, link-local, `*.local`/`*.localhost`/`*.internal`,
 * and single-label host names (a Docker Compose service such as `http://ollama:11434`).
 */
export function isLocalBaseURL (baseURL: string): boolean {
  let host: string
  try {
    host = new URL(baseURL).hostname.toLowerCase()
  } catch {
    return false
  }
  host = host.replace(/^\[|\]$/g, '')
  if (host === 'localhost' || host === '::1' || host === '0.0.0.0') return true
  if (/\.(localhost|local|internal|lan|home\.arpa)$/.test(host)) return true
  const v4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(host)
  if (v4) {
    const [a, b] = [Number(v4[1]), Number(v4[2])]
    return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254)
  }
  if (/^f[cd][0-9a-f]{2}:|^fe80:/.test(host)) return true // IPv6 unique-local, link-local
  return !host.includes('.') && !host.includes(':')
}

type ChatParams = ChatCompletionCreateParamsBase
const CALL_HEADER = 'x-arbor-call'

export class OpenAIProvider implements LlmProvider {
  readonly name = 'openai'
  readonly baseURL: string
  readonly defaultModel: string
  readonly timeoutMs: number
  readonly maxRetries: number
  private readonly apiKey: string | undefined
  private readonly stream: boolean
  private readonly logger: Logger | undefined
  private client: OpenAI | undefined
  /** the SDK's class, loaded by the first call (a node that never calls a model, a CLI command's, never loads it) */
  private OpenAI: typeof OpenAI | undefined
  private readonly clientOptions: ConstructorParameters<typeof OpenAI>[0]
  /** Retries so far of each call in flight, keyed by a header our fetch removes again. */
  private readonly retriesByCall = new Map<string, number>()
  private calls = 0

  constructor (options: OpenAIProviderOptions = {}) {
    this.baseURL = (options.baseURL ?? DEFAULT_OPENAI_BASE_URL).replace(/\/+$/, '')
    this.defaultModel = options.model ?? DEFAULT_OPENAI_MODEL
    this.timeoutMs = options.timeoutMs ?? 180_000
    this.maxRetries = options.maxRetries ?? 2
    this.stream = options.stream ?? true
    this.logger = options.logger
    this.apiKey = options.apiKey || undefined
    const logger = this.logger
    this.clientOptions = {
      apiKey: this.apiKey ?? LOCAL_DUMMY_API_KEY,
      baseURL: this.baseURL,
      organization: options.organization ?? null,
      project: options.project ?? null,
      webhookSecret: null,
      timeout: this.timeoutMs,
      maxRetries: this.maxRetries,
      // The SDK logs parse failures with console.error by default; we report through LlmError.
      logLevel: 'off',
      // Every attempt passes here, so retries are visible in our log.
      fetch: async (url, init) => {
        const headers = new Headers(init?.headers)
        const retry = Number(headers.get('x-stainless-retry-count') ?? '0')
        const call = headers.get(CALL_HEADER)
        if (call !== null) {
          headers.delete(CALL_HEADER) // ours, not the server's
          this.retriesByCall.set(call, retry)
        }
        if (retry > 0) logger?.info(`retry ${retry} of ${this.maxRetries}: ${init?.method ?? 'GET'} ${String(url)}`)
        return await fetch(url, { ...init, headers })
      }
    }
  }

  /** Whether this provider would refuse to send for lack of an API key. */
  get missingKey (): boolean {
    return this.apiKey === undefined && !isLocalBaseURL(this.baseURL)
  }

  private async sdk (): Promise<OpenAI> {
    this.OpenAI ??= (await import('openai')).default
    this.client ??= new this.OpenAI(this.clientOptions)
    return this.client
  }

  async chat (req: ChatRequest): Promise<IrResult> {
    const model = req.model || this.defaultModel
    if (req.signal.aborted) throw cancelled()
    if (this.missingKey) {
      throw new LlmError('auth', `no API key for ${this.baseURL}: set OPENAI_API_KEY or the key in settings (only a local server, e.g. Ollama on http://localhost:11434/v1, works without one)`)
    }
    // One signal for the SDK: the caller's cancel, or our timeout between chunks.
    const timer = new IdleTimer(this.timeoutMs)
    const signal = AbortSignal.any([req.signal, timer.signal])
    const params: ChatParams = {
      model,
      messages: toOpenAIMessages(req.messages),
      ...(req.tools.length > 0 ? { tools: toOpenAITools(req.tools) } : {}),
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
      ...(req.maxTokens !== undefined ? this.maxTokensParam(req.maxTokens) : {})
    }
    const accOpts = { model, onEvent: req.onEvent, fallbackCallId: fallbackCallId(req) }
    const call = String(++this.calls)
    const headers = { [CALL_HEADER]: call }
    try {
      if (!this.stream) {
        // The SDK's own timeout covers the whole non-streamed answer.
        const completion = await untilAborted((await this.sdk()).chat.completions.create({ ...params, stream: false }, { signal: req.signal, headers }), req.signal)
        if (!Array.isArray(completion.choices) || completion.choices.length === 0) {
          throw new LlmError('bad-response', `${this.baseURL} answered without a completion (no choices) for model "${model}"`)
        }
        return fromOpenAICompletion(completion, accOpts)
      }
      const stream = await untilAborted(
        (await this.sdk()).chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } }, { signal, headers }),
        req.signal
      )
      // The SDK's timeout ends when the headers arrive; from here ours runs between chunks.
      timer.start()
      const acc = new ChatStreamAccumulator(accOpts)
      for await (const chunk of stream) {
        timer.start()
        const err = (chunk as ChatCompletionChunk & { error?: unknown }).error
        if (err !== undefined && err !== null) throw new LlmError('server', `${this.baseURL} reported an error mid-answer: ${describe(err)}`)
        acc.push(chunk)
      }
      // The SDK ends the iteration quietly when the request is aborted.
      if (req.signal.aborted) throw cancelled()
      if (timer.fired) throw this.timeoutError(model)
      if (!acc.started) throw new LlmError('bad-response', `${this.baseURL} ended the stream without any completion chunk for model "${model}"`)
      return acc.result()
    } catch (e) {
      throw this.mapError(e, model, req.signal, timer.fired, this.retriesByCall.get(call) ?? 0)
    } finally {
      timer.stop()
      this.retriesByCall.delete(call)
    }
  }

  /** The models the server offers (GET /models), for settings and for checking a connection. */
  async listModels (signal: AbortSignal = new AbortController().signal): Promise<string[]> {
    if (signal.aborted) throw cancelled()
    if (this.missingKey) throw new LlmError('auth', `no API key for ${this.baseURL}: set OPENAI_API_KEY or the key in settings`)
    try {
      const ids: string[] = []
      const sdk = await this.sdk()
      for await (const m of sdk.models.list({ signal })) ids.push(m.id)
      return ids
    } catch (e) {
      throw this.mapError(e, '(listing models)', signal, false, 0)
    }
  }

  /** The window the server reports for a model (vLLM, llama.cpp, Ollama say; OpenAI does not). */
  async reportedContextWindow (model: string, signal: AbortSignal): Promise<number | undefined> {
    if (this.missingKey) return undefined
    // the key goes only where it goes for chat: this provider's own server
    return await serverContextWindow({ baseURL: this.baseURL, model, signal, local: isLocalBaseURL(this.baseURL), ...(this.apiKey !== undefined ? { apiKey: this.apiKey } : {}) })
  }

  private maxTokensParam (n: number): Partial<ChatParams> {
    // OpenAI's newer models reject max_tokens; many compatible servers know only max_tokens.
    return /(^|\.)openai\.com$/.test(hostOf(this.baseURL)) ? { max_completion_tokens: n } : { max_tokens: n }
  }

  private timeoutError (model: string, retries = 0): LlmError {
    const tried = retries > 0 ? `, tried ${retries + 1} times` : ''
    return new LlmError('timeout', `${this.baseURL} did not answer within ${this.timeoutMs} ms (model "${model}"${tried}); the server may be overloaded or still loading the model. Try again, or raise the timeout in settings`)
  }

  /** Any failure of a call -> LlmError with an actionable message. */
  private mapError (e: unknown, model: string, signal: AbortSignal, timedOut: boolean, retries: number): unknown {
    if (e instanceof LlmError) return e
    if (signal.aborted) return cancelled(e)
    const OpenAI = this.OpenAI
    if (OpenAI === undefined) return e // the SDK did not load: its own error says why
    if (timedOut || e instanceof OpenAI.APIConnectionTimeoutError) return this.timeoutError(model, retries)
    const base = this.baseURL
    const retried = retries > 0 ? ` after ${retries} ${retries === 1 ? 'retry' : 'retries'}` : ''
    if (e instanceof OpenAI.APIUserAbortError) return cancelled(e)
    if (e instanceof OpenAI.APIConnectionError) return this.connectionError(e, retries)
    if (e instanceof OpenAI.APIError && e.status !== undefined) {
      const status = e.status
      const msg = serverMessage(e)
      const opts = { cause: e, status }
      if (status === 401) return new LlmError('auth', `the API key was refused by ${base} (401: ${msg}); set OPENAI_API_KEY or the key in settings`, opts)
      if (status === 403) return new LlmError('auth', `${base} refused access (403: ${msg}); check that the API key may use model "${model}"`, opts)
      if (status === 404) {
        if (e.code === 'model_not_found' || /model/i.test(msg)) {
          return new LlmError('model-not-found', `model "${model}" was not found at ${base} (${msg}); choose a model the server offers (GET ${base}/models; for Ollama: ollama pull ${model})`, opts)
        }
        return new LlmError('bad-request', `${base} has no chat completions endpoint (404: ${msg}); check the base URL (it usually ends in /v1)`, opts)
      }
      if (isContextOverflow(status, e.code, e.type, msg)) {
        const window = windowInMessage(msg) ?? nCtxOf(e.error)
        return new LlmError('context-length', `the conversation no longer fits the context window of model "${model}" at ${base} (${status}: ${msg})`, { ...opts, ...(window !== undefined ? { window } : {}) })
      }
      if (status === 429) return new LlmError('rate-limit', `${base} is rate-limiting requests (429${retried}: ${msg}); wait and try again, or check your plan's limits`, opts)
      if (status === 408) return new LlmError('timeout', `${base} timed out the request (408${retried}: ${msg})`, opts)
      if (status >= 500) return new LlmError('server', `${base} failed with ${status}${retried}: ${msg}`, opts)
      return new LlmError('bad-request', `${base} rejected the request for model "${model}" (${status}): ${msg}`, opts)
    }
    if (e instanceof SyntaxError) return new LlmError('bad-response', `${base} sent a stream that is not valid JSON server-sent events (${e.message}); is this an OpenAI-compatible endpoint?`, { cause: e })
    if (e instanceof OpenAI.APIError) return new LlmError('server', `${base} reported an error: ${serverMessage(e)}`, { cause: e })
    if (e instanceof OpenAI.OpenAIError) return new LlmError('bad-response', `${base}: ${e.message}`, { cause: e })
    const code = errnoCode(e)
    if (code !== undefined || (e instanceof TypeError && /terminated|fetch failed|socket/i.test(e.message))) {
      return new LlmError('unreachable', `the connection to ${base} was lost mid-answer (${code ?? describe(e)}); try again`, { cause: e })
    }
    return e
  }

  private connectionError (e: InstanceType<typeof OpenAI.APIConnectionError>, retries: number): LlmError {
    const base = this.baseURL
    const code = errnoCode(e)
    const retried = retries > 0 ? ` (tried ${retries + 1} times)` : ''
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
      return new LlmError('unreachable', `cannot resolve the host of ${base} (${code})${retried}: check the base URL in settings and your network`, { cause: e })
    }
    const local = isLocalBaseURL(base)
    const hint = local
      ? 'the server must be running there (e.g. `ollama serve`, which listens on http://localhost:11434/v1)'
      : 'check the base URL and your network; the server must be running and reachable'
    return new LlmError('unreachable', `cannot connect to ${base} (${code ?? 'connection error'})${retried}: ${hint}`, { cause: e })
  }
}

function cancelled (cause?: unknown): LlmError {
  return new LlmError('cancelled', 'the model call was cancelled', cause !== undefined ? { cause } : undefined)
}

function hostOf (url: string): string {
  try { return new URL(url).hostname } catch { return '' }
}

function serverMessage (e: InstanceType<typeof OpenAI.APIError>): string {
  const err = e.error as { message?: unknown } | undefined
  if (err && typeof err.message === 'string' && err.message !== '') return err.message
  // The SDK's message starts with the status; drop it.
  return e.message.replace(/^\d{3}\s+/, '')
}

/** llama.cpp's refusal names the window in a field: `{error: {n_ctx}}`. */
function nCtxOf (err: unknown): number | undefined {
  const n = (err as { n_ctx?: unknown } | null | undefined)?.n_ctx
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : undefined
}

function describe (v: unknown): string {
  if (v instanceof Error) return v.message
  if (typeof v === 'object' && v !== null && typeof (v as { message?: unknown }).message === 'string') return (v as { message: string }).message
  return typeof v === 'string' ? v : JSON.stringify(v)
}

/** ECONNREFUSED, ENOTFOUND ... from anywhere in the cause chain (undici nests them). */
function errnoCode (e: unknown): string | undefined {
  for (let c: unknown = e, depth = 0; c !== null && typeof c === 'object' && depth < 6; c = (c as { cause?: unknown }).cause, depth++) {
    const code = (c as { code?: unknown }).code
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code
    const errors = (c as { errors?: unknown }).errors // AggregateError (IPv4 + IPv6 attempts)
    if (Array.isArray(errors)) {
      for (const sub of errors) {
        const sc = errnoCode(sub)
        if (sc) return sc
      }
    }
  }
  return undefined
}

/**
 * Rejects with `cancelled` as soon as the signal fires, even while the SDK sleeps between
 * retries (its backoff sleep does not watch the signal; the request it would send next does).
 */
async function untilAborted<T> (p: Promise<T>, signal: AbortSignal): Promise<T> {
  let onAbort: (() => void) | undefined
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(cancelled())
    signal.addEventListener('abort', onAbort, { once: true })
  })
  p.catch(() => undefined) // settled later, after a cancel: not unhandled
  try {
    return await Promise.race([p, aborted])
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort)
  }
}

/** A timer restarted on every chunk; when it fires, its signal aborts the stream. */
class IdleTimer {
  private readonly controller = new AbortController()
  private handle: ReturnType<typeof setTimeout> | undefined
  fired = false
  constructor (private readonly ms: number) {}
  get signal (): AbortSignal { return this.controller.signal }
  start (): void {
    this.stop()
    this.handle = setTimeout(() => { this.fired = true; this.controller.abort() }, this.ms)
  }

  stop (): void {
    if (this.handle !== undefined) clearTimeout(this.handle)
    this.handle = undefined
  }
}

/** Ids for tool calls a server sent without one: stable for the same conversation. */
function fallbackCallId (req: ChatRequest): (index: number) => string {
  let prefix: string | undefined
  return index => {
    prefix ??= createHash('sha256').update(JSON.stringify(req.messages)).digest('hex').slice(0, 12)
    return `call_${prefix}_${index}`
  }
}
