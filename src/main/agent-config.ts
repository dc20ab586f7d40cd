// What a conversation's agent runs with: node settings + the conversation's own settings
// (its `llm` and `sandbox` meta entries) + the environment -> an AgentConfig. Used by
// `arbor chat` and by the node's long-lived agent host (the API).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { z } from 'zod'
import type { ConversationDag } from '../shared/conversation-dag'
import type { HistoryStore } from './history/history-store'
import { createProvider, type CreatedProvider } from './llm/provider-factory'
import type { AgentConfig } from './runtime/agent/agent-host'
import { systemPrompt } from './runtime/agent/system-prompt'
import { defaultHiddenPaths } from './tools/sandbox/hidden-paths'
import { sandboxProbe } from './tools/sandbox/sandbox-probe'
import { defaultTools } from './tools/tool-registry'
import { readJsonFile, writeFileAtomic } from './json-file'

/** An error meant for the user (no model set up, unreadable settings). */
export class AgentConfigError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'AgentConfigError'
  }
}

/** This device's settings (`<data>/settings.json`); the API key is kept apart, in a SecretStore (secret-store.ts). */
export const NodeSettingsSchema = z.object({
  provider: z.enum(['openai', 'fake']).optional(),
  baseURL: z.string().optional(),
  model: z.string().optional(),
  defaultCwd: z.string().optional(),
  /** the fake provider's script (a JSON file): a scripted, offline model for demos and tests */
  script: z.string().optional()
})
export type NodeSettings = z.infer<typeof NodeSettingsSchema>

/** Which model a conversation uses, kept in its history as the `llm` setting (never the API key). */
export interface LlmSetting { provider?: string; model?: string; baseURL?: string; script?: string }

export const NO_MODEL_MESSAGE = 'no model is set up: set OPENAI_API_KEY (and OPENAI_BASE_URL for a local server such as Ollama, e.g. http://127.0.0.1:11434/v1), or pass --provider openai --base-url URL, or try the offline scripted model with --provider fake'

const settingsFile = (dataDir: string): string => path.join(dataDir, 'settings.json')

/** The node's settings; {} when none were saved. */
export async function readNodeSettings (dataDir: string): Promise<NodeSettings> {
  const json = await readJsonFile(settingsFile(dataDir), m => new AgentConfigError(m))
  if (json === undefined) return {}
  const parsed = NodeSettingsSchema.safeParse(json)
  if (!parsed.success) throw new AgentConfigError(`${settingsFile(dataDir)} is not valid: ${z.prettifyError(parsed.error)}; fix or delete it`)
  return parsed.data
}

export async function writeNodeSettings (dataDir: string, settings: NodeSettings): Promise<void> {
  await writeFileAtomic(settingsFile(dataDir), JSON.stringify(settings, null, 2) + '\n', 0o644)
}

/** The conversation's saved model settings (its `llm` meta entry). */
export function conversationLlm (dag: ConversationDag): LlmSetting {
  const v = dag.meta('llm')?.value
  return v !== null && typeof v === 'object' ? v as LlmSetting : {}
}

/**
 * The provider and model for a conversation. The conversation's `llm` setting wins; the
 * node's settings fill in what it leaves open, as long as it names no other provider; then
 * the environment (OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL). The stored API key goes
 * only to the base URL of the node's settings, never to one a conversation names.
 * Throws AgentConfigError when no model is set up at all.
 */
export function createLlm (o: { llm: LlmSetting; settings?: NodeSettings; apiKey?: string; rootModel?: string; env: NodeJS.ProcessEnv }): CreatedProvider {
  const s = o.settings ?? {}
  const name = o.llm.provider ?? s.provider ?? (o.env.OPENAI_API_KEY !== undefined || o.env.OPENAI_BASE_URL !== undefined ? 'openai' : undefined)
  if (name === undefined) throw new AgentConfigError(NO_MODEL_MESSAGE)
  const node = s.provider === undefined || s.provider === name ? s : {}
  const model = o.llm.model ?? o.rootModel ?? node.model
  const baseURL = o.llm.baseURL ?? node.baseURL
  const keyFits = o.apiKey !== undefined && (o.llm.baseURL === undefined || o.llm.baseURL === s.baseURL) && (s.provider === undefined || s.provider === name)
  try {
    return createProvider({
      provider: name,
      ...(model !== undefined && model !== '' ? { model } : {}),
      ...(baseURL !== undefined && baseURL !== '' ? { baseURL } : {}),
      ...(keyFits ? { apiKey: o.apiKey } : {}),
      ...((o.llm.script ?? node.script) !== undefined ? { script: o.llm.script ?? node.script } : {})
    }, o.env)
  } catch (err) {
    throw new AgentConfigError((err as Error).message)
  }
}

/** Where a conversation's agent works when it was not given a directory. */
export function defaultWorkspace (conversation: string, env: NodeJS.ProcessEnv): string {
  const base = env.ARBOR_WORKSPACES ?? path.join(env.HOME ?? os.homedir(), 'Arbor', 'workspaces')
  return path.join(base, conversation.slice(0, 12))
}

export interface ResolvedAgentConfig {
  config: AgentConfig
  cwd: string
  sandboxed: boolean
  /** what the bash tool will say on its first call, said up front (sandbox unavailable, old bwrap) */
  warnings: string[]
}

export interface AgentConfigOptions {
  store: HistoryStore
  dag: ConversationDag
  dataDir: string
  env: NodeJS.ProcessEnv
  settings?: NodeSettings
  apiKey?: string
  /** already made (e.g. checked before anything was written); default: createLlm */
  llm?: CreatedProvider
  /** the working directory for this run (default: the conversation's, else a workspace of its own) */
  cwd?: string
}

/**
 * The whole AgentConfig of a conversation: provider and model, tools, sandbox policy
 * (on unless the conversation's `sandbox` setting is false), system prompt and working
 * directory (created if missing).
 */
export async function resolveAgentConfig (o: AgentConfigOptions): Promise<ResolvedAgentConfig> {
  const root = o.dag.root
  if (root === undefined || root.kind !== 'conversation') throw new AgentConfigError(`the start of conversation ${o.dag.conversation.slice(0, 12)} has not arrived on this device yet`)
  const { provider, model } = o.llm ?? createLlm({
    llm: conversationLlm(o.dag),
    ...(o.settings !== undefined ? { settings: o.settings } : {}),
    ...(o.apiKey !== undefined ? { apiKey: o.apiKey } : {}),
    ...(root.body.model !== undefined ? { rootModel: root.body.model } : {}),
    env: o.env
  })
  const cwd = o.cwd ?? root.body.cwd ?? defaultWorkspace(o.dag.conversation, o.env)
  fs.mkdirSync(cwd, { recursive: true })
  const sandboxed = o.dag.meta('sandbox')?.value !== false
  const warnings: string[] = []
  if (sandboxed) {
    const probe = await sandboxProbe()
    if (!probe.ok) warnings.push(`the bash tool cannot run here: ${probe.message}`)
    else warnings.push(...probe.warnings)
  }
  const home = o.env.HOME ?? os.homedir()
  return {
    config: {
      provider,
      model,
      tools: new Map(defaultTools({ dataDir: o.dataDir }).map(t => [t.name, t])),
      sandbox: { enabled: sandboxed, cwd, hidden: defaultHiddenPaths(home, o.dataDir) },
      system: systemPrompt({ cwd, device: o.store.device, sandboxed })
    },
    cwd,
    sandboxed,
    warnings
  }
}
