/**
 * The heap a DAG costs, estimated from its entries' encoded (UTF-8) sizes. Measured as heapUsed
 * after gc over many copies of DAGs of realistic entries: an entry costs ~600 B + 2 × its encoded
 * size while its encoding is remembered (written or received this session), ~450 B + 0.9 × once
 * read back from the entry cache; a DAG ~1.2 KB besides. The larger is used, so the budget bounds
 * the heap rather than approximates it (`bench/dag-bytes.ts` checks it: 0.98 and 0.6 of it).
 */
export const DAG_BYTES = 2048
export const ENTRY_BYTES = 600
export const ENCODED_FACTOR = 2

/** The estimate for one entry of `encodedBytes`. */
export function entryBytes (encodedBytes: number): number {
  return ENTRY_BYTES + ENCODED_FACTOR * encodedBytes
}

/** The estimate for a DAG of `count` entries whose encodings total `encodedBytes`. */
export function dagBytes (count: number, encodedBytes: number): number {
  return DAG_BYTES + ENTRY_BYTES * count + ENCODED_FACTOR * encodedBytes
}

/** What a DagCache holds, for the bench and tests: estimated bytes against the budget. */
export interface DagCacheStats {
  budgetBytes: number
  /** estimated bytes of every resident value, pinned ones included */
  bytes: number
  count: number
  /** values evicted since the cache was made */
  evictions: number
}

/**
 * A least-recently-used cache with a size budget (pure: sizes are given by the caller).
 * After every call the resident values fit the budget, or every one still resident is
 * pinned: a pinned key (a value in use) is never evicted, whether it is resident yet or
 * not. Eviction takes the least recently used unpinned values first and tells `onEvict`.
 */
export class DagCache<V> {
  /** key → value and size, least recently used first (a Map keeps insertion order) */
  private readonly items = new Map<string, { value: V; bytes: number }>()
  private readonly pins = new Map<string, number>()
  private total = 0
  private evicted = 0

  constructor (readonly budgetBytes: number, private readonly onEvict: (key: string, value: V, bytes: number) => void = () => {}) {
    if (!(budgetBytes >= 0)) throw new Error(`a cache budget is a number of bytes ≥ 0, not ${budgetBytes}`)
  }

  /** The value, marked as the most recently used. */
  get (key: string): V | undefined {
    const item = this.items.get(key)
    if (item === undefined) return undefined
    this.items.delete(key)
    this.items.set(key, item)
    return item.value
  }

  /** The value, its recency unchanged. */
  peek (key: string): V | undefined { return this.items.get(key)?.value }

  has (key: string): boolean { return this.items.has(key) }

  /** Inserts or replaces a value as the most recently used, then evicts down to the budget. */
  set (key: string, value: V, bytes: number): void {
    const old = this.items.get(key)
    if (old !== undefined) {
      this.total -= old.bytes
      this.items.delete(key)
    }
    this.items.set(key, { value, bytes })
    this.total += bytes
    this.evict()
  }

  /** A resident value's size changed (it grew): marks it used and evicts down to the budget. */
  resize (key: string, bytes: number): void {
    const item = this.items.get(key)
    if (item === undefined) return
    this.set(key, item.value, bytes)
  }

  /** The size recorded for a resident value. */
  sizeOf (key: string): number | undefined { return this.items.get(key)?.bytes }

  /** Drops a value without counting it as evicted (onEvict is not called). */
  delete (key: string): void {
    const item = this.items.get(key)
    if (item === undefined) return
    this.items.delete(key)
    this.total -= item.bytes
  }

  /** Keeps a key resident until the returned release is called (pins count; release is idempotent). */
  pin (key: string): () => void {
    this.pins.set(key, (this.pins.get(key) ?? 0) + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      const n = (this.pins.get(key) ?? 1) - 1
      if (n === 0) this.pins.delete(key)
      else this.pins.set(key, n)
      this.evict()
    }
  }

  isPinned (key: string): boolean { return this.pins.has(key) }

  get stats (): DagCacheStats {
    return { budgetBytes: this.budgetBytes, bytes: this.total, count: this.items.size, evictions: this.evicted }
  }

  private evict (): void {
    if (this.total <= this.budgetBytes) return
    for (const [key, item] of this.items) {
      if (this.total <= this.budgetBytes) return
      if (this.pins.has(key)) continue
      this.items.delete(key)
      this.total -= item.bytes
      this.evicted++
      this.onEvict(key, item.value, item.bytes)
    }
  }
}
