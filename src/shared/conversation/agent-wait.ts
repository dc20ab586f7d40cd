// What an agent waits for before its next step, and the words the agent bar and `arbor
// status` show for it (ARCHITECTURE §14). Pure: data in, text out.

/**
 * An agent of an auto-revival conversation waiting before it acts. `acknowledgement`: at a step
 * that must not run twice (`workspace`, `external`) until another device holds its intent.
 * `lease`: its device went unheard by its peers longer than they wait before reviving its agents
 * (a pause, a sleep, a cut), so it acts again only once it has heard them. `why`: no device is
 * connected, the connected ones run an older Arbor that cannot answer (`older`: their keys), or
 * none has answered yet.
 */
export interface AgentWait {
  for: 'acknowledgement' | 'lease'
  /** when it began to wait (this device's wall clock, for display) */
  since: number
  why: 'none-connected' | 'older-only' | 'unanswered'
  older: string[]
}

/** "waiting for another device to hold the step before running it: …" */
export function waitText (w: AgentWait, name: (device: string) => string): string {
  if (w.for === 'lease') {
    const lease = 'waiting to hear from the other devices before going on (this device was out of touch long enough for one of them to take the agent over)'
    return w.why === 'none-connected' ? `${lease}: no other device is connected (it goes on when one connects, or turn auto-revival off to go on now)` : lease
  }
  const head = 'waiting for another device to hold the step before running it'
  const off = 'or turn auto-revival off to run it now'
  switch (w.why) {
    case 'none-connected': return `${head}: no other device is connected (it goes on when one connects, ${off})`
    case 'older-only': return `${head}: ${w.older.map(name).join(' and ')} ${w.older.length > 1 ? 'run' : 'runs'} an older Arbor that cannot (update Arbor there, ${off})`
    case 'unanswered': return `${head} (${off})`
  }
}
