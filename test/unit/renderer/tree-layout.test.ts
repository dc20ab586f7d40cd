// The tree view's layout: turns as nodes, pre-order rows, lanes at forks, the shown branch.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { ConversationDag } from '../../../src/shared/conversation/conversation-dag'
import type { Entry, EntryDraft } from '../../../src/shared/entry/entry'
import { DEVICE_COLOURS, deviceColour, laneRuns, layoutTree, shortLabel, visibleWindow, type TreeNode } from '../../../src/renderer/tree/tree-layout'
import { ariaParent, canFold, foldRows, hiddenText, shownIndexOf, unfoldPathTo } from '../../../src/renderer/tree/tree-fold'
import { ariaPositions } from '../../../src/renderer/tree/tree-aria'
import { treeLayoutOf } from '../../../src/renderer/tree/layout-cache'
import { BRANCH_NAME_MAX, branchName, branchNameKey } from '../../../src/shared/conversation/branch-name'
import { expectLinear } from '../../helpers/linear-growth'

const A = 'a'.repeat(64)
const B = 'b'.repeat(64)
let counter = 0
const hex = (): string => (++counter).toString(16).padStart(64, '0')

function tree () {
  const root: Entry = { v: 1, id: hex(), conversation: '', parents: [], author: { device: A }, ts: 1, kind: 'conversation', body: { title: 'Trip', nonce: 'n' } }
  ;(root as { conversation: string }).conversation = root.id
  const dag = new ConversationDag(root.id, [root])
  let ts = 1
  const add = (parent: Entry, draft: Omit<EntryDraft, 'parents'>, device = A, agent?: string): Entry => {
    const author = agent === undefined ? { device } : { device, agent }
    const e = { v: 1, id: hex(), conversation: root.id, parents: [parent.id], author, ts: ++ts, kind: draft.kind, body: draft.body } as Entry
    dag.add(e)
    return e
  }
  const turn = (parent: Entry, text: string, device = A): { user: Entry; last: Entry } => {
    const user = add(parent, { kind: 'user', body: { text } }, device)
    const s = add(user, { kind: 'agent.started', body: { epoch: 1, reason: 'user' } }, device, 'agent')
    const last = add(s, { kind: 'assistant', body: { text: 'You said: ' + text } }, device, 'agent')
    return { user, last }
  }
  return { root, dag, add, turn }
}

/**
 * The DAG with what the layout asks of it counted in `asked.n`: each method call and each
 * element of an array it returns (a branch of a thousand entries is a thousand).
 */
function countedAsks (dag: ConversationDag, asked: { n: number }): ConversationDag {
  return new Proxy(dag, {
    get (target, key) {
      const v = Reflect.get(target, key, target) as unknown
      if (typeof v !== 'function') { asked.n++; return v }
      return (...args: unknown[]) => {
        const r = (v as (...a: unknown[]) => unknown).apply(target, args)
        asked.n += 1 + (Array.isArray(r) ? r.length : 0)
        return r
      }
    }
  })
}

/** A chain of `turns` turns; selected: its last entry. */
function chain (turns: number): { dag: ConversationDag; selected: string } {
  const { root, dag, turn } = tree()
  let tip: Entry = root
  for (let i = 0; i < turns; i++) tip = turn(tip, `message ${i}`).last
  return { dag, selected: tip.id }
}

/** `turns` turns, two at each level (each turn a branch point); selected: the deepest edited one. */
function forks (turns: number): { dag: ConversationDag; selected: string } {
  const { root, dag, turn } = tree()
  let tip: Entry = root
  let selected = root.id
  for (let i = 0; i < turns; i += 2) {
    selected = turn(tip, `edited ${i}`, B).user.id
    tip = turn(tip, `message ${i}`).last
  }
  return { dag, selected }
}

/**
 * The connectors join up: a line going on reaches the next row, and a line arriving comes from
 * the row above (or hangs from it: its first child at a fork).
 */
function expectConnectorsJoin (rows: readonly TreeNode[]): void {
  rows.forEach((r, i) => {
    expect(r.guide.length).toBe(r.lane)
    const next = rows[i + 1]
    for (let k = 0; k < r.lane; k++) {
      if ('│├'.includes(r.guide[k] as string)) expect('│├└').toContain(next?.guide[k] ?? 'none')
    }
    if (next !== undefined) {
      for (let k = 0; k < next.lane; k++) {
        if ('│├└'.includes(next.guide[k] as string)) expect(r.lane === k || '│├'.includes(r.guide[k] ?? ' ')).toBe(true)
      }
    }
  })
}

