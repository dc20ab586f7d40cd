// A history of DAGs fed entry by entry, as the search index sees a HistoryStore: it emits what
// ConversationIndex emits and answers a query by a scan of the joined entries (what the index must answer).
import { ConversationDag } from '../../src/shared/conversation/conversation-dag'
import type { Entry } from '../../src/shared/entry/entry'
import type { EntriesEvent } from '../../src/main/history/conversation-index'
import type { SearchSource } from '../../src/main/search/search-index'
import { parseQuery, searchableText, textMatches } from '../../src/main/search/search-text'

export class DagHistory implements SearchSource {
  readonly dags = new Map<string, ConversationDag>()
  private readonly fns = new Set<(ev: EntriesEvent) => void>()
  subscribe (fn: (ev: EntriesEvent) => void): () => void { this.fns.add(fn); return () => { this.fns.delete(fn) } }
  list (): Array<{ id: string; title: string; size: number; waiting: number }> {
    return [...this.dags.values()].filter(d => d.root !== undefined).map(d => ({ id: d.conversation, title: d.title(), size: d.size, waiting: d.size - d.joinedSize }))
  }

  summary (c: string): { title: string } | undefined { const d = this.dags.get(c); return d === undefined ? undefined : { title: d.title() } }
  async open (c: string): Promise<ConversationDag> { return this.dags.get(c) as ConversationDag }
  deliver (e: Entry): void {
    let d = this.dags.get(e.conversation)
    if (d === undefined) { d = new ConversationDag(e.conversation); this.dags.set(e.conversation, d) }
    if (d.has(e.id)) return
    const joined = d.add(e)
    const ev: EntriesEvent = { conversation: e.conversation, joined, waiting: joined.includes(e) ? [] : [e], feed: 'f', local: false }
    for (const fn of this.fns) fn(ev)
  }

  /** What the index must answer: every joined entry whose text matches, newest first. */
  scan (text: string): Array<{ id: string; ts: number }> {
    const q = parseQuery(text)
    const out: Array<{ id: string; ts: number }> = []
    for (const d of this.dags.values()) {
      for (const e of d.entries()) {
        const t = searchableText(e)
        if (d.isJoined(e.id) && t !== null && textMatches(t, q)) out.push({ id: e.id, ts: e.ts })
      }
    }
    return out.sort((a, b) => b.ts - a.ts)
  }
}

