// A branch's name: a `meta` setting keyed by the entry the branch starts at (DESIGN.md,
// "Mutable state"), so it is last-writer-wins by HLC and every device shows the same name; an
// older device keeps the entry and never reads the key. A peer writes whatever it likes under
// the key, so a name is cleaned where it is read, not only where it is written.

/** The longest name kept (longer ones, from a peer, are cut) */
export const BRANCH_NAME_MAX = 80

/** The meta key naming the branch that starts at `entry` (a full entry id). */
export function branchNameKey (entry: string): string {
  return `branch.name:${entry}`
}

// C0, DEL, C1 and the Unicode line/paragraph separators and bidi overrides: a name is one plain line
// eslint-disable-next-line no-control-regex -- the controls are what is taken out
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]+/g

/**
 * A meta value as a name to show: one line, no controls, at most BRANCH_NAME_MAX characters;
 * undefined when there is none (not a string, or empty: a name cleared by writing '').
 */
export function branchName (value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined
  const clean = value.replace(UNSAFE, ' ').replace(/\s+/g, ' ').trim()
  if (clean === '') return undefined
  if (clean.length <= BRANCH_NAME_MAX) return clean
  const chars = Array.from(clean) // code points: a cut never halves a surrogate pair
  return chars.length <= BRANCH_NAME_MAX ? clean : chars.slice(0, BRANCH_NAME_MAX - 1).join('').trimEnd() + '…'
}
