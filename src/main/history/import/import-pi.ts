// A Pi session file (pi-mono, packages/coding-agent: ~/.pi/agent/sessions/…/<ts>_<uuid>.jsonl) as
// import nodes: a `session` header line, then entries with id/parentId (version 2 and later;
// version 1 files are one chain without ids). Pure.
import type { ImportItem, ImportNode, ParsedSession } from './import-tree'
import { contentText, isRecord, jsonLines, nonEmpty, str } from './import-lines'

/** Entry types that carry nothing Arbor keeps: they stay in the tree, their children hang from their parent. */
const SILENT = new Set(['model_change', 'thinking_level_change', 'label', 'custom', 'session_info', 'context_transform', 'ephemeral'])

export function parsePi (text: string): ParsedSession {
  const problems: string[] = []
  const nodes: ImportNode[] = []
  let title = ''
  let previous: string | null = null
  const unknownTypes = new Map<string, number>()
  for (const { line, value: e } of jsonLines(text, problems)) {
    if (e.type === 'session') continue
    const type = str(e.type)
    if (type === undefined) { problems.push(`line ${line}: no "type"; skipped`); continue }
    // version 1: no ids, each entry follows the one before
    const id = str(e.id) ?? `#line${line}`
    const parent = e.parentId === null ? null : str(e.parentId) ?? (e.id === undefined ? previous : null)
    if (e.id !== undefined && typeof e.id !== 'string') { problems.push(`line ${line}: its "id" is not a string; skipped`); continue }
    if (type === 'session_info' && typeof e.name === 'string' && e.name.trim() !== '') title = e.name.trim()
    let items: ImportItem[]
    if (type === 'message') items = messageItems(e.message, line, problems)
    else if (type === 'compaction') items = [{ kind: 'note', text: `Pi compacted the conversation here (${numberOr(e.tokensBefore)} tokens before). Its summary:\n\n${str(e.summary) ?? ''}` }]
    else if (type === 'branch_summary') items = [{ kind: 'note', text: `Summary of the branch left here in Pi:\n\n${str(e.summary) ?? ''}` }]
    else if (type === 'custom_message') items = textNote(contentText(e.content))
    else {
      if (!SILENT.has(type)) unknownTypes.set(type, (unknownTypes.get(type) ?? 0) + 1)
      items = []
    }
    nodes.push({ id, parent, line, items })
    previous = id
  }
  for (const [type, n] of unknownTypes) problems.push(`${n} entr${n === 1 ? 'y' : 'ies'} of type "${type}" carried nothing to import`)
  return { nodes, title, problems }
}

function numberOr (x: unknown): string {
  return typeof x === 'number' && Number.isFinite(x) ? String(x) : 'an unknown number of'
}

function textNote (text: string): ImportItem[] {
  return text.trim() === '' ? [] : [{ kind: 'note', text }]
}

function messageItems (m: unknown, line: number, problems: string[]): ImportItem[] {
  if (!isRecord(m)) { problems.push(`line ${line}: a message entry without a message; kept as an empty step`); return [] }
  switch (m.role) {
    case 'user': return [{ kind: 'user', text: contentText(m.content) }]
    case 'assistant': {
      const texts: string[] = []
      const thinking: string[] = []
      const toolCalls: Array<{ id: string; name: string; args: unknown }> = []
      for (const b of Array.isArray(m.content) ? m.content as unknown[] : [m.content]) {
        if (typeof b === 'string') texts.push(b)
        else if (!isRecord(b)) continue
        else if (b.type === 'text' && typeof b.text === 'string') texts.push(b.text)
        else if (b.type === 'thinking' && typeof b.thinking === 'string') thinking.push(b.thinking)
        else if (b.type === 'toolCall') toolCalls.push({ id: nonEmpty(b.id, `line${line}-call${toolCalls.length}`), name: nonEmpty(b.name, 'unknown'), args: b.arguments ?? {} })
      }
      const err = str(m.errorMessage)
      if (err !== undefined) texts.push(`[error: ${err}]`)
      const model = str(m.model)
      return [{ kind: 'assistant', text: texts.join('\n'), ...(thinking.length > 0 ? { reasoning: thinking.join('\n') } : {}), ...(model !== undefined ? { model } : {}), ...(toolCalls.length > 0 ? { toolCalls } : {}) }]
    }
    case 'toolResult':
      return [{ kind: 'tool.result', callId: nonEmpty(m.toolCallId, `line${line}`), status: m.isError === true ? 'error' : 'ok', output: contentText(m.content) }]
    case 'bashExecution':
      return [{ kind: 'note', text: `The user ran \`${str(m.command) ?? ''}\` in Pi${typeof m.exitCode === 'number' ? ` (exit ${m.exitCode})` : ''}:\n\n${str(m.output) ?? ''}` }]
    case 'branchSummary': return textNote(`Summary of the branch left here in Pi:\n\n${str(m.summary) ?? ''}`)
    case 'compactionSummary': return textNote(`Pi's summary of the conversation before this point:\n\n${str(m.summary) ?? ''}`)
    case 'custom': case 'hookMessage': return textNote(contentText(m.content))
    default:
      problems.push(`line ${line}: a message of role ${JSON.stringify(m.role)} is not known; kept as an empty step`)
      return []
  }
}
