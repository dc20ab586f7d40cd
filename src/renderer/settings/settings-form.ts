import type { SettingsDto } from '../../shared/api'

// The Settings screen's form, apart from React: what the stored settings fill in, and how a
// load that arrives after the user began typing leaves the user's fields alone. Pure.

export type ProviderChoice = 'openai' | 'compatible' | 'fake'

export interface SettingsForm {
  provider: ProviderChoice
  baseURL: string
  model: string
  /** a new key to store; '' keeps the stored one */
  apiKey: string
  cwd: string
}

export type SettingsField = keyof SettingsForm

export const EMPTY_FORM: SettingsForm = { provider: 'openai', baseURL: '', model: '', apiKey: '', cwd: '' }

export function choiceOf (s: SettingsDto): ProviderChoice {
  if (s.provider === 'fake') return 'fake'
  return s.baseURL !== undefined ? 'compatible' : 'openai'
}

/** The form as the stored settings fill it (the key field empty: a key is never shown). */
export function formOf (s: SettingsDto): SettingsForm {
  return { provider: choiceOf(s), baseURL: s.baseURL ?? '', model: s.model ?? '', apiKey: '', cwd: s.defaultCwd ?? '' }
}

/**
 * The form once the stored settings have loaded: every field the user has not touched takes the
 * stored value; a touched one keeps what the user chose (the load was only late, not newer).
 */
export function withLoaded (form: SettingsForm, touched: ReadonlySet<SettingsField>, loaded: SettingsDto): SettingsForm {
  const stored = formOf(loaded)
  const out = { ...stored }
  for (const f of touched) (out as Record<SettingsField, string>)[f] = form[f]
  return out
}
