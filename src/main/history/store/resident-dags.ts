import type { ConversationDag } from '../../../shared/conversation/conversation-dag'
import { DagCache, type DagCacheStats } from './dag-cache'

/**
 * The conversations' DAGs in memory: a size-budgeted cache (dag-cache.ts), least recently
 * used dropped first, each read in by `read` when needed (concurrent calls share one read).
 */
export class ResidentDags {
  private readonly dags: DagCache<ConversationDag>
  /**
   * DAGs evicted while a caller may still hold one (open() hands out live DAGs): each is
   * kept up to date and taken back on its next use until it is collected, so a holder never
   * reads a stale DAG and the cache never holds two of one conversation.
   */
  private readonly evicted = new Map<string, { ref: WeakRef<ConversationDag>; bytes: number }>()
  private readonly collected = new FinalizationRegistry<string>(conversation => {
    if (this.evicted.get(conversation)?.ref.deref() === undefined) this.evicted.delete(conversation)
  })
  private readonly loading = new Map<string, Promise<ConversationDag>>()

  /** `read` makes a conversation's DAG from the disk, with its estimated size. */
  constructor (budgetBytes: number, private readonly read: (conversation: string) => Promise<{ dag: ConversationDag; bytes: number }>) {
    this.dags = new DagCache<ConversationDag>(budgetBytes, (conversation, dag, bytes) => {
      this.evicted.set(conversation, { ref: new WeakRef(dag), bytes })
      this.collected.register(dag, conversation)
    })
  }

  /** A conversation's DAG: the one in memory, else read in (concurrent calls share one read). */
  load (conversation: string): Promise<ConversationDag> {
    const dag = this.resident(conversation)
    if (dag !== undefined) return Promise.resolve(dag)
    let p = this.loading.get(conversation)
    if (p === undefined) {
      p = (async () => {
        const { dag, bytes } = await this.read(conversation)
        this.dags.set(conversation, dag, bytes)
        return dag
      })()
      const loading = p
      void loading.finally(() => { if (this.loading.get(conversation) === loading) this.loading.delete(conversation) }).catch(() => undefined)
      this.loading.set(conversation, p)
    }
    return p
  }

  /** The DAG in memory, if any: one evicted but still held somewhere is taken back into the cache. */
  resident (conversation: string): ConversationDag | undefined {
    const dag = this.dags.get(conversation)
    if (dag !== undefined) return dag
    const kept = this.evicted.get(conversation)
    if (kept === undefined) return undefined
    this.evicted.delete(conversation)
    const alive = kept.ref.deref()
    if (alive !== undefined) this.dags.set(conversation, alive, kept.bytes)
    return alive
  }

  /** The DAG in memory, if any, without using it (no reload, no change of recency). */
  peek (conversation: string): ConversationDag | undefined {
    return this.dags.peek(conversation) ?? this.evicted.get(conversation)?.ref.deref()
  }

  /** Takes a DAG made here (a new conversation) into the cache. */
  set (conversation: string, dag: ConversationDag, bytes: number): void {
    this.dags.set(conversation, dag, bytes)
  }

  forget (conversation: string): void {
    this.dags.delete(conversation)
    this.evicted.delete(conversation)
  }

  /** `dag` grew by an estimated `bytes`: counted against the budget (which may evict others). */
  grew (dag: ConversationDag, bytes: number): void {
    if (bytes === 0) return
    const c = dag.conversation
    if (this.dags.peek(c) === dag) {
      this.dags.resize(c, (this.dags.sizeOf(c) ?? 0) + bytes)
      return
    }
    const kept = this.evicted.get(c)
    if (kept !== undefined && kept.ref.deref() === dag) kept.bytes += bytes
  }

  /** Keeps a conversation's DAG in memory (never evicted once loaded) until the release is called. */
  pin (conversation: string): () => void {
    return this.dags.pin(conversation)
  }

  get stats (): DagCacheStats {
    return this.dags.stats
  }
}
