// A V8 CPU profile (node:inspector's Profiler, or `node --cpu-prof`) summarised for a bench
// line: self time per function and per file, and each sample charged to the innermost frame
// of Arbor's own code (src/) on its stack, so time inside JSON, zod or Hypercore called from
// the store is shown under the store's function that asked for it.
import path from 'node:path'
import { round } from './util'

export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

export interface ProfileSummary {
  /** wall time the profile covers */
  totalMs: number
  /** the main thread's time outside (idle): waiting for I/O, storage threads and timers */
  idleMs: number
  gcMs: number
  /** self time by file (a package under node_modules by its name) */
  byFile: Array<{ file: string; ms: number; pct: number }>
  /** self time by function */
  byFunction: Array<{ fn: string; ms: number; pct: number }>
  /** time by the innermost function of src/ on the stack (what of Arbor's caused it) */
  byArborFunction: Array<{ fn: string; ms: number; pct: number }>
  /** time by category, from the innermost src/ frame, else the file (see classify) */
  byCategory: Record<string, number>
}

type Frame = CpuProfile['nodes'][number]['callFrame']

/** A frame's file, short: src/… relative to the repository, node_modules/<package>, node:…, or V8's (name). */
export function frameFile (frame: Frame, root: string): string {
  const url = frame.url
  if (url === '') return frame.functionName.startsWith('(') ? frame.functionName : '(native)'
  const p = url.startsWith('file://') ? decodeURIComponent(new URL(url).pathname) : url
  const nm = p.lastIndexOf('/node_modules/')
  if (nm !== -1) {
    const rest = p.slice(nm + '/node_modules/'.length).split('/')
    return 'node_modules/' + (rest[0]?.startsWith('@') === true ? `${rest[0]}/${rest[1] ?? ''}` : rest[0] ?? '')
  }
  if (p.startsWith(root + path.sep)) return path.relative(root, p)
  return p
}

/**
 * Summarises a profile. `classify(arbor, file, leafFn)` names the category of a sample from
 * the innermost src/ frame (`function file`, or null if there is none), the leaf's file
 * ("(native) under <file>" for a builtin) and function.
 */
export function summarise (profile: CpuProfile, root: string, classify: (arbor: string | null, file: string, leaf: string) => string, top = 25): ProfileSummary {
  const byId = new Map(profile.nodes.map(n => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  // Lines of src/ are left out: run through tsx, V8 reports them all as line 1.
  const name = (n: CpuProfile['nodes'][number]): string => {
    const file = frameFile(n.callFrame, root)
    // A native function's name is often not its own (an addon's binding called from
    // rocksdb-native or sodium-native shows as listAttrsSync, snapshotDestroy…): named by its caller.
    if (file === '(native)' && n.callFrame.functionName !== '') {
      const up = parent.get(n.id)
      const caller = up === undefined ? undefined : byId.get(up)
      if (caller !== undefined && caller.callFrame.url !== '') return `(native) under ${name(caller)}`
    }
    return `${n.callFrame.functionName || '(anonymous)'} ${file}${file.startsWith('src' + path.sep) || file.startsWith('(') ? '' : `:${n.callFrame.lineNumber + 1}`}`
  }
  const arborOf = new Map<number, string | null>()
  const innermostArbor = (id: number): string | null => {
    const known = arborOf.get(id)
    if (known !== undefined) return known
    const n = byId.get(id)
    let out: string | null = null
    if (n !== undefined) {
      const file = frameFile(n.callFrame, root)
      if (file.startsWith('src' + path.sep)) out = name(n)
      else {
        const up = parent.get(id)
        out = up === undefined ? null : innermostArbor(up)
      }
    }
    arborOf.set(id, out)
    return out
  }
  const callerFile = (id: number): string => {
    for (let up = parent.get(id); up !== undefined; up = parent.get(up)) {
      const n = byId.get(up)
      if (n !== undefined && n.callFrame.url !== '') return frameFile(n.callFrame, root)
    }
    return '(none)'
  }
  const files = new Map<string, number>()
  const fns = new Map<string, number>()
  const arbor = new Map<string, number>()
  const cats: Record<string, number> = {}
  const add = (m: Map<string, number>, k: string, us: number): void => { m.set(k, (m.get(k) ?? 0) + us) }
  let idle = 0
  let gc = 0
  let sampled = 0
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i + 1] ?? 0 // the time until the next sample belongs to this one
    const n = byId.get(id)
    if (n === undefined) return
    const fn = n.callFrame.functionName
    if (fn === '(idle)') { idle += us; return }
    if (fn === '(garbage collector)') gc += us
    sampled += us
    const file = frameFile(n.callFrame, root)
    add(files, file, us)
    add(fns, name(n), us)
    const a = innermostArbor(id)
    add(arbor, a ?? `(not under src/) ${file}`, us)
    // V8's builtins (JSON, string and buffer work) come as "(native)" under names it cannot
    // resolve: they are charged to the nearest caller with a file.
    const cat = classify(a, file === '(native)' ? `(native) under ${callerFile(id)}` : file, fn)
    cats[cat] = (cats[cat] ?? 0) + us
  })
  const list = (m: Map<string, number>, key: 'file' | 'fn'): Array<{ file: string; ms: number; pct: number }> & Array<{ fn: string; ms: number; pct: number }> =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, us]) => ({ [key]: k, ms: round(us / 1000, 1), pct: round(100 * us / Math.max(1, sampled), 1) })) as never
  return {
    totalMs: round((profile.endTime - profile.startTime) / 1000, 1),
    idleMs: round(idle / 1000, 1),
    gcMs: round(gc / 1000, 1),
    byFile: list(files, 'file'),
    byFunction: list(fns, 'fn'),
    byArborFunction: list(arbor, 'fn'),
    byCategory: Object.fromEntries(Object.entries(cats).sort((a, b) => b[1] - a[1]).map(([k, us]) => [k, round(us / 1000, 1)]))
  }
}
