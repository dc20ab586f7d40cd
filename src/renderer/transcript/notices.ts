// Lifecycle entries (the agent started, moved, stopped; notes; entries of a newer version) as
// the transcript's notice lines. Pure: an entry in, a line or nothing out.
import type { Entry } from '../../shared/entry/entry'
import { unknownEntryNotice } from '../../shared/entry/entry-text'

export type NoticeTone = 'info' | 'warn' | 'error'

/** Who the devices in lifecycle lines are. */
export interface NoticeContext {
  /** this device's key ("this device" in the lines) */
  self?: string | undefined
  /** a device's name (default: the start of its key) */
  name?: ((device: string) => string) | undefined
}

export type Notice = { tone: NoticeTone; text: string; detail?: string; system?: true }

/** How a lifecycle entry (or one from a newer version) shows, or undefined when it is not worth a line. */
export function noticeFor (e: Entry, ctx: NoticeContext = {}): Notice | undefined {
  const where = (device: string): string => device === ctx.self ? 'this device' : ctx.name?.(device) ?? `device ${device.slice(0, 8)}`
  switch (e.kind) {
    case 'agent.started': {
      const at = where(e.author.device)
      const prev = e.body.previous
      switch (e.body.reason) {
        case 'user': return undefined
        case 'resume': {
          const from = prev !== undefined && prev.device !== e.author.device ? ` from ${where(prev.device)}` : ''
          return { tone: 'info', text: `Agent moved to ${at} (resumed${from}) · epoch ${e.body.epoch}`, system: true }
        }
        case 'revival':
          return { tone: 'warn', text: `Agent moved to ${at} (revived after ${prev !== undefined ? where(prev.device) : 'its device'} stopped responding) · epoch ${e.body.epoch}`, system: true }
        case 'restart': return { tone: 'warn', text: `Agent restarted on ${at} after a crash · epoch ${e.body.epoch}`, system: true }
      }
      return undefined
    }
    case 'agent.stopped': {
      const withMessage = (n: Notice): Notice =>
        e.body.message !== undefined && e.body.message !== '' ? { ...n, detail: e.body.message } : n
      switch (e.body.reason) {
        // a turn stopped by this device's limit (turn-limits.ts): the message says how to go on
        case 'done': if (e.body.limit !== undefined) return withMessage({ tone: 'warn', text: e.body.limit === 'tokens' ? 'The agent stopped: the conversation reached its token budget' : e.body.limit === 'steps' ? 'The agent stopped: this turn reached its step limit' : 'The agent stopped at a limit' })
          return e.body.message !== undefined && e.body.message !== '' ? { tone: 'info', text: `Agent finished: ${e.body.message}` } : undefined
        case 'cancelled': return withMessage({ tone: 'info', text: 'Stopped' })
        case 'superseded': {
          const by = e.body.by !== undefined ? `${where(e.body.by.device)}'s agent (epoch ${e.body.by.epoch})` : 'an agent on another device'
          return withMessage({ tone: 'warn', text: `Agent on ${where(e.author.device)} gave way: ${by} took over`, system: true })
        }
        case 'error': return withMessage({ tone: 'error', text: 'The agent stopped on an error' })
        case 'crash-loop': return withMessage({ tone: 'error', text: ctx.name !== undefined ? `The agent on ${where(e.author.device)} kept crashing and was stopped` : 'The agent kept crashing and was stopped', system: true })
      }
      return undefined
    }
    case 'note': return { tone: 'info', text: e.body.text }
    // the entries above stay; the model is told this summary in their place
    case 'compaction': return { tone: 'info', text: `Compacted: from here the model continues from a summary of the conversation above${e.body.focus !== undefined ? ` (focus: ${e.body.focus})` : ''}`, detail: e.body.summary }
    // a card in the transcript, so its children (on the same branch) read in context
    case 'unknown': return { tone: 'info', ...unknownEntryNotice(e) }
    default: return undefined
  }
}
