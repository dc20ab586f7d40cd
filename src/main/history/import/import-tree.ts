// Another harness's session (a forest of id/parentId entries) as drafts of one new Arbor
// conversation: pure, so the parsers (import-pi.ts, import-claude-code.ts) and the tests share it.
import { MAX_ARGS_DEPTH, type EntryDraft } from '../../../shared/entry/entry'
import { nestsDeeperThan } from '../../../shared/entry/json-depth'
import { MAX_MESSAGE_CHARS } from '../../../shared/api/api-params'

/** What one source entry says, as the Arbor entries it becomes (written in this order, a chain). */
export type ImportItem =
  | { kind: 'user'; text: string }
  | { kind: 'assistant'; text: string; reasoning?: string; model?: string; toolCalls?: Array<{ id: string; name: string; args: unknown }> }
  | { kind: 'tool.result'; callId: string; status: 'ok' | 'error'; output: string }
  | { kind: 'note'; text: string }

/**
 * One entry of the source file. `items` empty: it carries nothing Arbor keeps (a model change,
 * a label), but stays in the tree so its children keep their place: they hang from its parent.
 */
export interface ImportNode {
  id: string
  /** null: a root of the source's forest */
  parent: string | null
  /** 1-based line of the file, for messages */
  line: number
  items: ImportItem[]
}

/** A session file read: its nodes in file order, the title it gives itself ('' if none), what was wrong with it. */
// No working directory is taken from the file: what runs here is decided here (DESIGN.md, "Trust").
export interface ParsedSession { nodes: ImportNode[]; title: string; problems: string[] }

/** An entry to write: `parent` is the index of an earlier draft, or -1 for the conversation's root. */
export interface ImportDraft { item: ImportItem; parent: number }

export interface ImportPlan {
  drafts: ImportDraft[]
  /** the draft of the last item of the file's last node that has any (-1 if none): where the file's own leaf is */
  tip: number
  /** what was changed to make a tree of it, one line each, with line numbers */
  problems: string[]
}

/**
 * Orders the forest into drafts, parents first (a depth-first walk, children in file order),
 * each node's items a chain. Every node is placed exactly once whatever the ids say: a repeated
 * id is skipped, a parent not in the file or a cycle hangs the node from the conversation's root.
 */
export function planImport (nodes: readonly ImportNode[]): ImportPlan {
  const problems: string[] = []
  const byId = new Map<string, ImportNode>()
  const kept: ImportNode[] = []
  for (const n of nodes) {
    const first = byId.get(n.id)
    if (first !== undefined) { problems.push(`line ${n.line}: id ${JSON.stringify(n.id)} repeats line ${first.line}; skipped`); continue }
    byId.set(n.id, n)
    kept.push(n)
  }
  const children = new Map<string, ImportNode[]>()
  const roots: ImportNode[] = []
  for (const n of kept) {
    if (n.parent === null) { roots.push(n); continue }
    if (!byId.has(n.parent)) {
      problems.push(`line ${n.line}: its parent ${JSON.stringify(n.parent)} is not in the file; attached to the start`)
      roots.push(n)
      continue
    }
    const list = children.get(n.parent)
    if (list === undefined) children.set(n.parent, [n])
    else list.push(n)
  }
  const drafts: ImportDraft[] = []
  const placed = new Set<string>()
  const lastOf = new Map<ImportNode, number>()
  // an explicit stack: sessions are chains thousands deep
  const walk = (start: ImportNode): void => {
    const stack: Array<{ node: ImportNode; anchor: number }> = [{ node: start, anchor: -1 }]
    while (stack.length > 0) {
      const { node, anchor } = stack.pop() as { node: ImportNode; anchor: number }
      if (placed.has(node.id)) continue
      placed.add(node.id)
      let last = anchor
      for (const item of node.items) { drafts.push({ item, parent: last }); last = drafts.length - 1 }
      if (node.items.length > 0) lastOf.set(node, last)
      const below = children.get(node.id) ?? []
      for (let i = below.length - 1; i >= 0; i--) stack.push({ node: below[i] as ImportNode, anchor: last })
    }
  }
  for (const r of roots) walk(r)
  // what no root reaches lies on a cycle or under one: cut the first such node's parent link
  for (const n of kept) {
    if (placed.has(n.id)) continue
    problems.push(`line ${n.line}: its parents form a cycle; attached to the start`)
    walk(n)
  }
  let tip = -1
  for (let i = kept.length - 1; i >= 0 && tip === -1; i--) tip = lastOf.get(kept[i] as ImportNode) ?? -1
  return { drafts, tip, problems }
}

/** Longest tool output kept per result (entries are capped at 1 MiB encoded). */
export const MAX_IMPORTED_OUTPUT = 256 * 1024
/** Longest tool-call arguments kept, as JSON; larger ones are replaced by a note of their size. */
const MAX_ARGS_JSON = 64 * 1024

function cut (text: string, max: number): { text: string; cut: boolean } {
  return text.length <= max ? { text, cut: false } : { text: text.slice(0, max), cut: true }
}

/**
 * The drafts as the history store takes them (parents `$k`, or the root), every body within
 * what an entry may hold: long texts are cut, saying so.
 */
export function entryDrafts (plan: ImportPlan, root: string): EntryDraft[] {
  return plan.drafts.map((d): EntryDraft => {
    const parents = [d.parent === -1 ? root : `$${d.parent}`]
    const item = d.item
    switch (item.kind) {
      case 'user': return { kind: 'user', body: { text: capped(item.text), reply: false }, parents }
      case 'note': return { kind: 'note', body: { text: capped(item.text) }, parents }
      case 'tool.result': {
        const out = cut(item.output, MAX_IMPORTED_OUTPUT)
        return { kind: 'tool.result', body: { callId: item.callId, status: item.status, output: out.text, ...(out.cut ? { truncated: true } : {}) }, parents }
      }
      case 'assistant': {
        const body: EntryDraft & { kind: 'assistant' } = { kind: 'assistant', body: { text: capped(item.text) }, parents }
        if (item.reasoning !== undefined && item.reasoning !== '') body.body.reasoning = capped(item.reasoning)
        if (item.model !== undefined) body.body.model = item.model.slice(0, 200)
        if (item.toolCalls !== undefined && item.toolCalls.length > 0) {
          body.body.toolCalls = item.toolCalls.map(c => {
            const json = JSON.stringify(c.args) ?? 'null'
            if (json.length > MAX_ARGS_JSON) return { id: c.id, name: c.name, args: { imported: `arguments of ${json.length} characters left out` } }
            // within the line's depth, but maybe deeper in the entry than in the line
            if (nestsDeeperThan(json, MAX_ARGS_DEPTH)) return { id: c.id, name: c.name, args: { imported: `arguments nesting deeper than ${MAX_ARGS_DEPTH} levels left out` } }
            return { id: c.id, name: c.name, args: c.args }
          })
        }
        return body
      }
    }
  })
}

function capped (text: string): string {
  const c = cut(text, MAX_MESSAGE_CHARS)
  return c.cut ? c.text + `\n\n[cut at ${MAX_MESSAGE_CHARS} characters on import]` : c.text
}

/** A title from the first user message: its first line, at most 80 characters. */
export function titleFrom (nodes: readonly ImportNode[]): string {
  for (const n of nodes) {
    for (const item of n.items) {
      if (item.kind !== 'user') continue
      const line = item.text.trim().split('\n')[0]?.trim() ?? ''
      if (line !== '') return line.length <= 80 ? line : line.slice(0, 79) + '…'
    }
  }
  return ''
}
