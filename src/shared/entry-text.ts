import type { Entry } from './entry'

/** The words of an entry, as one would read them in a transcript. */
export function entryText (e: Entry): string {
  switch (e.kind) {
    case 'conversation': return e.body.title
    case 'user':
    case 'note':
      return e.body.text
    case 'assistant': {
      const calls = (e.body.toolCalls ?? []).map(c => `[calls ${c.name}]`).join(' ')
      return [e.body.text, calls].filter(Boolean).join(' ')
    }
    case 'tool.intent': return `${e.body.tool} ${JSON.stringify(e.body.args)} (${e.body.effect})`
    case 'tool.result': return `${e.body.status}: ${e.body.output}`
    case 'agent.started': return `agent started (epoch ${e.body.epoch}, ${e.body.reason})`
    case 'agent.stopped': return `agent stopped (epoch ${e.body.epoch}, ${e.body.reason})${e.body.message !== undefined ? ': ' + e.body.message : ''}`
    case 'meta': return `${e.body.key} = ${JSON.stringify(e.body.value)}`
  }
}

/** The first line of an entry's text, cut to `width` characters. */
export function entryLine (e: Entry, width: number): string {
  const text = entryText(e).replace(/\s+/g, ' ').trim()
  return text.length <= width ? text : text.slice(0, Math.max(0, width - 1)) + '…'
}
