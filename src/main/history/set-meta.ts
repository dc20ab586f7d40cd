// Conversation settings are `meta` entries (DESIGN.md, "Mutable state"): the newest by
// hybrid logical clock wins on every device, whatever order the entries arrive in.
import type { ConversationDag } from '../../shared/conversation/conversation-dag'
import type { Entry } from '../../shared/entry/entry'
import type { HistoryStore } from './history-store'

/**
 * Writes a `meta` setting at the tip of the branch shown here (or below `parent`) and shows
 * it (so the view stays on that branch). Its clock is after every clock that counts here now (a peer's
 * far-future one does not: ConversationDag.nextMetaHlc), so it wins.
 */
export async function setMeta (store: HistoryStore, dag: ConversationDag, key: string, value: unknown, parent?: string): Promise<Entry> {
  const tip = parent ?? (dag.branch(store.selected(dag.conversation)).at(-1) as Entry).id
  const [e] = await store.append(dag.conversation, [{ kind: 'meta', body: { key, value, hlc: dag.nextMetaHlc(key, store.device) }, parents: [tip] }])
  store.select(dag.conversation, (e as Entry).id)
  return e as Entry
}
