// What an agent waits for before its next step, and the words the agent bar and `arbor
// status` show for it (ARCHITECTURE §14). Pure: data in, text out.

/**
 * An agent of an auto-revival conversation waiting at a step that must not run twice
 * (`workspace`, `external`) until another device holds its intent. `why`: no device is
 * connected, the connected ones run an older Arbor that cannot answer (`older`: their keys),
 * or none has answered yet.
 */
export interface AgentWait {
  for: 'acknowledgement'
  /** when it began to wait (this device's wall clock, for display) */
  since: number
  why: 'none-connected' | 'older-only' | 'unanswered'
  older: string[]
}

/** "waiting for another device to hold the step before running it: …" */
export function waitText (w: AgentWait, name: (device: string) => string): string {
  const head = 'waiting for another device to hold the step before running it'
  const off = 'or turn auto-revival off to run it now'
  switch (w.why) {
    case 'none-connected': return `${head}: no other device is connected (it goes on when one connects, ${off})`
    case 'older-only': return `${head}: ${w.older.map(name).join(' and ')} ${w.older.length > 1 ? 'run' : 'runs'} an older Arbor that cannot (update Arbor there, ${off})`
    case 'unanswered': return `${head} (${off})`
  }
}
