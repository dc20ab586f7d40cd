// What a drawn turn can do, handed down from the chat through the transcript: switch to a
// sibling branch, edit a message into a new branch, retry a reply, fork a branch into a new
// conversation, and where focus lands after a switch.

export interface TranscriptActions {
  /** shows the sibling branch `entry`; `dir` is the button used (for focus) */
  onSwitch: (entry: string, dir: -1 | 1) => void
  /** sends `text` as a new child of `parent` (an edit makes a sibling branch) */
  onEdit: (text: string, parent: string) => Promise<void>
  /** where focus should land after a branch switch */
  focusAt: { id: string; dir: -1 | 1 } | undefined
  /** whether new messages can be sent now */
  canSend: boolean
  /** answers again from what the reply `entry` answered, as a new branch (`model`: another model of this device's provider, this once) */
  onRetry?: (entry: string, model: string | undefined) => Promise<void>
  /** copies the branch up to `entry` into a new conversation, and opens it */
  onFork?: (entry: string) => Promise<void>
}
