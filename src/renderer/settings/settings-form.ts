import type { SettingsDto } from '../../shared/api/api'

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
  /** the model's context window in tokens, as typed ('' : the server's word, a known model's or the default) */
  contextWindow: string
}

export type SettingsField = keyof SettingsForm

export const EMPTY_FORM: SettingsForm = { provider: 'openai', baseURL: '', model: '', apiKey: '', cwd: '', maxSteps: '', contextWindow: '' }

export function choiceOf (s: SettingsDto): ProviderChoice {
  if (s.provider === 'fake') return 'fake'
  return s.baseURL !== undefined ? 'compatible' : 'openai'
}

/** The form as the stored settings fill it (the key field empty: a key is never shown). */
export function formOf (s: SettingsDto): SettingsForm {
  return { provider: choiceOf(s), baseURL: s.baseURL ?? '', model: s.model ?? '', apiKey: '', cwd: s.defaultCwd ?? '', maxSteps: String(s.maxSteps), contextWindow: s.contextWindow !== undefined ? String(s.contextWindow) : '' }
}

/** A count as settings.set takes it: a whole number from 1 to `max`, 0 for unset ('' typed), or an error to show. */
function countOf (typed: string, what: string, max: number, empty: string): number | { error: string } {
  const t = typed.trim()
  if (t === '') return 0
  const n = Number(t)
  return Number.isSafeInteger(n) && n > 0 && n <= max ? n : { error: `${what} must be a whole number from 1 to ${max} (empty for ${empty}).` }
}

/** The step limit as settings.set takes it (0: the default). */
export const maxStepsOf = (typed: string): number | { error: string } => countOf(typed, 'The step limit', 1_000_000, 'the default')

/** A conversation's token budget as agent.configure takes it (0: none). */
export const tokenBudgetOf = (typed: string): number | { error: string } => countOf(typed, 'The token budget', 1e15, 'none')

/** The context window as settings.set takes it (0: what the server says, a known model's, or the default). */
export const contextWindowOf = (typed: string): number | { error: string } => countOf(typed, 'The context window', 100_000_000, 'what the server says')

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
