import { ConversationDag } from './conversation-dag'
import type { ConversationDto } from '../api/api'
import type { Entry, WrittenEntry } from '../entry/entry'
import { asWritten } from '../entry/entry-written'
import { entryText } from '../entry/entry-text'

const ROLE: Record<Entry['kind'], string> = {
  conversation: 'Conversation',
  user: 'User',
  assistant: 'Assistant',
  'tool.intent': 'Tool call',
  'tool.result': 'Tool result',
  'agent.started': 'Agent',
  'agent.stopped': 'Agent',
  note: 'Note',
  compaction: 'Compaction',
  meta: 'Setting',
  unknown: 'From a newer version'
}

function when (ts: number): string {
  return new Date(ts).toISOString().replace('T', ' ').slice(0, 16)
}

/** A branch as plain text for a terminal: one header line per entry, then its words. */
export function transcriptText (branch: Entry[]): string {
  return branch.map(e => {
    const text = e.kind === 'conversation' ? `"${e.body.title}"` : entryText(e)
    return `── ${ROLE[e.kind]} · ${when(e.ts)} · ${e.id.slice(0, 8)}\n${text}\n`
  }).join('\n')
}

/** A branch as Markdown: messages as prose, tool traffic as code blocks. */
export function transcriptMarkdown (dag: ConversationDag, branch: Entry[]): string {
  const out: string[] = [`# ${dag.title() || 'Untitled conversation'}`, '', `Conversation \`${dag.conversation}\`, exported ${branch.length} entries of one branch.`, '']
  for (const e of branch) {
    if (e.kind === 'conversation') continue
    out.push(`## ${ROLE[e.kind]} — ${when(e.ts)}`, '')
    if (e.kind === 'tool.intent') out.push(`\`${e.body.tool}\` (${e.body.effect})`, '', '```json', JSON.stringify(e.body.args, null, 2), '```')
    else if (e.kind === 'tool.result') out.push(`Status: ${e.body.status}`, '', fence(e.body.output))
    else out.push(entryText(e))
    out.push('')
  }
  return out.join('\n')
}

function fence (text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map(m => m[0].length))
  const f = '`'.repeat(longest + 1)
  return `${f}\n${text}\n${f}`
}

/** Every joined entry of the conversation, parents before children (Kahn's order over the tree). */
export function orderedEntries (dag: ConversationDag): Entry[] {
  const ordered: Entry[] = []
  const root = dag.root
  if (root === undefined) return ordered
  const pending = new Map<string, number>()
  const queue: Entry[] = [root]
  for (let i = 0; i < queue.length; i++) {
    const e = queue[i] as Entry
    ordered.push(e)
    for (const c of dag.children(e.id)) {
      const left = (pending.get(c.id) ?? c.parents.length) - 1
      pending.set(c.id, left)
      if (left === 0) queue.push(c)
    }
  }
  return ordered
}

/**
 * Every entry of the conversation, parents before children: a lossless export. Entries are
 * as their feeds hold them, those this version does not understand included (asWritten).
 */
export function conversationJson (dag: ConversationDag): { conversation: string; title: string; heads: string[]; entries: WrittenEntry[]; waiting: WrittenEntry[] } {
  return { conversation: dag.conversation, title: dag.title(), heads: dag.heads().map(e => e.id), entries: orderedEntries(dag).map(asWritten), waiting: dag.waiting().map(asWritten) }
}

/** A conversation as conversation.open gives it (every entry, waiting ones too) as a DAG: what both exports read, in the CLI and the UI. */
export function conversationDag (dto: Pick<ConversationDto, 'id' | 'entries' | 'waiting'>): ConversationDag {
  return new ConversationDag(dto.id, [...dto.entries, ...(dto.waiting ?? [])])
}

/** A file name for an export: the title's words (letters, digits, dashes), else the id's start. */
export function exportFileName (dag: ConversationDag, format: 'md' | 'json'): string {
  const words = dag.title().normalize('NFKD').replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-+|-+$/g, '').slice(0, 60)
  return `${words !== '' ? words : `conversation-${dag.conversation.slice(0, 8)}`}.${format}`
}
