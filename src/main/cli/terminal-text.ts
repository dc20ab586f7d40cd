// What the CLI prints reaches the terminal as text only: model replies, tool output, titles and
// device names written by peers can neither drive the terminal (clipboard, title, screen,
// reports the terminal answers as if typed) nor hide what is shown (\r, backspace).

const ESC = 0x1b
const CSI8 = 0x9b

/**
 * `text` with every terminal control made harmless:
 * - CSI sequences (ESC [ or 8-bit CSI, parameters, intermediates, final byte: colours,
 *   cursor moves, screen clears, device reports) are removed: their parameters are digits
 *   and punctuation, so no readable text goes with them, and coloured tool output stays legible;
 * - every other control is shown in caret notation, as `cat -v` does: ESC as `^[`, so OSC,
 *   DCS, SOS, PM and APC strings stay visible, inert (`^[]52;c;…^G`), and show the attempt;
 *   a C1 control as its 7-bit equivalent (U+009D OSC as `^[]`); C0 and DEL as `^G`, `^?`;
 * - \r and backspace, which overwrite a shown line, as `^M` and `^H`, except \r before \n
 *   (a CRLF line end, common in files and HTTP bodies), which is dropped.
 * \n and \t pass, and so does every other character (all of non-ASCII Unicode). Idempotent.
 */
export function terminalSafe (text: string): string {
  // most text has no control at all: one regex scan (fast, native) instead of the loop below
  if (!ANY_CONTROL.test(text)) return text
  let out = ''
  let plain = 0 // start of the run of characters not yet copied
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (!isControl(c)) continue
    out += text.slice(plain, i)
    plain = i + 1
    if (c === 0x0d && text.charCodeAt(i + 1) === 0x0a) continue
    const csiEnd = c === ESC && text.charCodeAt(i + 1) === 0x5b ? csiEndAt(text, i + 2) : c === CSI8 ? csiEndAt(text, i + 1) : -1
    if (csiEnd >= 0) { i = csiEnd; plain = i + 1; continue }
    out += caret(c)
  }
  return out + text.slice(plain)
}

/** Every character isControl() matches. */
const ANY_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/ // eslint-disable-line no-control-regex

/** \t and \n are the only controls a terminal may see. */
function isControl (c: number): boolean {
  return (c < 0x20 && c !== 0x09 && c !== 0x0a) || (c >= 0x7f && c <= 0x9f)
}

function caret (c: number): string {
  if (c >= 0x80) return '^[' + String.fromCharCode(c - 0x40) // C1 = ESC + (c - 0x40)
  return '^' + String.fromCharCode(c ^ 0x40)
}

/** The index of a CSI's final byte, its parameters starting at `from`; -1 if it is not a whole one there. */
function csiEndAt (text: string, from: number): number {
  let i = from
  while (i < text.length && isParam(text.charCodeAt(i))) i++
  while (i < text.length && isIntermediate(text.charCodeAt(i))) i++
  return i < text.length && isFinal(text.charCodeAt(i)) ? i : -1
}

const isParam = (c: number): boolean => c >= 0x30 && c <= 0x3f
const isIntermediate = (c: number): boolean => c >= 0x20 && c <= 0x2f
const isFinal = (c: number): boolean => c >= 0x40 && c <= 0x7e

/** A held tail no longer than this is waited on; a longer one is no sequence worth keeping whole. */
const MAX_HELD = 64

/**
 * Where a tail of `text` starts that the next chunk may complete into a CSI sequence or a
 * CRLF (`text.length` if none): a stream cut there prints as the whole text would.
 */
export function unfinishedTail (text: string): number {
  const end = text.length
  if (end > 0 && text.charCodeAt(end - 1) === 0x0d) return end - 1
  for (let i = end - 1; i >= 0 && i >= end - MAX_HELD; i--) {
    const c = text.charCodeAt(i)
    if (c === ESC || c === CSI8) {
      let j = c === ESC ? i + 1 : i
      if (c === ESC) {
        if (j === end) return i
        if (text.charCodeAt(j) !== 0x5b) return end
      }
      j++
      while (j < end && isParam(text.charCodeAt(j))) j++
      while (j < end && isIntermediate(text.charCodeAt(j))) j++
      return j === end ? i : end
    }
    if (!isParam(c) && !isIntermediate(c) && c !== 0x5b) return end
  }
  return end
}

/**
 * Prints a stream of chunks through terminalSafe, holding back a tail that the next chunk
 * may complete (a CSI sequence or CRLF cut between chunks); flush() prints what is held.
 */
export function terminalSafeWriter (write: (text: string) => void): { write: (text: string) => void; flush: () => void } {
  let held = ''
  return {
    write (text) {
      const all = held + text
      const cut = unfinishedTail(all)
      held = all.slice(cut)
      const safe = terminalSafe(all.slice(0, cut))
      if (safe !== '') write(safe)
    },
    flush () {
      const safe = terminalSafe(held)
      held = ''
      if (safe !== '') write(safe)
    }
  }
}

/**
 * JSON for a terminal, still the same JSON: JSON.stringify escapes C0 controls but leaves DEL
 * and C1 raw; they are escaped too (\u009b), so nothing is lost and terminalSafe has nothing to change.
 */
export function terminalJson (value: unknown): string {
  return JSON.stringify(value, null, 2).replace(/[\u007f-\u009f]/g, c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
}

const LINE_BREAKS = /[\r\n\t\v\f\u0085\u2028\u2029]+/g

/** Text for one cell of a one-line row: line breaks and tabs become a space (a peer's title cannot forge rows). */
export function oneLine (text: string): string {
  return text.search(LINE_BREAKS) === -1 ? text : text.replace(LINE_BREAKS, ' ')
}
