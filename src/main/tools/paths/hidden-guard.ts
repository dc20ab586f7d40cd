/**
 * The sandbox's read rule, for what the host opens itself on the agent's behalf (the file
 * tools, the project instructions): nothing hidden is reached, by any spelling of its path
 * (the hidden set's forms, checked against every path walked, symlinks resolved) nor by
 * identity (what was seen at a hidden path, renamed, moved or hard-linked, is still hidden).
 * Applied during the walk (beneath.ts) to the very directories and file it opens.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { WalkGuard } from './beneath'
import { hiddenContaining } from '../sandbox/hidden-paths'

export function identity (st: fs.Stats): string {
  // birthtime tells a renamed directory (kept) from a new file on a reused inode number
  return `${st.dev}:${st.ino}:${st.birthtimeMs}`
}

/** Files seen at some paths, by identity, kept after they move. Bounded; the oldest go first. */
export class SeenFiles {
  private readonly at = new Map<string, string>()
  /** follow: a symlink's target is what was seen (a hidden path); else the name itself (a protected one) */
  constructor (private readonly follow: boolean, private readonly max = 4096) {}

  /** Looks at `paths` and remembers what is there. */
  remember (paths: readonly string[]): void {
    for (const p of paths) {
      let st: fs.Stats | undefined
      try { st = this.follow ? fs.statSync(p, { throwIfNoEntry: false }) : fs.lstatSync(p, { throwIfNoEntry: false }) } catch { continue }
      if (st === undefined) continue
      const id = identity(st)
      this.at.delete(id)
      this.at.set(id, p)
      if (this.at.size > this.max) this.at.delete(this.at.keys().next().value as string)
    }
  }

  /** The path `st` was seen at, if any. */
  seenAt (st: fs.Stats): string | undefined {
    return this.at.get(identity(st))
  }
}

const hiddenSeen = new SeenFiles(true)

// A hidden set (mostly outside the working directory, the user's to change) is looked at
// again at most once a second: that is a second's delay for a hidden path made meanwhile.
const HIDDEN_LOOK_TTL_MS = 1000
/** When each hidden set was last looked at (a few sets: one per conversation's policy). */
const looked = new Map<string, number>()

function noteHidden (forms: readonly string[]): void {
  const key = forms.join('\0')
  const now = Date.now()
  const at = looked.get(key)
  if (at !== undefined && now - at <= HIDDEN_LOOK_TTL_MS) return
  looked.delete(key)
  looked.set(key, now)
  if (looked.size > 64) looked.delete(looked.keys().next().value as string)
  hiddenSeen.remember(forms)
}

/** What is hidden, for a walk. */
export interface HiddenRules {
  /** the hidden path `st` is (renamed, moved or hard-linked, it is the same file), if any */
  hiddenAs (st: fs.Stats): string | undefined
  /** the hidden path that contains the absolute path `p`, by name, if any */
  hiddenName (p: string): string | undefined
}

/** The rules for the hidden set `forms` (every spelling: hiddenForms), what is at them noted first. */
export function hiddenRules (forms: readonly string[]): HiddenRules {
  noteHidden(forms)
  return { hiddenAs: st => hiddenSeen.seenAt(st), hiddenName: p => hiddenContaining(p, forms) }
}

/** What a walk met that is hidden: a path leading into `hidden`, or a file that is it. */
export type HiddenMet =
  | { by: 'name'; hidden: string; logical: readonly string[]; viaLink: boolean }
  | { by: 'identity'; hidden: string; logical: readonly string[] }

/** The read part of a walk's guard beneath `root`: whatever is hidden is refused, in `words`. */
export function hiddenGuard (root: string, rules: HiddenRules, words: (met: HiddenMet) => string): WalkGuard {
  return {
    path (logical, viaLink) {
      const h = rules.hiddenName(path.join(root, ...logical))
      return h === undefined ? undefined : words({ by: 'name', hidden: h, logical, viaLink })
    },
    reached (st, logical) {
      const h = rules.hiddenAs(st)
      return h === undefined ? undefined : words({ by: 'identity', hidden: h, logical })
    }
  }
}
