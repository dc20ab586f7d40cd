/**
 * Keeps long tool output within a budget of characters and lines: the head and the tail
 * stay, the middle is replaced by one note line ("… 12,345 characters (210 lines) cut …").
 * Pure.
 */

export interface OutputLimits {
  /** at most this many characters in the result, the note included (default 30,000) */
  maxChars?: number
  /** at most this many lines in the result, the note included (default 1,000) */
  maxLines?: number
  /** share of the budget given to the head; the tail gets the rest (default 0.4: errors tend to be at the end) */
  headShare?: number
}

export interface LimitedOutput {
  text: string
  truncated: boolean
  /** characters of the original kept at the start and at the end */
  keptHead: number
  keptTail: number
  /** characters and line breaks of the original that were cut */
  cutChars: number
  cutLines: number
}

export const DEFAULT_MAX_CHARS = 30_000
export const DEFAULT_MAX_LINES = 1_000
/** below this many characters there is no room for a note plus some text: the result is a hard cut */
const MIN_CHARS_FOR_NOTE = 48

/** 12345 → "12,345" (no locale data needed) */
export function groupDigits (n: number): string {
  return String(Math.trunc(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',')
}

/** Lines as a reader counts them: one more than the line breaks. */
export function countLines (text: string): number {
  let n = 1
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++
  return n
}

function countBreaks (text: string): number {
  return countLines(text) - 1
}

export function cutNote (cutChars: number, cutLines: number): string {
  const lines = cutLines > 0 ? ` (${groupDigits(cutLines)} line${cutLines === 1 ? '' : 's'})` : ''
  return `… ${groupDigits(cutChars)} characters${lines} cut …`
}

/** Position just after the n-th line break from the start (0 → 0). */
function afterNthBreak (text: string, n: number): number {
  let pos = 0
  for (let k = 0; k < n; k++) {
    const i = text.indexOf('\n', pos)
    if (i === -1) return text.length
    pos = i + 1
  }
  return pos
}

/** Start of the last n lines (n ≥ 1); 0 when the text has fewer. */
function startOfLastLines (text: string, n: number): number {
  if (n <= 0) return text.length
  let pos = text.length
  for (let k = 0; k < n; k++) {
    const i = text.lastIndexOf('\n', pos - 1)
    if (i === -1) return 0
    pos = i
    if (k === n - 1) return i + 1
  }
  return 0
}

function assemble (text: string, head: number, tail: number, maxLines: number, dropped: Dropped): string {
  const headText = text.slice(0, head)
  const tailText = text.slice(text.length - tail)
  const middle = text.slice(head, text.length - tail)
  const note = cutNote(middle.length + dropped.chars, countBreaks(middle) + dropped.lines)
  // The note on its own line when the line budget allows, else inline.
  const before = headText === '' || headText.endsWith('\n') ? '' : '\n'
  const after = tailText === '' ? '' : '\n'
  const out = headText + before + note + after + tailText
  if (countLines(out) <= maxLines) return out
  return headText + (before === '' ? '' : ' ') + note + (after === '' ? '' : ' ') + tailText
}

/** Characters and line breaks already dropped from the middle of `text` (by OutputAccumulator). */
interface Dropped { chars: number; lines: number }
const NOTHING_DROPPED: Dropped = { chars: 0, lines: 0 }

export function limitOutput (text: string, limits: OutputLimits = {}): LimitedOutput {
  return limitWithDropped(text, limits, NOTHING_DROPPED)
}

function limitWithDropped (text: string, limits: OutputLimits, dropped: Dropped): LimitedOutput {
  const maxChars = Math.max(1, Math.floor(limits.maxChars ?? DEFAULT_MAX_CHARS))
  const maxLines = Math.max(1, Math.floor(limits.maxLines ?? DEFAULT_MAX_LINES))
  const share = Math.min(1, Math.max(0, limits.headShare ?? 0.4))
  if (dropped.chars === 0 && text.length <= maxChars && countLines(text) <= maxLines) {
    return { text, truncated: false, keptHead: text.length, keptTail: 0, cutChars: 0, cutLines: 0 }
  }
  if (maxChars < MIN_CHARS_FOR_NOTE) {
    let head = text.slice(0, maxChars)
    if (countLines(head) > maxLines) head = head.slice(0, afterNthBreak(head, maxLines) - 1)
    return { text: head, truncated: true, keptHead: head.length, keptTail: 0, cutChars: text.length - head.length + dropped.chars, cutLines: countBreaks(text.slice(head.length)) + dropped.lines }
  }

  // Lines first: the note takes one line, head and tail share the rest.
  let head = text.length
  let tail = text.length
  if (countLines(text) > maxLines) {
    const headLines = Math.floor((maxLines - 1) * share)
    head = afterNthBreak(text, headLines) // headLines whole lines, each ending in '\n'
    tail = text.length - startOfLastLines(text, maxLines - 1 - headLines)
  }

  // Then characters: room for the note's worst case (everything cut) is kept.
  const charBudget = maxChars - (cutNote(text.length + dropped.chars, countBreaks(text) + dropped.lines).length + 2)
  tail = Math.min(tail, Math.max(Math.floor(charBudget * (1 - share)), charBudget - head))
  head = Math.min(head, charBudget - tail)

  // Cutting only removes line breaks, so the limits hold; the loop guards against rounding.
  let out = assemble(text, head, tail, maxLines, dropped)
  while ((out.length > maxChars || countLines(out) > maxLines) && head + tail > 0) {
    if (tail >= head) tail = Math.max(0, tail - Math.max(1, Math.ceil(tail / 8)))
    else head = Math.max(0, head - Math.max(1, Math.ceil(head / 8)))
    out = assemble(text, head, tail, maxLines, dropped)
  }
  const middle = text.slice(head, text.length - tail)
  return { text: out, truncated: true, keptHead: head, keptTail: tail, cutChars: middle.length + dropped.chars, cutLines: countBreaks(middle) + dropped.lines }
}

/**
 * Collects streamed output in bounded memory: the first and last 2 × maxChars characters
 * are kept, the middle only counted. finish() gives what limitOutput would have given for
 * the whole text.
 */
export class OutputAccumulator {
  private head = ''
  private tail = ''
  private droppedChars = 0
  private droppedLines = 0
  private readonly keep: number

  constructor (private readonly limits: OutputLimits = {}) {
    this.keep = 2 * Math.max(MIN_CHARS_FOR_NOTE, Math.floor(limits.maxChars ?? DEFAULT_MAX_CHARS))
  }

  /** characters seen so far */
  get length (): number {
    return this.head.length + this.droppedChars + this.tail.length
  }

  push (chunk: string): void {
    if (this.head.length < this.keep) {
      const take = chunk.slice(0, this.keep - this.head.length)
      this.head += take
      chunk = chunk.slice(take.length)
    }
    if (chunk === '') return
    this.tail += chunk
    if (this.tail.length > 2 * this.keep) {
      const drop = this.tail.slice(0, this.tail.length - this.keep)
      this.droppedChars += drop.length
      this.droppedLines += countBreaks(drop)
      this.tail = this.tail.slice(drop.length)
    }
  }

  finish (): LimitedOutput {
    return limitWithDropped(this.head + this.tail, this.limits, { chars: this.droppedChars, lines: this.droppedLines })
  }
}
