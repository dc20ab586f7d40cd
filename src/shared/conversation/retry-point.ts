// Where a retry of an assistant reply starts (message.retry, `arbor retry`): the entry the
// reply answered, so the new run's reply is a new branch beside the old one. Pure.
import type { ConversationDag } from './conversation-dag'
import type { Entry, EntryOf } from '../entry/entry'

export type RetryPoint =
  | { ok: true; reply: EntryOf<'assistant'>; from: Entry }
  | { ok: false; error: string }

/**
 * The entry a reply answered: its parent, or above the `agent.started` its run wrote first
 * (a retry writes its own start there, so both runs hang from the message or tool result
 * they answer and the transcript shows the two replies as siblings, "1/2 · 2/2").
 */
export function retryPoint (dag: ConversationDag, entry: Entry): RetryPoint {
  const short = entry.id.slice(0, 8)
  if (entry.kind !== 'assistant') {
    const what = entry.kind === 'unknown' ? `an entry of a newer version ("${entry.body.kind}")` : `a "${entry.kind}" entry`
    return { ok: false, error: `entry ${short} is ${what}, not an assistant reply: only a reply can be retried` }
  }
  if (!dag.isJoined(entry.id)) return { ok: false, error: `entry ${short} waits for a parent that has not arrived; it is not on a branch yet` }
  let from = dag.get(entry.parents[0] ?? '')
  while (from?.kind === 'agent.started') from = dag.get(from.parents[0] ?? '')
  if (from === undefined || from.kind === 'conversation') return { ok: false, error: `entry ${short} answers no message: there is nothing to retry it from` }
  return { ok: true, reply: entry, from }
}

/** The last assistant reply on a branch (what `arbor retry` retries by default). */
export function lastReply (branch: readonly Entry[]): EntryOf<'assistant'> | undefined {
  return branch.findLast((e): e is EntryOf<'assistant'> => e.kind === 'assistant')
}

/** Why a retry is refused here when the conversation's agent belongs to `device` (its name). */
export function retryElsewhereText (device: string): string {
  return `the agent of this conversation runs on ${device}: retry there, or /resume (\`arbor resume\`) to move it to this device first`
}
