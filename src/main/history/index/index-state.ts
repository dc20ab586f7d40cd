// What the history index keeps: the feeds a device holds and a summary of each conversation.
// A leaf, so the index file (history-index.ts), its codec and its listing name these types
// without naming each other.

/** A feed the device holds for a conversation: its own or one learned from a peer. */
export interface FeedRecord {
  key: string           // hex
  conversation: string
  device: string        // the device that writes it ('' until its header has been read)
  own: boolean
  indexed: number       // blocks read into the index and entry cache so far
}

/** What `arbor ls` shows of a conversation, kept so listing never reads entries. */
export interface ConversationSummary {
  id: string
  title: string
  createdAt: number
  updatedAt: number
  heads: string[]
  size: number          // entries held, waiting ones included
  waiting: number       // entries whose parents have not arrived
  cwd?: string
  autoRevival?: boolean
}

export interface IndexState {
  device: string
  /** false while a process has the store open and may have written past the watermarks */
  clean: boolean
  manifestIndexed: number
  feeds: Record<string, FeedRecord>
  conversations: Record<string, ConversationSummary>
}