/** A random DAG of user messages and notes: each op hangs a new entry under an earlier one. */
const shapes = fc.array(fc.tuple(fc.nat(), fc.boolean()), { maxLength: 60 })
function randomTree (ops: Array<[number, boolean]>): { dag: ConversationDag; all: Entry[]; root: Entry } {
  const { root, dag, add } = tree()
  const all: Entry[] = [root]
  for (const [pick, user] of ops) {
    const parent = all[pick % all.length] as Entry
    all.push(user ? add(parent, { kind: 'user', body: { text: 'u' } }) : add(parent, { kind: 'note', body: { text: 'n' } }))
  }
  return { dag, all, root }
}

describe('layoutTree', () => {
  it('lays out turns in pre-order, with depths, lanes at forks and the shown branch', () => {
    const { root, dag, turn } = tree()
    const t1 = turn(root, 'Where should we go this summer with the kids and the dog?')
    const t2 = turn(t1.last, 'Somewhere warm')
    const t2b = turn(t1.last, 'Somewhere cold', B)
    const t3 = turn(t2.last, 'Spain')
    const t1b = turn(root, 'Edited first message')

    const { rows, current } = layoutTree(dag, t2b.user.id)
    expect(rows.map(r => r.id)).toEqual([root.id, t1.user.id, t2.user.id, t3.user.id, t2b.user.id, t1b.user.id])
    expect(rows.map(r => r.depth)).toEqual([0, 1, 2, 3, 2, 1])
    expect(rows.map(r => r.lane)).toEqual([0, 1, 2, 2, 2, 1])
    // the connectors `arbor tree` draws: Spain's │ joins Somewhere warm to Somewhere cold's └
    expect(rows.map(r => r.guide)).toEqual(['', '├', '│├', '││', '│└', '└'])
    expect(rows.map(r => r.onBranch)).toEqual([true, true, false, false, true, false])
    expect(current).toBe(4)
    expect(rows.map(r => r.childCount)).toEqual([2, 2, 1, 0, 0, 0])
    expect(rows.map(r => [r.siblingIndex, r.siblingCount])).toEqual([[0, 1], [0, 2], [0, 2], [0, 1], [1, 2], [1, 2]])
    expect(rows[4]?.device).toBe(B)
    expect(rows[1]?.entries).toBe(3)
    expect(rows[1]?.last).toBe(t1.last.id)
    expect(rows[1]?.select).toBe(t1.user.id)
    expect(rows[0]?.label).toBe('Trip')
    expect(rows[1]?.label).toBe('Where should we go this summer with the …')
    // picking a row shows a branch through it
    for (const r of rows) expect(dag.branch(r.select).some(e => e.id === r.id)).toBe(true)
    // without a selection, the newest head's branch is shown
    expect(layoutTree(dag).rows.filter(r => r.onBranch).map(r => r.id)).toEqual([root.id, t1b.user.id])
  })

  it('lays out a 10,000-entry chain without recursion', () => {
    const { root, dag, turn } = tree()
    let tip: Entry = root
    for (let i = 0; i < 3334; i++) tip = turn(tip, `message ${i}`).last
    expect(dag.size).toBeGreaterThan(10_000)
    const { rows, current } = layoutTree(dag)
    expect(rows.length).toBe(3335)
    expect(current).toBe(3334)
    expect(rows.every(r => r.lane === 0 && r.onBranch)).toBe(true)
    expect(rows[3334]?.depth).toBe(3334)
  })

  it('asks the DAG for work linear in its size: a chain, a fork at every turn, a selection deep in it', () => {
    for (const [shape, make] of [['a chain', chain], ['a fork at every turn', forks]] as const) {
      for (const select of [false, true]) {
        expectLinear(`${shape}${select ? ', selected' : ''}`, turns => {
          const { dag, selected } = make(turns)
          const asked = { n: 0 }
          const { rows } = layoutTree(countedAsks(dag, asked), select ? selected : undefined)
          expect(rows.length).toBe(turns + 1)
          return asked.n
        }, [250, 500, 1_000])
      }
    }
  })

  it('its linearity check sees a layout that walks each row\'s branch again', () => {
    expect(() => expectLinear('a layout asking for every row\'s branch', turns => {
      const asked = { n: 0 }
      const dag = countedAsks(chain(turns).dag, asked)
      for (const r of layoutTree(dag).rows) dag.branch(r.select)
      return asked.n
    }, [100, 200, 400])).toThrow(/every row's branch/)
  })

  it('every turn appears once, parents before children, whatever the shape', () => {
    fc.assert(fc.property(shapes, ops => {
      const { root, dag, all } = randomTree(ops)
      const { rows } = layoutTree(dag)
      const users = all.filter(e => e.kind === 'user').map(e => e.id)
      expect(rows.map(r => r.id).sort()).toEqual([root.id, ...users].sort())
      expect(rows.reduce((n, r) => n + r.entries, 0)).toBe(all.length)
      rows.forEach((r, i) => {
        if (i === 0) return
        const p = rows[r.parent]
        expect(r.parent).toBeLessThan(i)
        expect(r.depth).toBe((p?.depth ?? -1) + 1)
        expect(r.lane - (p?.lane ?? 0)).toBe((p?.childCount ?? 0) > 1 ? 1 : 0)
      })
      expectConnectorsJoin(rows)
      // pre-order: a row's subtree is contiguous
      const end = rows.map((_, i) => i)
      for (let i = rows.length - 1; i > 0; i--) { const p = (rows[i] as { parent: number }).parent; end[p] = Math.max(end[p] as number, end[i] as number) }
      rows.forEach((r, i) => { if (i > 0) expect(i).toBeLessThanOrEqual(end[r.parent] as number) })
    }), { numRuns: 100 })
  })
})

describe('folded subtrees', () => {
  it('hides a folded fork\'s subtree and says what it holds', () => {
    const { root, dag, turn } = tree()
    const t1 = turn(root, 'First')
    const t2 = turn(t1.last, 'Warm')
    turn(t2.last, 'Spain')
    turn(t1.last, 'Cold', B)
    const t1b = turn(root, 'Edited')
    const { rows, current } = layoutTree(dag, t1b.user.id)
    // root forks (t1, t1b); t1 forks (warm, cold)
    expect(rows.map(r => [r.span, r.subtreeEntries, r.subtreeTips])).toEqual([[5, 15, 3], [3, 9, 2], [1, 3, 1], [0, 0, 1], [0, 0, 1], [0, 0, 1]])
    const shown = foldRows(rows, new Set([t1.user.id]))
    expect(shown.map(r => r.label)).toEqual(['Trip', 'First', 'Edited'])
    expect(hiddenText(rows[1] as TreeNode)).toBe('9 entries, 2 branches folded')
    // a fold of a row that is not a fork, or of no row at all, changes nothing
    expect(foldRows(rows, new Set([t2.user.id, 'nothing']))).toEqual(rows)
    // the shown branch's last turn stays shown when the tree opens: its ancestors unfold
    expect([...unfoldPathTo(rows, current, new Set([root.id, t1.user.id]))]).toEqual([t1.user.id])
    // a row a fold hides is found at the fold
    expect(shownIndexOf(rows, shown, 3)).toBe(1)
    expect(shownIndexOf(rows, shown, 5)).toBe(2)
    expect(ariaParent(rows, 3)).toBe(1)
    expect(ariaParent(rows, 0)).toBe(-1)
  })

  it('rows of a folded layout are the full rows less exactly the folded forks\' descendants; connectors and ARIA sets still hold (property)', () => {
    fc.assert(fc.property(shapes, fc.array(fc.nat(), { maxLength: 8 }), (ops, picks) => {
      const { dag } = randomTree(ops)
      const { rows } = layoutTree(dag)
      const folds = new Set(picks.map(p => (rows[p % rows.length] as TreeNode).id))
      const shown = foldRows(rows, folds)
      // the reference: a row is hidden when a proper ancestor is a folded fork
      const hidden = (i: number): boolean => {
        for (let p = (rows[i] as TreeNode).parent; p >= 0; p = (rows[p] as TreeNode).parent) {
          const a = rows[p] as TreeNode
          if (canFold(a) && folds.has(a.id)) return true
        }
        return false
      }
      expect(shown).toEqual(rows.filter((_, i) => !hidden(i)))
      expectConnectorsJoin(shown)
      // every ARIA set still counts 1..size
      const { pos, size } = ariaPositions(shown)
      for (let i = 0; i < shown.length; i++) expect(pos[i]).toBeLessThanOrEqual(size[i] as number)
      // what a folded row says it hides is what went
      for (const r of shown) {
        if (!canFold(r) || !folds.has(r.id)) continue
        const at = rows.indexOf(r)
        const gone = rows.slice(at + 1, at + 1 + r.span)
        expect(gone.every(g => hidden(rows.indexOf(g)))).toBe(true)
        expect(r.subtreeEntries).toBe(gone.reduce((n, g) => n + g.entries, 0))
        expect(r.subtreeTips).toBe(gone.filter(g => g.childCount === 0).length)
      }
    }), { numRuns: 200 })
  })
})

describe('named branches and compactions in the layout', () => {
  it('shows the name given to a turn (newest by clock), cleaned and capped, and marks a compaction with what it folded', () => {
    const { root, dag, add, turn } = tree()
    const t1 = turn(root, 'First')
    const t2 = turn(t1.last, 'Second')
    const name = (value: unknown, wall: number, device = A): Entry => add(t2.last, { kind: 'meta', body: { key: branchNameKey(t1.user.id), value, hlc: { wall, counter: 0, device } } }, device)
    name('Plan A', 10)
    name('Plan \u001b[31mB\n\u202eagain', 20, B)
    name('older', 5)
    const c = add(t2.last, { kind: 'compaction', body: { summary: 's', folded: { from: root.id, to: t1.last.id }, model: 'm', tokens: 1 } })
    const { rows } = layoutTree(dag)
    expect(rows[1]?.name).toBe('Plan [31mB again')
    expect(rows[2]?.name).toBeUndefined()
    // root, t1's user, started, assistant: four entries folded
    expect(rows[2]?.compactions).toEqual([4])
    expect(rows[1]?.compactions).toBeUndefined()
    // a range not on the compaction's path folds nothing it can count
    add(c, { kind: 'compaction', body: { summary: 's', folded: { from: t2.user.id, to: 'f'.repeat(64) }, model: 'm', tokens: 1 } })
    expect(layoutTree(dag).rows[2]?.compactions).toEqual([4, 0])
  })

  it('a peer\'s pile of compactions with ranges not on their path costs no walk of the branch each', () => {
    expectLinear('compactions naming ranges elsewhere', n => {
      const { root, dag, add, turn } = tree()
      let tip: Entry = root
      for (let i = 0; i < n; i++) tip = turn(tip, `m ${i}`).last
      for (let i = 0; i < n; i++) tip = add(tip, { kind: 'compaction', body: { summary: 's', folded: { from: 'e'.repeat(64), to: tip.id }, model: 'm', tokens: 1 } })
      const asked = { n: 0 }
      const { rows } = layoutTree(countedAsks(dag, asked))
      expect(rows.at(-1)?.compactions).toHaveLength(n)
      expect(rows.at(-1)?.compactions?.every(c => c === 0)).toBe(true)
      return asked.n
    }, [200, 400, 800])
  })

  it('branchName: one line, no controls, capped; anything else is no name', () => {
    expect(branchName('  a\tb  ')).toBe('a b')
    expect(branchName('')).toBeUndefined()
    expect(branchName(' \u0007 ')).toBeUndefined()
    expect(branchName(42)).toBeUndefined()
    expect(branchName({ name: 'x' })).toBeUndefined()
    fc.assert(fc.property(fc.string({ maxLength: 300, unit: 'binary' }), s => {
      const n = branchName(s)
      if (n === undefined) return
      expect(Array.from(n).length).toBeLessThanOrEqual(BRANCH_NAME_MAX)
      expect(n).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/) // eslint-disable-line no-control-regex
      expect(n).toBe(n.trim())
      expect(branchName(n)).toBe(n)
    }))
  })
})

