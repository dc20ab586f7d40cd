// What a fork writes (conversation.fork, `arbor fork`): the branch root → entry as entries of
// a new conversation, parents remapped, as history only. Pure: entries in, drafts out.
import type { Entry, EntryDraft } from '../entry/entry'

/**
 * The kinds copied: what the model was told and what it answered. Not lifecycle entries
 * (where an agent ran, and its epochs, are the source's), nor `meta` (a setting a peer wrote
 * would become this device's own, authored by it), nor notes (they say where the source's
 * agent ran), nor entries of a newer version (this version writes only what it understands).
 */
const COPIED = new Set<Entry['kind']>(['user', 'assistant', 'tool.intent', 'tool.result', 'compaction'])

/** What a call left open at the end of the copy is recorded as in the fork: never run there. */
export const FORK_NOT_RUN = 'not run: the conversation was forked before this call had a result'

export interface ForkCopy {
  /** the entries of the branch (root first) to copy, in order */
  entries: Entry[]
  /**
   * the calls of the last assistant reply without a result on the branch (and no user message
   * after it): the fork records them as cancelled, so no agent of the fork runs a call the
   * source planned (nor one a peer's model made: the copies are this device's own entries)
   */
  open: string[]
}

export function forkCopy (branch: readonly Entry[]): ForkCopy {
  const entries = branch.slice(1).filter(e => COPIED.has(e.kind))
  let open: string[] = []
  for (const e of entries) {
    if (e.kind === 'assistant') open = (e.body.toolCalls ?? []).map(c => c.id)
    else if (e.kind === 'user') open = [] // calls before a user message are never run (planNext answers the message)
    else if (e.kind === 'tool.result') open = open.filter(id => id !== e.body.callId)
  }
  return { entries, open }
}

/**
 * The copy of `e` as a child of `parent` (an id, or `$k` of the same append), or undefined
 * for a compaction whose range names entries not copied yet (`copies`: source id → copy id).
 */
export function copyDraft (e: Entry, parent: string, copies: ReadonlyMap<string, string>): EntryDraft | undefined {
  if (e.kind === 'compaction') {
    const from = copies.get(e.body.folded.from)
    const to = copies.get(e.body.folded.to)
    if (from === undefined || to === undefined) return undefined
    return { kind: 'compaction', body: { ...e.body, folded: { from, to } }, parents: [parent] }
  }
  if (e.kind === 'unknown' || !COPIED.has(e.kind)) return undefined
  return { kind: e.kind, body: e.body, parents: [parent] } as EntryDraft
}

/** The result that closes a call left open at the fork. */
export function notRunDraft (callId: string, parent: string): EntryDraft {
  return { kind: 'tool.result', body: { callId, status: 'cancelled', output: FORK_NOT_RUN }, parents: [parent] }
}
