// Reading a session file of another harness whole, before anything is written: which format,
// what it holds, what was wrong with it. Pure; conversation.import writes what this returns.
import { parseClaudeCode } from './import-claude-code'
import { parsePi } from './import-pi'
import { isRecord } from './import-lines'
import { importTooLarge } from '../../../shared/api/import-limit'
import { planImport, titleFrom, type ImportPlan } from './import-tree'

/** conversation.import's `format`: 'auto' looks at the file's first lines */
export type ImportFormat = 'pi' | 'claude-code' | 'auto'

/** Problems listed one by one; past these, a count. */
const MAX_PROBLEMS_SHOWN = 30

export class ImportError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'ImportError'
  }
}

export interface SessionImport {
  format: 'pi' | 'claude-code'
  title: string
  plan: ImportPlan
  /** the draft to select once written: the last message of the file's last line */
  tip: number
  /** what was skipped or changed, with line numbers (at most MAX_PROBLEMS_SHOWN, then a count) */
  problems: string[]
}

/** Which harness wrote the file, from its first lines that are JSON objects; undefined if neither. */
export function detectFormat (text: string): 'pi' | 'claude-code' | undefined {
  let looked = 0
  for (const raw of text.split('\n', 200)) {
    if (raw.trim() === '') continue
    let e: unknown
    try { e = JSON.parse(raw) } catch { continue }
    if (!isRecord(e)) continue
    if (e.type === 'session' || 'parentId' in e || (e.type === 'message' && isRecord(e.message))) return 'pi'
    if ('parentUuid' in e || 'uuid' in e || e.type === 'summary' || e.type === 'file-history-snapshot') return 'claude-code'
    if (++looked >= 20) break
  }
  return undefined
}

/** Reads the whole file; throws an ImportError saying why when there is nothing to write. */
export function readSession (text: string, format: ImportFormat): SessionImport {
  const large = importTooLarge(text.length)
  if (large !== undefined) throw new ImportError(large)
  const which = format === 'auto' ? detectFormat(text) : format
  if (which === undefined) throw new ImportError('not a Pi or Claude Code session: no line looks like either (give --format to say which)')
  const parsed = which === 'pi' ? parsePi(text) : parseClaudeCode(text)
  const plan = planImport(parsed.nodes)
  if (plan.drafts.length === 0) {
    throw new ImportError(`nothing to import: no messages in this ${which === 'pi' ? 'Pi' : 'Claude Code'} session${parsed.problems.length > 0 ? ` (${parsed.problems.slice(0, 3).join('; ')})` : ''}`)
  }
  const problems = [...parsed.problems, ...plan.problems]
  const shown = problems.length <= MAX_PROBLEMS_SHOWN ? problems : [...problems.slice(0, MAX_PROBLEMS_SHOWN), `and ${problems.length - MAX_PROBLEMS_SHOWN} more`]
  return { format: which, title: parsed.title !== '' ? parsed.title.slice(0, 200) : titleFrom(parsed.nodes), plan, tip: plan.tip, problems: shown }
}
