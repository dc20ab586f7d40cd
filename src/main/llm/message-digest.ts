import { createHash, type Hash } from 'node:crypto'
import { canonicalJson } from '../../shared/entry/canonical-json'
import type { IrMessage } from '../../shared/llm-ir'

/** What the fake provider derives from a request's whole message list. */
export interface MessagesDigest {
  /** the first 16 hex digits of SHA-256 of the list's canonical JSON (JSON.stringify where that fails) */
  hash: string
  /** the sum of JSON.stringify(message).length over the list */
  chars: number
}

/** The digest computed from scratch: the definition the incremental one must equal. */
export function digestMessages (messages: readonly IrMessage[]): MessagesDigest {
  let encoded: string
  try {
    encoded = canonicalJson(messages)
  } catch {
    encoded = JSON.stringify(messages)
  }
  return {
    hash: createHash('sha256').update(encoded).digest('hex').slice(0, 16),
    chars: messages.reduce((n, m) => n + JSON.stringify(m).length, 0)
  }
}

interface Prefix {
  /** the messages hashed so far, as they were (the request's own array may change after) */
  messages: IrMessage[]
  /** SHA-256 fed '[' and the canonical JSON of those messages, comma-separated */
  hash: Hash
  chars: number
}

const KEPT = 4

/**
 * digestMessages, remembering the last few lists: an agent's next request repeats the previous
 * one's messages (the same objects: IrMessageBuilder never changes a message it made) and adds
 * a few, so only those are encoded and hashed. Without that it is O(conversation) per model
 * call, most of a scripted step's cost. A list that shares no remembered prefix is digested whole.
 */
export class MessageDigests {
  private readonly kept: Prefix[] = []

  of (messages: readonly IrMessage[]): MessagesDigest {
    // The list it starts with is extended in place: a request that starts with it supersedes it.
    const from = this.longestPrefix(messages)
    if (from !== undefined) this.kept.splice(this.kept.indexOf(from), 1)
    const next: Prefix = from ?? { messages: [], hash: createHash('sha256').update('['), chars: 0 }
    try {
      for (let i = next.messages.length; i < messages.length; i++) {
        const m = messages[i] as IrMessage | undefined
        if (m === undefined) return digestMessages(messages) // a hole: as canonicalJson and JSON.stringify treat it
        const json = canonicalJson(m)
        next.hash.update(i === 0 ? json : ',' + json)
        next.chars += JSON.stringify(m).length
        next.messages.push(m)
      }
    } catch {
      return digestMessages(messages) // not canonical JSON: the whole list by JSON.stringify, as defined
    }
    this.kept.unshift(next)
    if (this.kept.length > KEPT) this.kept.pop()
    return { hash: next.hash.copy().update(']').digest('hex').slice(0, 16), chars: next.chars }
  }

  /** The remembered list that `messages` starts with (the same message objects), the longest. */
  private longestPrefix (messages: readonly IrMessage[]): Prefix | undefined {
    let best: Prefix | undefined
    for (const p of this.kept) {
      if (p.messages.length > messages.length || (best !== undefined && p.messages.length <= best.messages.length)) continue
      let same = true
      for (let i = 0; i < p.messages.length && same; i++) same = p.messages[i] === messages[i]
      if (same) best = p
    }
    return best
  }
}
