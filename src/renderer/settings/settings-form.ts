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
  /** model steps per turn, as typed ('' : the default) */
  maxSteps: string
}

export type SettingsField = keyof SettingsForm

export const EMPTY_FORM: SettingsForm = { provider: 'openai', baseURL: '', model: '', apiKey: '', cwd: '', maxSteps: '' }

export function choiceOf (s: SettingsDto): ProviderChoice {
  if (s.provider === 'fake') return 'fake'
  return s.baseURL !== undefined ? 'compatible' : 'openai'
}

/** The form as the stored settings fill it (the key field empty: a key is never shown). */
export function formOf (s: SettingsDto): SettingsForm {
  return { provider: choiceOf(s), baseURL: s.baseURL ?? '', model: s.model ?? '', apiKey: '', cwd: s.defaultCwd ?? '', maxSteps: String(s.maxSteps) }
}

/** The step limit as settings.set takes it: a positive whole number, 0 for the default ('' typed), or an error to show. */
export function maxStepsOf (typed: string): number | { error: string } {
  const t = typed.trim()
  if (t === '') return 0
  const n = Number(t)
  return Number.isSafeInteger(n) && n > 0 && n <= 1_000_000 ? n : { error: 'The step limit must be a whole number from 1 to 1000000 (empty for the default).' }
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
