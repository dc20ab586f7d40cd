import type { Entry, UnknownEntry } from './entry'

/** What a person is told of an entry this version does not understand (UI card, `arbor show`). */
export function unknownEntryNotice (e: UnknownEntry): { text: string; detail: string } {
  return {
    text: 'An entry from a newer version of Arbor',
    detail: e.body.problem === undefined
      ? `Its kind, "${e.body.kind}", is new to this version: update Arbor on this device to see it.`
      : `This version cannot read it (${e.body.problem}): update Arbor on this device to see it.`
  }
}

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
    case 'compaction': return `the conversation up to here was compacted${e.body.focus !== undefined ? ` (focus: ${e.body.focus})` : ''}; the model continues from this summary: ${e.body.summary}`
    case 'unknown': {
      const n = unknownEntryNotice(e)
      return `${n.text}. ${n.detail}`
    }
  }
}

/** The first line of an entry's text, cut to `width` characters. */
export function entryLine (e: Entry, width: number): string {
  const text = entryText(e).replace(/\s+/g, ' ').trim()
  return text.length <= width ? text : text.slice(0, Math.max(0, width - 1)) + '…'
}
