// How many tokens a model's context holds, in order: the value set explicitly (the
// conversation's, else the settings'); what the server reports (vLLM's /v1/models
// `max_model_len`, llama.cpp's /props `n_ctx`, Ollama's /api/show `model_info.*.context_length`);
// a small table of known models; a conservative default. Asked once per provider and model; a
// window a server names when it refuses a request as too long wins over all of them.
import type { LlmProvider } from './provider'

export const DEFAULT_CONTEXT_WINDOW = 8192

export type WindowSource = 'refused' | 'explicit' | 'server' | 'known-model' | 'default'

/** Known models by name (the first pattern that matches wins): what their makers document. */
const KNOWN: ReadonlyArray<readonly [RegExp, number]> = [
  [/^gpt-4\.1/, 1_047_576],
  [/^gpt-5/, 400_000],
  [/^(o1|o3|o4)(-|$)/, 200_000],
  [/^gpt-4o|^gpt-4-turbo|^chatgpt-4o/, 128_000],
  [/^gpt-4(-|$)/, 8192],
  [/^gpt-3\.5-turbo/, 16_385],
  [/claude/, 200_000],
  [/gemini-(1\.5|2)/, 1_048_576],
  [/deepseek/, 65_536],
  [/llama-?3\.[1-3]|llama3\.[1-3]/, 131_072],
  [/llama-?3|llama3/, 8192],
  [/qwen2\.5|qwen3/, 32_768],
  [/mistral-large|mistral-small|mixtral/, 32_768]
]

/** The window of a model the table knows, by its name (a provider prefix such as `openai/` ignored). */
export function knownWindow (model: string): number | undefined {
  const name = model.toLowerCase().replace(/^.*\//, '')
  return KNOWN.find(([re]) => re.test(name))?.[1]
}

const positive = (n: unknown): number | undefined => typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : undefined

/** vLLM: GET /v1/models lists each model with `max_model_len`. */
export function windowFromModels (body: unknown, model: string): number | undefined {
  const data = (body as { data?: unknown } | null)?.data
  if (!Array.isArray(data)) return undefined
  const entry = data.find(m => (m as { id?: unknown } | null)?.id === model) as { max_model_len?: unknown } | undefined
  return positive(entry?.max_model_len)
}

/** llama.cpp: GET /props says `n_ctx`, in newer versions under `default_generation_settings`. */
export function windowFromProps (body: unknown): number | undefined {
  const b = body as { n_ctx?: unknown; default_generation_settings?: { n_ctx?: unknown } } | null
  return positive(b?.default_generation_settings?.n_ctx) ?? positive(b?.n_ctx)
}

/** Ollama: POST /api/show {model} says `model_info["<family>.context_length"]`. */
export function windowFromShow (body: unknown): number | undefined {
  const info = (body as { model_info?: unknown } | null)?.model_info
  if (info === null || typeof info !== 'object') return undefined
  for (const [k, v] of Object.entries(info)) if (k.endsWith('.context_length') && positive(v) !== undefined) return v as number
  return undefined
}

export interface ServerWindowOptions {
  /** the OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 */
  baseURL: string
  model: string
  /** sent only to this server (it is the one the key is configured for) */
  apiKey?: string
  /** whether the server is on this machine or network (openai-provider's isLocalBaseURL) */
  local: boolean
  signal?: AbortSignal
  /** per request (default 2000 ms) */
  timeoutMs?: number
  fetch?: typeof fetch
}

/**
 * What the server says the model's window is: /models (vLLM) at any server; /props
 * (llama.cpp) and /api/show (Ollama) at the server's root, only for a local one (a hosted API
 * has neither). Undefined when none says; never rejects but for a cancel.
 */
export async function serverContextWindow (o: ServerWindowOptions): Promise<number | undefined> {
  const doFetch = o.fetch ?? fetch
  const base = o.baseURL.replace(/\/+$/, '')
  const root = base.replace(/\/v1$/, '')
  const ask = async (url: string, init: RequestInit = {}): Promise<unknown> => {
    const signal = AbortSignal.any([AbortSignal.timeout(o.timeoutMs ?? 2000), ...(o.signal !== undefined ? [o.signal] : [])])
    const headers: Record<string, string> = { accept: 'application/json', ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) }
    if (o.apiKey !== undefined) headers.authorization = `Bearer ${o.apiKey}`
    try {
      const res = await doFetch(url, { ...init, headers, signal })
      if (!res.ok) return undefined
      return await res.json() as unknown
    } catch (err) {
      if (o.signal?.aborted === true) throw err
      return undefined // a server that does not answer this is one that does not say
    }
  }
  const fromModels = windowFromModels(await ask(`${base}/models`), o.model)
  if (fromModels !== undefined || !o.local) return fromModels
  return windowFromProps(await ask(`${root}/props`)) ??
    windowFromShow(await ask(`${root}/api/show`, { method: 'POST', body: JSON.stringify({ model: o.model }) }))
}

/** The windows found so far, per provider (and its server) and model. */
export class ContextWindows {
  private readonly cache = new Map<string, Promise<number | undefined>>()
  /** windows servers named when they refused a request: they win over any other source */
  private readonly refused = new Map<string, number>()

  private key (provider: LlmProvider, model: string): string {
    return `${provider.name}\n${(provider as { baseURL?: string }).baseURL ?? ''}\n${model}`
  }

  /** A server refused a request as too long and named its window. */
  learn (provider: LlmProvider, model: string, tokens: number): void {
    const key = this.key(provider, model)
    this.refused.set(key, Math.min(tokens, this.refused.get(key) ?? tokens))
  }

  /** The window for a model of a provider, and where it came from. */
  async resolve (o: { provider: LlmProvider; model: string; explicit?: number | undefined; signal?: AbortSignal }): Promise<{ tokens: number; source: WindowSource }> {
    const key = this.key(o.provider, o.model)
    const refused = this.refused.get(key)
    if (refused !== undefined && (o.explicit === undefined || refused < o.explicit)) return { tokens: refused, source: 'refused' }
    if (o.explicit !== undefined && o.explicit > 0) return { tokens: o.explicit, source: 'explicit' }
    const ask = o.provider.reportedContextWindow
    if (ask !== undefined) {
      let found = this.cache.get(key)
      if (found === undefined) {
        found = ask.call(o.provider, o.model, o.signal ?? new AbortController().signal)
        this.cache.set(key, found)
        // a failed look-up (a cancel) is asked again next time
        found.catch(() => { if (this.cache.get(key) === found) this.cache.delete(key) })
      }
      const tokens = await found
      if (tokens !== undefined) return { tokens, source: 'server' }
    }
    const known = knownWindow(o.model)
    if (known !== undefined) return { tokens: known, source: 'known-model' }
    return { tokens: DEFAULT_CONTEXT_WINDOW, source: 'default' }
  }
}

/** The node's one cache: a window is asked of a server once per process. */
export const contextWindows = new ContextWindows()
