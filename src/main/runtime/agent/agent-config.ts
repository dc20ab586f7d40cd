// What a conversation's agent runs with: node settings + the conversation's own settings
// (its `llm` and `sandbox` meta entries, its root's directory and model — only those this
// device wrote) + the environment -> an AgentConfig. Used by `arbor chat` and by the node's
// long-lived agent host (the API).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { z } from 'zod'
import type { ConversationDag } from '../../../shared/conversation/conversation-dag'
import type { HistoryStore } from '../../history/history-store'
import { createProvider, sameBaseURL, type CreatedProvider } from '../../llm/provider-factory'
import { contextWindows } from '../../llm/context-window'
import type { AgentConfig } from './agent-host'
import { systemPrompt } from './system-prompt'
import { loadInstructions } from './project-instructions'
import { defaultHiddenPaths } from '../../tools/sandbox/hidden-paths'
import { allHidden } from '../../tools/sandbox/bwrap-args'
import { sandboxProbe } from '../../tools/sandbox/sandbox-probe'
import { defaultTools } from '../../tools/tool-registry'
import { readJsonFile, writeStateFile } from '../../disk/state-file'
import { DEFAULT_MAX_STEPS, type TurnLimits } from './turn-limits'

/** An error meant for the user (no model set up, unreadable settings). */
export class AgentConfigError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'AgentConfigError'
  }
}

/** This device's settings (`<data>/settings.json`); the API key is kept apart, in a SecretStore (src/main/secrets/secret-store.ts). */
export const NodeSettingsSchema = z.object({
  provider: z.enum(['openai', 'fake']).optional(),
  baseURL: z.string().optional(),
  model: z.string().optional(),
  defaultCwd: z.string().optional(),
  /** the fake provider's script (a JSON file): a scripted, offline model for demos and tests */
  script: z.string().optional(),
  /** the model's context window in tokens, when the server does not say (llm/context-window.ts) */
  contextWindow: z.number().int().positive().optional(),
  /** model steps per turn before the agent stops and asks to go on (turn-limits.ts; default DEFAULT_MAX_STEPS) */
  maxSteps: z.number().int().positive().optional()
})
export type NodeSettings = z.infer<typeof NodeSettingsSchema>

/** Which model a conversation uses, kept in its history as the `llm` setting (never the API key). */
export interface LlmSetting { provider?: string; model?: string; baseURL?: string; script?: string; contextWindow?: number }

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
  await writeStateFile(settingsFile(dataDir), JSON.stringify(settings, null, 2) + '\n', { mode: 0o644 })
}

/**
 * What a conversation asks of this device, honoured only where this device wrote it
 * (DESIGN.md, "Trust": an entry from a peer is data, never an instruction). The sandbox
 * switch, the model server and the working directory are security-relevant: a peer that
 * writes them into a shared conversation must not weaken the sandbox, pick the directory,
 * or redirect the model traffic (and the API key) of another device.
 */
export interface ConversationSettings {
  /** the last `llm` setting this device wrote (provider, model, base URL, fake script) */
  llm: LlmSetting
  /** the working directory this device gave it (ConversationDag.cwdOf); the root's model, if this device wrote the root */
  cwd?: string
  model?: string
  /** false only if this device's last `sandbox` setting turned it off */
  sandbox: boolean
  /** this device's `limits` setting (`arbor chat --max-steps/--token-budget`): what it sets */
  limits: LimitsSetting
}

/** A conversation's own limits, kept in its history as this device's `limits` setting. */
export interface LimitsSetting { maxSteps?: number; tokenBudget?: number }

export function conversationSettings (dag: ConversationDag, device: string): ConversationSettings {
  const root = dag.rootBy(device)
  const out: ConversationSettings = { llm: llmSetting(dag.metaOf('llm', device)?.value), sandbox: dag.metaOf('sandbox', device)?.value !== false, limits: limitsSetting(dag.metaOf('limits', device)?.value) }
  const cwd = dag.cwdOf(device)
  if (cwd !== undefined) out.cwd = cwd
  if (root?.body.model !== undefined) out.model = root.body.model
  return out
}

/** Where this device's agent of a conversation works: the directory this device gave it, else a workspace of its own. */
export function conversationCwd (dag: ConversationDag, device: string, env: NodeJS.ProcessEnv): string {
  return conversationSettings(dag, device).cwd ?? defaultWorkspace(dag.conversation, env)
}

/** The string fields of a saved `llm` value (anything else in it is ignored). */
function llmSetting (v: unknown): LlmSetting {
  const out: LlmSetting = {}
  if (v === null || typeof v !== 'object') return out
  for (const k of ['provider', 'model', 'baseURL', 'script'] as const) {
    const x = (v as Record<string, unknown>)[k]
    if (typeof x === 'string') out[k] = x
  }
  const w = (v as Record<string, unknown>).contextWindow
  if (typeof w === 'number' && Number.isSafeInteger(w) && w > 0) out.contextWindow = w
  return out
}