describe('deviceColour, shortLabel and visibleWindow', () => {
  it('gives each device the same colour from the palette', () => {
    fc.assert(fc.property(fc.string(), s => {
      expect(deviceColour(s)).toBe(deviceColour(s))
      expect(DEVICE_COLOURS).toContain(deviceColour(s))
    }))
    expect(new Set(Array.from({ length: 64 }, (_, i) => deviceColour(i.toString(16).padStart(64, '0')))).size).toBeGreaterThan(4)
  })

  it('shortens labels to the first words', () => {
    expect(shortLabel('  hello   world ')).toBe('hello world')
    expect(shortLabel('x'.repeat(100)).length).toBe(60)
    // reading only the first words gives what splitting the whole text gave
    const whole = (text: string): string => {
      const words = text.trim().split(/\s+/).filter(Boolean)
      let out = words.slice(0, 8).join(' ')
      if (out.length > 60) out = out.slice(0, 59).trimEnd() + '…'
      else if (words.length > 8) out += ' …'
      return out
    }
    fc.assert(fc.property(fc.array(fc.oneof(fc.constantFrom(' ', '\n', '\t', '  ', 'a', 'word', 'é', '\u00a0'), fc.string({ maxLength: 12 })), { maxLength: 40 }), parts => {
      const text = parts.join('')
      expect(shortLabel(text)).toBe(whole(text))
    }), { numRuns: 500 })
  })

  it('draws only the rows in view, plus overscan', () => {
    expect(visibleWindow(10_000, 30, 0, 600, 5)).toEqual({ start: 0, end: 25 })
    expect(visibleWindow(10_000, 30, 3000, 600, 5)).toEqual({ start: 95, end: 125 })
    expect(visibleWindow(10, 30, 0, 600, 5)).toEqual({ start: 0, end: 10 })
    fc.assert(fc.property(fc.nat(20_000), fc.nat(1_000_000), fc.nat(2000), (n, top, h) => {
      const w = visibleWindow(n, 30, top, h)
      expect(w.start).toBeGreaterThanOrEqual(0)
      expect(w.end).toBeLessThanOrEqual(n)
      expect(w.end - w.start).toBeLessThanOrEqual(Math.ceil(Math.max(h, 30) / 30) + 17)
    }))
  })
})

