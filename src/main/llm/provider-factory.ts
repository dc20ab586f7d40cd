// Settings / CLI flags + environment -> a provider and the model to ask it for.
import type { Logger } from '../../shared/logger'
import { FakeProvider, type FakeScript } from './fake-provider'
import { DEFAULT_OPENAI_MODEL, OpenAIProvider, openAIOptionsFromEnv, type OpenAIProviderOptions } from './openai-provider'
import type { LlmProvider } from './provider'

export const PROVIDER_NAMES = ['openai', 'fake'] as const
export type ProviderName = (typeof PROVIDER_NAMES)[number]

export interface ProviderConfig {
  /** 'openai' (any OpenAI-compatible server) or 'fake' (scripted, offline). A string, as settings and flags give it. */
  provider: ProviderName | (string & {})
  /** Default: OPENAI_MODEL, else gpt-4o-mini (openai); the script's model, else 'fake' (fake). */
  model?: string
  /** openai only. Default: OPENAI_BASE_URL, else https://api.openai.com/v1. */
  baseURL?: string
  /** openai only. Default: OPENAI_API_KEY; not needed for a local server. */
  apiKey?: string
  timeoutMs?: number
  maxRetries?: number
  /** fake only: a script, or the path of a JSON script file. Default: echo the last user message. */
  script?: FakeScript | string
  logger?: Logger
}

export interface CreatedProvider { provider: LlmProvider; model: string }

/**
 * Builds the provider a configuration names. Explicit settings win over the environment
 * (OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL ...), which wins over defaults. Throws an
 * Error naming the valid choices for an unknown provider, and for an unreadable script.
 * A missing API key is not an error here: the provider reports it (LlmError 'auth') on the
 * first call, before any request, so settings can still be fixed in a running app.
 */
export function createProvider (config: ProviderConfig, env: Record<string, string | undefined> = process.env): CreatedProvider {
  const name = String(config.provider ?? '').trim().toLowerCase()
  switch (name) {
    case 'openai': {
      const fromEnv = openAIOptionsFromEnv(env)
      const options: OpenAIProviderOptions = { ...fromEnv }
      if (config.apiKey) options.apiKey = config.apiKey
      if (config.baseURL) options.baseURL = config.baseURL
      if (config.model) options.model = config.model
      if (config.timeoutMs !== undefined) options.timeoutMs = config.timeoutMs
      if (config.maxRetries !== undefined) options.maxRetries = config.maxRetries
      if (config.logger) options.logger = config.logger
      const provider = new OpenAIProvider(options)
      return { provider, model: options.model ?? DEFAULT_OPENAI_MODEL }
    }
    case 'fake': {
      const provider = typeof config.script === 'string' ? FakeProvider.fromFile(config.script) : new FakeProvider(config.script ?? {})
      return { provider, model: config.model || provider.model }
    }
    default:
      throw new Error(`unknown LLM provider "${config.provider}": use "openai" (OpenAI or any OpenAI-compatible server such as Ollama, llama.cpp, vLLM; set the base URL) or "fake" (a scripted model that works offline)`)
  }
}
