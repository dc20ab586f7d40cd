import { branchName, branchNameKey } from '../../shared/conversation/branch-name'
import type { ConversationDag } from '../../shared/conversation/conversation-dag'
import type { Entry } from '../../shared/entry/entry'
import { entryLine } from '../../shared/entry/entry-text'

export interface TreeOptions {
  /** entries on this branch are marked with `*` */
  branch?: Set<string>
  /** this device's key: entries from other devices are tagged with theirs */
  device?: string
  width?: number
}

/**
 * Draws a conversation as an ASCII tree. A run without branch points stays at one
 * indent; each branch point opens one sub-tree per child (├─ … └─). Iterative, so a
 * 10,000-entry chain draws without deep recursion.
 */
export function asciiTree (dag: ConversationDag, opts: TreeOptions = {}): string {
  const root = dag.root
  if (root === undefined) return '(the root entry of this conversation has not arrived yet)\n'
  const width = opts.width ?? 72
  const lines: string[] = []
  const label = (e: Entry): string => {
    const mark = opts.branch?.has(e.id) === true ? '*' : ' '
    const who = opts.device !== undefined && e.author.device !== opts.device ? ` @${e.author.device.slice(0, 6)}` : ''
    // a branch's name (anyone's words: branchName makes it one plain line, runCli terminal-safe)
    const name = branchName(dag.meta(branchNameKey(e.id))?.value)
    return `${mark} ${e.id.slice(0, 8)} ${e.kind.padEnd(13)} ${name !== undefined ? `[${name}] ` : ''}${entryLine(e, width)}${who}`
  }
  // Each frame: an entry to print, the prefix for its line, and the prefix for what follows it.
  const stack: Array<{ e: Entry; head: string; rest: string }> = [{ e: root, head: '', rest: '' }]
  while (stack.length > 0) {
    const { e, head, rest } = stack.pop() as { e: Entry; head: string; rest: string }
    lines.push(head + label(e))
    const kids = dag.children(e.id)
    if (kids.length === 1) {
      stack.push({ e: kids[0] as Entry, head: rest, rest })
    } else {
      for (let i = kids.length - 1; i >= 0; i--) {
        const last = i === kids.length - 1
        stack.push({ e: kids[i] as Entry, head: rest + (last ? '└─' : '├─'), rest: rest + (last ? '  ' : '│ ') })
      }
    }
  }
  const waiting = dag.waiting()
  if (waiting.length > 0) lines.push(`(${waiting.length} entr${waiting.length === 1 ? 'y waits' : 'ies wait'} for parents not yet received: ${dag.missing().map(m => m.slice(0, 8)).join(', ')})`)
  return lines.join('\n') + '\n'
}