describe('the kept layout (layout-cache.ts)', () => {
  it('is laid out again exactly when the DAG grew or the selection moved, and always equals layoutTree', () => {
    const { root, dag, turn } = tree()
    const one = turn(root, 'one')
    const other = turn(root, 'other')
    const first = treeLayoutOf(dag, dag.size, one.last.id)
    expect(treeLayoutOf(dag, dag.size, one.last.id)).toBe(first) // nothing changed: no walk
    expect(first).toEqual(layoutTree(dag, one.last.id))
    const moved = treeLayoutOf(dag, dag.size, other.last.id)
    expect(moved).not.toBe(first)
    expect(moved).toEqual(layoutTree(dag, other.last.id))
    turn(other.last, 'more')
    const grown = treeLayoutOf(dag, dag.size, other.last.id)
    expect(grown).not.toBe(moved)
    expect(grown).toEqual(layoutTree(dag, other.last.id))
    // another DAG of the same conversation (opened again) keeps nothing of this one's
    const again = new ConversationDag(root.id, dag.entries())
    expect(treeLayoutOf(again, again.size, other.last.id)).not.toBe(grown)
  })
})

describe('laneRuns', () => {
  it('draws a row of the tree deep in forks as few elements: runs of │ or blank lanes are one each', () => {
    expect(laneRuns('│││  │├', 7)).toEqual([
      { at: 0, glyph: '│', count: 3 }, { at: 3, glyph: ' ', count: 2 }, { at: 5, glyph: '│', count: 1 }, { at: 6, glyph: '├', count: 1 }
    ])
    expect(laneRuns('│'.repeat(60) + '└', 61)).toEqual([{ at: 0, glyph: '│', count: 40 }])
    expect(laneRuns('├├', 2)).toEqual([{ at: 0, glyph: '├', count: 1 }, { at: 1, glyph: '├', count: 1 }])
  })

  it('covers exactly the drawn lanes, in order, with every │ and blank run maximal (property)', () => {
    fc.assert(fc.property(fc.array(fc.constantFrom('│', ' ', '├', '└'), { maxLength: 60 }), fc.nat({ max: 70 }), (glyphs, lanes) => {
      const guide = glyphs.join('')
      const runs = laneRuns(guide, lanes)
      const depth = Math.min(lanes, 40)
      expect(runs.map(r => r.glyph.repeat(r.count)).join('')).toBe(guide.padEnd(depth, ' ').slice(0, depth))
      runs.forEach((r, i) => {
        if (r.glyph === '├' || r.glyph === '└') expect(r.count).toBe(1)
        const next = runs[i + 1]
        if (next !== undefined) { expect(next.at).toBe(r.at + r.count); if (r.glyph === '│' || r.glyph === ' ') expect(next.glyph).not.toBe(r.glyph) }
      })
    }), { verbose: true })
  })
})
