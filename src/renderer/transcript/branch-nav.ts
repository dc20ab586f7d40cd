// Where the shown branch forks, and how to step to a sibling branch ("‹ 1/2 ›").
import type { Entry } from '../../shared/entry/entry'

/** The alternatives at one entry of the shown branch: it and its siblings, oldest first. */
export interface Fork {
  /** the entry on the shown branch */
  at: string
  /** 0-based position of `at` among its siblings */
  index: number
  count: number
  /** the sibling before / after, to select */
  prev?: string
  next?: string
  /** the names given to the branches at `at`, `prev` and `next` (branch.name), for the switcher's tooltips */
  names?: { at?: string; prev?: string; next?: string }
}

export type ChildrenOf = (id: string) => readonly Entry[]
/** the name given to the branch starting at an entry, if any */
export type BranchNameOf = (entry: string) => string | undefined

/** The fork at `branch[i]`, if its parent (the entry before it on the branch) has several children. */
export function forkAt (branch: readonly Entry[], i: number, children: ChildrenOf, nameOf?: BranchNameOf): Fork | undefined {
  const entry = branch[i]
  const parent = branch[i - 1]
  if (entry === undefined || parent === undefined) return undefined
  const siblings = children(parent.id)
  if (siblings.length < 2) return undefined
  const index = siblings.findIndex(s => s.id === entry.id)
  if (index === -1) return undefined
  const fork: Fork = { at: entry.id, index, count: siblings.length }
  const prev = siblings[index - 1]
  const next = siblings[index + 1]
  if (prev !== undefined) fork.prev = prev.id
  if (next !== undefined) fork.next = next.id
  if (nameOf !== undefined) {
    const names: NonNullable<Fork['names']> = {}
    for (const [k, e] of [['at', entry], ['prev', prev], ['next', next]] as const) {
      const n = e === undefined ? undefined : nameOf(e.id)
      if (n !== undefined) names[k] = n
    }
    if (Object.keys(names).length > 0) fork.names = names
  }
  return fork
}

/** Every fork along a branch, by the index of the entry in the branch. */
export function forksOf (branch: readonly Entry[], children: ChildrenOf, nameOf?: BranchNameOf): Map<number, Fork> {
  const out = new Map<number, Fork>()
  for (let i = 1; i < branch.length; i++) {
    const f = forkAt(branch, i, children, nameOf)
    if (f !== undefined) out.set(i, f)
  }
  return out
}

/** The sibling to select when stepping `dir` from a fork (undefined at either end). */
export function stepFork (fork: Fork, dir: -1 | 1): string | undefined {
  return dir < 0 ? fork.prev : fork.next
}
