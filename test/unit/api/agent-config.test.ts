import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { createLlm, readNodeSettings, writeNodeSettings } from '../../../src/main/runtime/agent/agent-config'
import { FileSecretStore } from '../../../src/main/secrets/secret-store'
import type { OpenAIProvider } from '../../../src/main/llm/openai-provider'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs('arbor-agent-config-')
afterEach(() => dirs.cleanup())

const keyOf = (p: unknown): string | undefined => (p as { apiKey?: string }).apiKey

describe('agent config: which model a conversation runs with', () => {
  it('says what to set up when nothing names a model', () => {
    expect(() => createLlm({ llm: {}, env: {} })).toThrow(/no model is set up/)
  })

  it('conversation settings win over node settings, which win over the environment', () => {
    const env = { OPENAI_API_KEY: 'sk-env', OPENAI_MODEL: 'env-model' }
    expect(createLlm({ llm: {}, env }).model).toBe('env-model')
    expect(createLlm({ llm: {}, settings: { provider: 'openai', model: 'node-model' }, env }).model).toBe('node-model')
    expect(createLlm({ llm: { model: 'conv-model' }, settings: { provider: 'openai', model: 'node-model' }, env }).model).toBe('conv-model')
    expect(createLlm({ llm: {}, rootModel: 'root-model', settings: { provider: 'openai', model: 'node-model' }, env }).model).toBe('root-model')
    const fake = createLlm({ llm: {}, settings: { provider: 'fake' }, env: {} })
    expect(fake.provider.name).toBe('fake')
    // a conversation on another provider takes nothing of the node's provider settings
    const other = createLlm({ llm: { provider: 'fake' }, settings: { provider: 'openai', model: 'gpt-x', baseURL: 'http://127.0.0.1:1/v1' }, env: {} })
    expect(other.model).toBe('fake')
  })

  it('the stored key goes only to the node\'s own base URL', () => {
    const settings = { provider: 'openai' as const, baseURL: 'http://127.0.0.1:11434/v1' }
    const mine = createLlm({ llm: {}, settings, apiKey: 'sk-stored', env: {} })
    expect((mine.provider as OpenAIProvider).baseURL).toBe('http://127.0.0.1:11434/v1')
    expect(keyOf(mine.provider)).toBe('sk-stored')
    const elsewhere = createLlm({ llm: { provider: 'openai', baseURL: 'http://elsewhere.example/v1' }, settings, apiKey: 'sk-stored', env: {} })
    expect((elsewhere.provider as OpenAIProvider).baseURL).toBe('http://elsewhere.example/v1')
    expect(keyOf(elsewhere.provider)).toBeUndefined()
  })

  it('the key from the environment goes only to OPENAI_BASE_URL (or the default OpenAI URL when that is unset)', () => {
    const env = { OPENAI_API_KEY: 'sk-env', OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1/', OPENAI_ORG_ID: 'org-1' }
    const own = createLlm({ llm: {}, env })
    expect(keyOf(own.provider)).toBe('sk-env')
    expect(keyOf(createLlm({ llm: { baseURL: 'http://127.0.0.1:11434/v1' }, env }).provider)).toBe('sk-env')
    const elsewhere = createLlm({ llm: { provider: 'openai', baseURL: 'http://elsewhere.example/v1' }, env })
    expect((elsewhere.provider as OpenAIProvider).baseURL).toBe('http://elsewhere.example/v1')
    expect(keyOf(elsewhere.provider)).toBeUndefined()
    const settingsElsewhere = createLlm({ llm: {}, settings: { provider: 'openai', baseURL: 'http://elsewhere.example/v1' }, env })
    expect(keyOf(settingsElsewhere.provider)).toBeUndefined()
    // no OPENAI_BASE_URL: the key belongs to the default OpenAI URL
    const bare = { OPENAI_API_KEY: 'sk-env' }
    expect(keyOf(createLlm({ llm: {}, env: bare }).provider)).toBe('sk-env')
    expect(keyOf(createLlm({ llm: { baseURL: 'https://api.openai.com/v1/' }, env: bare }).provider)).toBe('sk-env')
    expect(keyOf(createLlm({ llm: { baseURL: 'http://127.0.0.1:8080/v1' }, env: bare }).provider)).toBeUndefined()
    // the stored key, tied to the settings' base URL, still goes there
    const stored = createLlm({ llm: {}, settings: { provider: 'openai', baseURL: 'http://elsewhere.example/v1/' }, apiKey: 'sk-stored', env })
    expect(keyOf(stored.provider)).toBe('sk-stored')
  })

  it('settings and the key live in the data directory; the key file is private; bad files are named', async () => {
    const dir = await dirs.make()
    const secrets = new FileSecretStore(dir)
    expect(await readNodeSettings(dir)).toEqual({})
    expect(await secrets.get('apiKey')).toBeUndefined()
    await writeNodeSettings(dir, { provider: 'fake', model: 'm' })
    await secrets.set('apiKey', 'sk-1')
    expect(await readNodeSettings(dir)).toEqual({ provider: 'fake', model: 'm' })
    expect(await secrets.get('apiKey')).toBe('sk-1')
    expect(fs.statSync(path.join(dir, 'secrets.json')).mode & 0o777).toBe(0o600)
    expect(secrets.description).toBe(`in ${path.join(dir, 'secrets.json')}, readable only by you`)
    await secrets.set('apiKey', undefined)
    expect(await secrets.get('apiKey')).toBeUndefined()
    fs.writeFileSync(path.join(dir, 'secrets.json'), '{ nope')
    await expect(secrets.get('apiKey')).rejects.toThrow(/secrets\.json is not valid JSON/)
    expect(fs.readdirSync(dir).filter(f => f.endsWith('.tmp'))).toEqual([])
    fs.writeFileSync(path.join(dir, 'settings.json'), '{ nope')
    await expect(readNodeSettings(dir)).rejects.toThrow(/settings\.json is not valid JSON/)
    fs.writeFileSync(path.join(dir, 'settings.json'), '{"provider": "other"}')
    await expect(readNodeSettings(dir)).rejects.toThrow(/settings\.json is not valid/)
  })
})
