/**
 * How deeply arrays and objects may nest in JSON Arbor takes from elsewhere: an entry's stored
 * text (the entry object itself the first level), a feed header, a model's tool-call arguments,
 * a line of an imported session. Part of the entry envelope: never written deeper, always read
 * this deep (the number is justified in docs/ARCHITECTURE.md, section 13).
 */
export const MAX_JSON_DEPTH = 1000

/**
 * How deeply the arrays and objects of a JSON text nest (0 for a scalar, 1 for `[]`), read in
 * one pass over its characters and no recursion, before anything parses or walks it: brackets
 * inside strings do not count. Past `limit` it stops and returns how deep it got (limit + 1).
 * Of valid JSON, the depth of what JSON.parse gives; of anything else, a number no less useful
 * for refusing it (JSON.parse says what else is wrong).
 */
export function jsonDepth (text: string, limit = Infinity): number {
  let depth = 0
  let max = 0
  const n = text.length
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      // to the string's closing quote: the next quote after an even run of backslashes
      let j = i
      for (;;) {
        j = text.indexOf('"', j + 1)
        if (j === -1) return max
        let k = j - 1
        while (text.charCodeAt(k) === BACKSLASH) k--
        if ((j - 1 - k) % 2 === 0) break
      }
      i = j
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) {
        max = depth
        if (max > limit) return max
      }
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--
    }
  }
  return max
}

/** Whether a JSON text nests deeper than `max` levels (jsonDepth, stopping there). */
export function nestsDeeperThan (text: string, max = MAX_JSON_DEPTH): boolean {
  return jsonDepth(text, max) > max
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