/** The positive whole numbers of a saved `limits` value (anything else in it is ignored). */
function limitsSetting (v: unknown): LimitsSetting {
  const out: LimitsSetting = {}
  if (v === null || typeof v !== 'object') return out
  for (const k of ['maxSteps', 'tokenBudget'] as const) {
    const x = (v as Record<string, unknown>)[k]
    if (typeof x === 'number' && Number.isSafeInteger(x) && x > 0) out[k] = x
  }
  return out
}

/** The limits a conversation's agent runs under: its own (this device's setting), else the node's, else the default steps and no budget. */
export function turnLimits (own: LimitsSetting, settings: NodeSettings | undefined): TurnLimits {
  const out: TurnLimits = { maxSteps: own.maxSteps ?? settings?.maxSteps ?? DEFAULT_MAX_STEPS }
  if (own.tokenBudget !== undefined) out.tokenBudget = own.tokenBudget
  return out
}

/**
 * The provider and model for a conversation. The conversation's `llm` setting (this
 * device's: conversationSettings) wins; the node's settings fill in what it leaves open, as
 * long as it names no other provider; then the environment (OPENAI_API_KEY, OPENAI_BASE_URL,
 * OPENAI_MODEL). Each API key goes only to the base URL configured with it on this device:
 * the stored key to the settings' base URL, OPENAI_API_KEY to OPENAI_BASE_URL (createProvider).
 * Throws AgentConfigError when no model is set up at all.
 */
export function createLlm (o: { llm: LlmSetting; settings?: NodeSettings; apiKey?: string; rootModel?: string; env: NodeJS.ProcessEnv }): CreatedProvider {
  const s = o.settings ?? {}
  const name = o.llm.provider ?? s.provider ?? (o.env.OPENAI_API_KEY !== undefined || o.env.OPENAI_BASE_URL !== undefined ? 'openai' : undefined)
  if (name === undefined) throw new AgentConfigError(NO_MODEL_MESSAGE)
  const node = s.provider === undefined || s.provider === name ? s : {}
  const model = o.llm.model ?? o.rootModel ?? node.model
  const baseURL = o.llm.baseURL ?? node.baseURL
  const keyFits = o.apiKey !== undefined && node === s && sameBaseURL(baseURL, s.baseURL)
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
  /** another model of the same provider for this run only (a retry's); the window is that model's */
  model?: string
}

/**
 * The whole AgentConfig of a conversation: provider and model, tools, sandbox policy
 * (on unless this device turned it off for the conversation), system prompt and working
 * directory (created if missing) — from conversationSettings: what this device wrote.
 */
export async function resolveAgentConfig (o: AgentConfigOptions): Promise<ResolvedAgentConfig> {
  const root = o.dag.root
  if (root === undefined || root.kind !== 'conversation') throw new AgentConfigError(`the start of conversation ${o.dag.conversation.slice(0, 12)} has not arrived on this device yet`)
  const own = conversationSettings(o.dag, o.store.device)
  const made = o.llm ?? createLlm({
    llm: o.model !== undefined ? { ...own.llm, model: o.model } : own.llm,
    ...(o.settings !== undefined ? { settings: o.settings } : {}),
    ...(o.apiKey !== undefined ? { apiKey: o.apiKey } : {}),
    ...(own.model !== undefined ? { rootModel: own.model } : {}),
    env: o.env
  })
  const cwd = o.cwd ?? own.cwd ?? defaultWorkspace(o.dag.conversation, o.env)
  fs.mkdirSync(cwd, { recursive: true })
  const sandboxed = own.sandbox
  const { provider, model } = made
  const warnings: string[] = made.warning !== undefined ? [made.warning] : []
  if (sandboxed) {
    const probe = await sandboxProbe()
    if (!probe.ok) warnings.push(`the bash tool cannot run here: ${probe.message}`)
    else warnings.push(...probe.warnings)
  }
  const home = o.env.HOME ?? os.homedir()
  const sandbox = { enabled: sandboxed, cwd, hidden: defaultHiddenPaths(home, o.dataDir) }
  // read as the sandbox would: nothing it hides (every data directory on this machine included)
  const instructions = await loadInstructions({ cwd, dataDir: o.dataDir, hidden: allHidden(sandbox, home, o.dataDir) })
  for (const why of instructions.skipped) warnings.push(`project instructions: ${why}`)
  const system = systemPrompt({ cwd, device: o.store.device, sandboxed })
  // The conversation's own window, else the settings' (for the provider they name), else what the server or the table says.
  const explicit = own.llm.contextWindow ?? (o.settings?.provider === undefined || o.settings.provider === provider.name ? o.settings?.contextWindow : undefined)
  return {
    config: {
      provider,
      model,
      contextWindow: {
        get: async () => (await contextWindows.resolve({ provider, model, explicit })).tokens,
        resolve: async () => await contextWindows.resolve({ provider, model, explicit }),
        learn: tokens => { contextWindows.learn(provider, model, tokens) }
      },
      tools: new Map(defaultTools({ dataDir: o.dataDir }).map(t => [t.name, t])),
      sandbox,
      system: instructions.text === '' ? system : `${system}\n\n${instructions.text}`,
      ...(instructions.files.length > 0 ? { instructions: instructions.files } : {}),
      limits: turnLimits(own.limits, o.settings)
    },
    cwd,
    sandboxed,
    warnings
  }
}
