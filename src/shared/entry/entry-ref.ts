import type { ConversationDag } from '../conversation/conversation-dag'
import type { Entry } from './entry'

/** An entry of a conversation named by its id or a unique prefix (as users type them); throws, saying why not. */
export function entryByRef (dag: ConversationDag, ref: string): Entry {
  const r = ref.toLowerCase()
  const exact = dag.get(r)
  if (exact !== undefined) return exact
  const matches: Entry[] = []
  for (const e of dag.entries()) if (e.id.startsWith(r)) matches.push(e)
  if (matches.length === 1) return matches[0] as Entry
  if (matches.length === 0) throw new Error(`no entry of this conversation matches "${ref}"; \`arbor tree\` shows the entry ids`)
  throw new Error(`"${ref}" matches ${matches.length} entries; give more of the id`)
}
