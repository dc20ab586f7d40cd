import { InvalidEntryError, type Entry, type EntryDraft } from '../../shared/entry/entry'
import { makeOwnEntryBlock } from './store/entry-codec'

export interface CallContext {
  conversation: string
  device: string
  ts: number
  /** whether an entry may be a parent: joined, or queued or being written by this device */
  known: (id: string) => boolean
  /** whether an entry is in the conversation but waits for its own parent (for the error) */
  waits: (id: string) => boolean
}

/**
 * The entries of one append call, built from its drafts. A parent `$k` names the k-th draft
 * of the same call (whose id the caller cannot know beforehand), so one call can write a
 * chain; every other parent must be known. A bad draft refuses the whole call (InvalidEntryError).
 * `blocks[i]` is `entries[i]`'s feed block (makeOwnEntryBlock).
 */
export function entriesOfCall (drafts: EntryDraft[], ctx: CallContext): { entries: Entry[]; blocks: Buffer[] } {
  const { conversation } = ctx
  const entries: Entry[] = []
  const blocks: Buffer[] = []
  const ids = new Set<string>()
  const at = { conversation, device: ctx.device, ts: ctx.ts }
  for (const draft of drafts) {
    if (draft.kind === 'conversation') throw new InvalidEntryError('a conversation root is written by createConversation, not appended')
    const parents = draft.parents.map(p => {
      const k = draftIndex(p)
      if (k === -1) return p
      const earlier = entries[k]
      if (earlier === undefined) throw new InvalidEntryError(`parent ${p} does not name an earlier draft of this append`)
      return earlier.id
    })
    for (const p of parents) {
      if (!ids.has(p) && !ctx.known(p)) {
        throw new InvalidEntryError(`parent ${p.slice(0, 12)} is not an entry of conversation ${conversation.slice(0, 12)}${ctx.waits(p) ? ' yet (it waits for its own parent)' : ''}`)
      }
    }
    // every parent is known (checked just above) and the array is this call's own
    const { entry, block } = makeOwnEntryBlock(draft, at, parents)
    entries.push(entry)
    blocks.push(block)
    ids.add(entry.id)
  }
  return { entries, blocks }
}

/** k of a parent `$k` (digits only), else -1: read without a regular expression's match array (every parent of every draft). */
function draftIndex (p: string): number {
  if (p.charCodeAt(0) !== 36 || p.length < 2) return -1
  let k = 0
  for (let i = 1; i < p.length; i++) {
    const d = p.charCodeAt(i) - 48
    if (d < 0 || d > 9) return -1
    k = k * 10 + d
  }
  return k
}
