// settings.get/set/detect: this node's model settings (the key kept apart, never returned).
import path from 'node:path'
import type { SettingsDto } from '../../../shared/api/api'
import type { ApiParamsOut } from '../../../shared/api/api-params'
import { readNodeSettings, writeNodeSettings, type NodeSettings } from '../../runtime/agent/agent-config'
import { DEFAULT_MAX_STEPS } from '../../runtime/agent/turn-limits'
import { detectLocalServers, type LocalServer } from '../../llm/local-servers'
import type { ArborNode } from '../../node'
import type { HandlerContext, HandlersOf } from './handler-context'

type SettingsMethod = 'settings.get' | 'settings.set' | 'settings.detect'

export function settingsHandlers (c: HandlerContext, detect: () => Promise<LocalServer[]> = detectLocalServers): HandlersOf<SettingsMethod> {
  return {
    'settings.get': async () => settings(c.node),
    'settings.set': async p => setSettings(c.node, p),
    'settings.detect': async () => detect()
  }
}

async function settings (node: ArborNode): Promise<SettingsDto> {
  const [s, key] = await Promise.all([readNodeSettings(node.dataDir), node.secrets.get('apiKey')])
  return {
    provider: s.provider ?? 'openai',
    ...(s.baseURL !== undefined ? { baseURL: s.baseURL } : {}),
    ...(s.model !== undefined ? { model: s.model } : {}),
    apiKeySet: key !== undefined,
    apiKeyStorage: node.secrets.description,
    ...(s.defaultCwd !== undefined ? { defaultCwd: s.defaultCwd } : {}),
    ...(s.contextWindow !== undefined ? { contextWindow: s.contextWindow } : {}),
    maxSteps: s.maxSteps ?? DEFAULT_MAX_STEPS
  }
}

async function setSettings (node: ArborNode, p: ApiParamsOut<'settings.set'>): Promise<SettingsDto> {
  const dir = node.dataDir
  const next: NodeSettings = { ...await readNodeSettings(dir) }
  if (p.provider !== undefined) next.provider = p.provider
  for (const k of ['baseURL', 'model', 'defaultCwd'] as const) {
    const v = p[k]
    if (v === '') delete next[k]
    else if (v !== undefined) next[k] = k === 'defaultCwd' ? path.resolve(v) : v
  }
  if (p.contextWindow === 0) delete next.contextWindow
  else if (p.contextWindow !== undefined) next.contextWindow = p.contextWindow
  if (p.maxSteps === 0) delete next.maxSteps
  else if (p.maxSteps !== undefined) next.maxSteps = p.maxSteps
  await writeNodeSettings(dir, next)
  if (p.apiKey !== undefined) await node.secrets.set('apiKey', p.apiKey)
  return settings(node)
}
