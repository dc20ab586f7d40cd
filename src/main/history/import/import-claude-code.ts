// A Claude Code session file (~/.claude/projects/<project>/<session>.jsonl) as import nodes:
// lines of type user/assistant/system with uuid/parentUuid, `summary` lines naming the session,
// and bookkeeping lines (file-history-snapshot …) that are not part of the conversation. Pure.
import type { ImportItem, ImportNode, ParsedSession } from './import-tree'
import { contentText, isRecord, jsonLines, nonEmpty, str } from './import-lines'

export function parseClaudeCode (text: string): ParsedSession {
  const problems: string[] = []
  const nodes: ImportNode[] = []
  const byId = new Map<string, { node: ImportNode; messageId?: string }>()
  // a uuid merged into its parent's node (one assistant reply split over lines) → that node's id
  const alias = new Map<string, string>()
  let title = ''
  let sidechain = 0
  let other = 0
  for (const { line, value: e } of jsonLines(text, problems)) {
    const type = str(e.type)
    if (type === 'summary') { const s = str(e.summary)?.trim(); if (s !== undefined && s !== '') title = s; continue }
    if (type !== 'user' && type !== 'assistant' && type !== 'system') { other++; continue }
    const id = str(e.uuid)
    if (id === undefined || id === '') { problems.push(`line ${line}: a ${type} line without a "uuid"; skipped`); continue }
    // subagents' own conversations (Task tool): the main one holds their outcome as a tool result
    if (e.isSidechain === true) { sidechain++; continue }
    let parent = e.parentUuid === null || e.parentUuid === undefined ? null : str(e.parentUuid) ?? null
    // a compaction boundary starts a new chain but names what it follows
    if (parent === null && typeof e.logicalParentUuid === 'string') parent = e.logicalParentUuid
    if (parent !== null) parent = alias.get(parent) ?? parent
    const message = isRecord(e.message) ? e.message : undefined
    if (type === 'assistant') {
      const item = assistantItem(message, line)
      const messageId = str(message?.id)
      const above = parent === null ? undefined : byId.get(parent)
      const last = above?.node.items.at(-1)
      // Claude Code writes each content block of one reply as its own line: one reply, one entry
      if (messageId !== undefined && above?.messageId === messageId && last?.kind === 'assistant' && !byId.has(id)) {
        mergeInto(last, item)
        alias.set(id, above.node.id)
        continue
      }
      const node: ImportNode = { id, parent, line, items: [item] }
      nodes.push(node)
      if (!byId.has(id)) byId.set(id, { node, ...(messageId !== undefined ? { messageId } : {}) })
      continue
    }
    const items = type === 'user' ? (e.isMeta === true ? [] : userItems(message, line)) : systemItems(e)
    const node: ImportNode = { id, parent, line, items }
    nodes.push(node)
    if (!byId.has(id)) byId.set(id, { node })
  }
  if (sidechain > 0) problems.push(`${sidechain} line${sidechain === 1 ? '' : 's'} of subagent (sidechain) conversations left out`)
  if (other > 0) problems.push(`${other} bookkeeping line${other === 1 ? '' : 's'} (file snapshots and the like) left out`)
  return { nodes, title, problems }
}

function mergeInto (into: ImportItem & { kind: 'assistant' }, more: ImportItem & { kind: 'assistant' }): void {
  if (more.text !== '') into.text = into.text === '' ? more.text : `${into.text}\n${more.text}`
  if (more.reasoning !== undefined) into.reasoning = into.reasoning === undefined ? more.reasoning : `${into.reasoning}\n${more.reasoning}`
  if (more.toolCalls !== undefined) into.toolCalls = [...(into.toolCalls ?? []), ...more.toolCalls]
  into.model ??= more.model
}

function assistantItem (m: Record<string, unknown> | undefined, line: number): ImportItem & { kind: 'assistant' } {
  const texts: string[] = []
  const thinking: string[] = []
  const toolCalls: Array<{ id: string; name: string; args: unknown }> = []
  const content = m?.content
  for (const b of Array.isArray(content) ? content as unknown[] : [content]) {
    if (typeof b === 'string') texts.push(b)
    else if (!isRecord(b)) continue
    else if (b.type === 'text' && typeof b.text === 'string') texts.push(b.text)
    else if (b.type === 'thinking' && typeof b.thinking === 'string') thinking.push(b.thinking)
    else if (b.type === 'tool_use') toolCalls.push({ id: nonEmpty(b.id, `line${line}-call${toolCalls.length}`), name: nonEmpty(b.name, 'unknown'), args: b.input ?? {} })
  }
  const model = str(m?.model)
  return {
    kind: 'assistant',
    text: texts.join('\n'),
    ...(thinking.length > 0 ? { reasoning: thinking.join('\n') } : {}),
    ...(model !== undefined ? { model } : {}),
    ...(toolCalls.length > 0 ? { toolCalls } : {})
  }
}

/** A user line: its tool results (Claude Code sends them as the user's), then what the person wrote. */
function userItems (m: Record<string, unknown> | undefined, line: number): ImportItem[] {
  const content = m?.content
  if (!Array.isArray(content)) return [{ kind: 'user', text: contentText(content) }]
  const items: ImportItem[] = []
  const words: unknown[] = []
  for (const b of content as unknown[]) {
    if (isRecord(b) && b.type === 'tool_result') {
      items.push({ kind: 'tool.result', callId: nonEmpty(b.tool_use_id, `line${line}`), status: b.is_error === true ? 'error' : 'ok', output: contentText(b.content) })
    } else words.push(b)
  }
  const text = contentText(words)
  if (text !== '' || items.length === 0) items.push({ kind: 'user', text })
  return items
}

function systemItems (e: Record<string, unknown>): ImportItem[] {
  if (e.subtype === 'compact_boundary') return [{ kind: 'note', text: 'Claude Code compacted the conversation here.' }]
  const text = str(e.content) ?? ''
  return text.trim() === '' ? [] : [{ kind: 'note', text: `Claude Code: ${text}` }]
}
