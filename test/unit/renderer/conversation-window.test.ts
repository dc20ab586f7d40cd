// Opening a conversation as a window (the end of the shown branch, conversation.open with
// `tail`): the window shows what the whole shows at its end, and once the rest is added — with
// live entries arriving before, between and after — the store is the one opened whole.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { ConversationDto } from '../../../src/shared/api/api'
import { branchWindow } from '../../../src/shared/conversation/branch-window'
import { ConversationDag } from '../../../src/shared/conversation/conversation-dag'
import { orderedEntries } from '../../../src/shared/conversation/conversation-export'
import type { Entry } from '../../../src/shared/entry/entry'
import { ConversationStore } from '../../../src/renderer/chat/conversation-store'
import { forksOf } from '../../../src/renderer/transcript/branch-nav'

const DEV = 'd'.repeat(64)
const C = 'c'.repeat(64)
const hex = (n: number): string => n.toString(16).padStart(64, '0')
const root: Entry = { v: 1, id: C, conversation: C, parents: [], author: { device: DEV }, ts: 0, kind: 'conversation', body: { title: 'Long', nonce: 'n' } }

/** Entry i hangs under an earlier one: mostly the one before (a long chain), sometimes a fork. */
function entriesOf (picks: Array<{ back: number; kind: 0 | 1 | 2 }>): Entry[] {
  const out: Entry[] = [root]
  picks.forEach((p, i) => {
    const parent = (out[Math.max(0, out.length - 1 - p.back)] as Entry).id
    const n = i + 1
    const base = { v: 1 as const, id: hex(n), conversation: C, parents: [parent], author: { device: DEV }, ts: n }
    out.push(p.kind === 0
      ? { ...base, kind: 'user', body: { text: `u${n}` } }
      : p.kind === 1
        ? { ...base, kind: 'assistant', body: { text: `a${n}`, usage: { input: n, output: 1 } } }
        : { ...base, kind: 'meta', body: { key: 'title', value: `t${n}`, hlc: { wall: n, counter: 0, device: DEV } } })
  })
  return out
}

const pick = fc.record({ back: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 8 }) }), kind: fc.constantFrom<0 | 1 | 2>(0, 1, 1, 0, 1, 2) })

function dtoOf (dag: ConversationDag, selected: string | undefined, tail?: number): ConversationDto {
  const base = { id: C, title: dag.title(), running: false, agents: [], usage: { input: 0, output: 0 }, ...(selected !== undefined ? { selected } : {}) }
  if (tail === undefined || dag.size <= tail) return { ...base, entries: orderedEntries(dag), waiting: dag.waiting() }
  const w = branchWindow(dag, selected, tail)
  if (w === undefined) throw new Error('no branch')
  return { ...base, entries: w.entries, window: { assumed: w.assumed, tip: w.tip, entries: dag.size, heads: dag.headIds().length } }
}

const ids = (es: readonly Entry[]): string[] => es.map(e => e.id)

describe('a conversation opened as a window', () => {
  it('shows the end of the same branch, with the same forks, heads and title; completed, it is the store opened whole', () => {
    fc.assert(fc.property(
      fc.array(pick, { minLength: 1, maxLength: 120 }), fc.array(pick, { maxLength: 20 }), fc.integer({ min: 1, max: 40 }), fc.nat(), fc.nat(30),
      (picks, later, tail, sel, split) => {
        const all = entriesOf([...picks, ...later])
        const first = all.slice(0, picks.length + 1)
        const dag = new ConversationDag(C, first)
        const joined = [...dag.entries()]
        const selected = (joined[sel % joined.length] as Entry).id
        const whole = new ConversationStore(dtoOf(dag, selected))
        const win = new ConversationStore(dtoOf(dag, selected, tail))
        // the window's branch is the end of the whole one (from its first held entry), from a user message
        const wb = win.branch()
        const fb = whole.branch()
        const from = fb.length - wb.length
        expect(ids(fb.slice(from))).toEqual(ids(wb))
        expect(wb.length).toBeGreaterThanOrEqual(Math.min(tail, fb.length))
        if (from > 1) expect(wb.find(e => e.kind !== 'meta')?.kind).toBe('user') // a meta entry above it may be held
        // the same forks along it (but at its first entry, whose parent it leaves out)
        const wf = [...forksOf(wb, id => win.dag.children(id)).values()]
        const ff = [...forksOf(fb, id => whole.dag.children(id))].filter(([i]) => i > from).map(([, f]) => f)
        expect(wf).toEqual(ff)
        expect(win.headCount()).toBe(whole.headCount())
        expect(win.snapshot().title).toBe(whole.snapshot().title)
        // live entries before and after the rest arrives, as events do
        const more = all.slice(first.length)
        const events = (es: Entry[]): void => { for (const s of [win, whole]) s.apply({ type: 'entries', conversation: C, entries: es }) }
        events(more.slice(0, split))
        const full = new ConversationDag(C, all.slice(0, first.length + Math.min(split, more.length)))
        win.complete(dtoOf(full, selected))
        events(more.slice(split))
        expect(win.snapshot().window).toBeUndefined()
        expect(win.dag.windowed).toBe(false)
        expect(win.dag.snapshot()).toEqual(whole.dag.snapshot())
        expect(ids(win.branch())).toEqual(ids(whole.branch()))
        expect(win.headCount()).toBe(whole.headCount())
      }), { numRuns: 300 })
  })

  it('loads the rest once when asked (the tree, an entry outside it) and not at all when it is whole', async () => {
    const all = entriesOf(Array.from({ length: 60 }, (_, i) => ({ back: i === 30 ? 3 : 0, kind: (i % 2) as 0 | 1 })))
    const dag = new ConversationDag(C, all)
    let calls = 0
    const store = new ConversationStore(dtoOf(dag, undefined, 10), { loadAll: async () => { calls++; return dtoOf(dag, undefined) } })
    expect(store.snapshot().window).toEqual({ entries: 61, heads: 2 })
    expect(store.dag.size).toBeLessThan(20)
    store.select(hex(2)) // outside the window
    await Promise.all([store.loadAll(), store.loadAll()])
    expect(calls).toBe(1)
    expect(store.dag.size).toBe(61)
    expect(ids(store.branch())).toEqual(ids(dag.branch(hex(2))))
    const whole = new ConversationStore(dtoOf(dag, undefined, 100), { loadAll: async () => { calls++; return dtoOf(dag, undefined) } })
    await whole.loadAll()
    expect(calls).toBe(1)
    expect(whole.snapshot().window).toBeUndefined()
  })
})
