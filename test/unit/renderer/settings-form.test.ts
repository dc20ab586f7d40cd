import { describe, expect, it } from 'vitest'
import { contextWindowOf, EMPTY_FORM, formOf, maxStepsOf, withLoaded, type SettingsField } from '../../../src/renderer/settings/settings-form'
import type { SettingsDto } from '../../../src/shared/api/api'

const stored: SettingsDto = { provider: 'openai', baseURL: 'http://127.0.0.1:11434/v1', model: 'llama3', apiKeySet: true, apiKeyStorage: 'in a private file', defaultCwd: '/home/me', maxSteps: 50 }

describe('the Settings form and a late load (settings-form.ts)', () => {
  it('fills every field from the stored settings, the key never', () => {
    expect(formOf(stored)).toEqual({ provider: 'compatible', baseURL: 'http://127.0.0.1:11434/v1', model: 'llama3', apiKey: '', cwd: '/home/me', maxSteps: '50', contextWindow: '' })
    expect(formOf({ ...stored, contextWindow: 32768 }).contextWindow).toBe('32768')
    expect(formOf({ provider: 'fake', apiKeySet: false, apiKeyStorage: '', maxSteps: 50 }).provider).toBe('fake')
    expect(formOf({ provider: 'openai', apiKeySet: false, apiKeyStorage: '', maxSteps: 50 }).provider).toBe('openai')
  })

  it('the step limit: a positive whole number, empty for the default, anything else refused with words', () => {
    expect([' 12 ', ''].map(maxStepsOf)).toEqual([12, 0])
    for (const bad of ['0', '-3', '2.5', 'many', '1e9']) expect(maxStepsOf(bad)).toMatchObject({ error: expect.stringMatching(/whole number/) as unknown })
  })

  it('the context window: a positive whole number of tokens, empty for what the server says', () => {
    expect([' 32768 ', ''].map(contextWindowOf)).toEqual([32768, 0])
    for (const bad of ['0', '-1', '4096.5', 'big', '1e9']) expect(contextWindowOf(bad)).toMatchObject({ error: expect.stringMatching(/context window must be a whole number/) as unknown })
  })

  it('keeps what the user touched before the load arrived and fills the rest', () => {
    const typed = { ...EMPTY_FORM, provider: 'fake' as const, apiKey: 'sk-new' }
    expect(withLoaded(typed, new Set<SettingsField>(['provider', 'apiKey']), stored)).toEqual({ provider: 'fake', baseURL: 'http://127.0.0.1:11434/v1', model: 'llama3', apiKey: 'sk-new', cwd: '/home/me', maxSteps: '50', contextWindow: '' })
    expect(withLoaded(typed, new Set<SettingsField>(), stored)).toEqual(formOf(stored))
    // a field cleared on purpose stays cleared
    expect(withLoaded({ ...EMPTY_FORM, model: '' }, new Set<SettingsField>(['model']), stored).model).toBe('')
  })
})
