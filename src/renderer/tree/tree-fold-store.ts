// Where the tree's folds are kept: this device's browser storage, per conversation. View state
// only (never history), so a store that cannot be read or written costs the folds and nothing else.

const KEY = 'arbor.tree.folded:'
/** folds kept per conversation: a bound on what a session of folding can leave in storage */
const MAX_FOLDS = 1000

/** The folded turns of a conversation; none when nothing valid is kept. */
export function loadFolds (conversation: string): Set<string> {
  let raw: string | null
  try { raw = globalThis.localStorage?.getItem(KEY + conversation) ?? null } catch { return new Set() } // storage off (private mode): no folds kept
  if (raw === null) return new Set()
  try {
    const ids: unknown = JSON.parse(raw)
    return new Set(Array.isArray(ids) ? ids.filter((x): x is string => typeof x === 'string').slice(0, MAX_FOLDS) : [])
  } catch {
    return new Set() // written by something else: start unfolded
  }
}

export function saveFolds (conversation: string, folded: ReadonlySet<string>): void {
  try {
    if (folded.size === 0) globalThis.localStorage?.removeItem(KEY + conversation)
    else globalThis.localStorage?.setItem(KEY + conversation, JSON.stringify([...folded].slice(-MAX_FOLDS)))
  } catch (err) {
    console.warn('the tree\'s folds could not be kept:', err) // full or off: they last this session
  }
}
