/**
 * What a conversation's tools may touch. The bash tool enforces it with bubblewrap; the
 * file tools check paths against the same rules in process.
 */
export interface SandboxPolicy {
  /** false only when the user turned the sandbox off for this conversation */
  enabled: boolean
  /** the one writable directory (the conversation's working directory) */
  cwd: string
  /** directories and files hidden from tools (Arbor's data dir, ~/.ssh, ~/.aws, ...) */
  hidden: string[]
}
