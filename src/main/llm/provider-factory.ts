// Settings / CLI flags + environment -> a provider and the model to ask it for.
import type { Logger } from '../../shared/logger'
import { FakeProvider, type FakeScript } from './fake-provider'
import { DEFAULT_OPENAI_BASE_URL, DEFAULT_OPENAI_MODEL, OpenAIProvider, openAIOptionsFromEnv, type OpenAIProviderOptions } from './openai-provider'
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
  /**
   * openai only: a key to send to this config's base URL (the caller tied them together).
   * Default: OPENAI_API_KEY, but only when the base URL is the one configured with it
   * (OPENAI_BASE_URL, else https://api.openai.com/v1). Not needed for a local server.
   */
  apiKey?: string
  timeoutMs?: number
  maxRetries?: number
  /** fake only: a script, or the path of a JSON script file. Default: echo the last user message. */
  script?: FakeScript | string
  logger?: Logger
}

export interface CreatedProvider {
  provider: LlmProvider
  model: string
  /** something the user should know before the first call (a key from the environment held back) */
  warning?: string
}

/**
 * Whether two base URLs name the same server endpoint (as OpenAIProvider uses them: trailing
 * slashes dropped); undefined and '' both mean "the default".
 */
export function sameBaseURL (a: string | undefined, b: string | undefined): boolean {
  const norm = (u: string | undefined): string => (u ?? '').trim().replace(/\/+$/, '')
  return norm(a) === norm(b)
}

/**
 * Builds the provider a configuration names. Explicit settings win over the environment
 * (OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL ...), which wins over defaults. The
 * environment's key (and organization, project) go only to the environment's base URL: a
 * config naming another server gets them not (DESIGN.md, "Trust": the key goes only where
 * this device configured it to). Throws an Error naming the valid choices for an unknown
 * provider, and for an unreadable script. A missing API key is not an error here: the
 * provider reports it (LlmError 'auth') on the first call, before any request, so settings
 * can still be fixed in a running app.
 */
export function createProvider (config: ProviderConfig, env: Record<string, string | undefined> = process.env): CreatedProvider {
  const name = String(config.provider ?? '').trim().toLowerCase()
  switch (name) {
    case 'openai': {
      const { apiKey: envKey, organization, project, baseURL: envBase, ...fromEnv } = openAIOptionsFromEnv(env)
      const options: OpenAIProviderOptions = { ...fromEnv }
      const baseURL = config.baseURL || envBase
      if (baseURL !== undefined) options.baseURL = baseURL
      let warning: string | undefined
      if (config.apiKey) options.apiKey = config.apiKey
      else if (sameBaseURL(baseURL ?? DEFAULT_OPENAI_BASE_URL, envBase ?? DEFAULT_OPENAI_BASE_URL)) {
        if (envKey !== undefined) options.apiKey = envKey
        if (organization !== undefined) options.organization = organization
        if (project !== undefined) options.project = project
      } else if (envKey !== undefined) {
        warning = `OPENAI_API_KEY is sent only to ${envBase ?? `${DEFAULT_OPENAI_BASE_URL} (OPENAI_BASE_URL is not set)`}, so ${baseURL ?? DEFAULT_OPENAI_BASE_URL} gets no key; set OPENAI_BASE_URL to that server to use the key there`
      }
      if (config.model) options.model = config.model
      if (config.timeoutMs !== undefined) options.timeoutMs = config.timeoutMs
      if (config.maxRetries !== undefined) options.maxRetries = config.maxRetries
      if (config.logger) options.logger = config.logger
      const provider = new OpenAIProvider(options)
      return { provider, model: options.model ?? DEFAULT_OPENAI_MODEL, ...(warning !== undefined ? { warning } : {}) }
    }
    case 'fake': {
      const provider = typeof config.script === 'string' ? FakeProvider.fromFile(config.script) : new FakeProvider(config.script ?? {})
      return { provider, model: config.model || provider.model }
    }
    default:
      throw new Error(`unknown LLM provider "${config.provider}": use "openai" (OpenAI or any OpenAI-compatible server such as Ollama, llama.cpp, vLLM; set the base URL) or "fake" (a scripted model that works offline)`)
  }
}
