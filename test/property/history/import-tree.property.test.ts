// Properties of planImport: any id/parentId forest becomes drafts with the same parent relation
// (a node without items lends its place to its parent), each branch's messages in order; and
// any pointers at all (cycles, dangling parents, repeated ids) still place every node once.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { planImport, type ImportItem, type ImportNode } from '../../../src/main/history/import/import-tree'

const item = (tag: string): ImportItem => ({ kind: 'note', text: tag })

/** A forest: node i's parent is null or an earlier node; lines in a shuffled order. */
const forestArb = fc.array(fc.record({ parent: fc.option(fc.nat(), { nil: null }), items: fc.nat({ max: 2 }), order: fc.nat() }), { minLength: 1, maxLength: 60 })
  .map(specs => {
    const nodes: ImportNode[] = specs.map((s, i) => ({
      id: `n${i}`,
      parent: s.parent === null || i === 0 ? null : `n${s.parent % i}`,
      line: 0,
      items: Array.from({ length: s.items }, (_, k) => item(`n${i}.${k}`))
    }))
    const order = specs.map((s, i) => ({ i, key: s.order })).sort((a, b) => a.key - b.key || a.i - b.i).map(o => o.i)
    return order.map((i, line) => ({ ...(nodes[i] as ImportNode), line: line + 1 }))
  })

/** The tags along the branch that ends at draft `d`, root first. */
function branchTags (drafts: Array<{ item: ImportItem; parent: number }>, d: number): string[] {
  const out: string[] = []
  for (let i = d; i !== -1; i = (drafts[i] as { parent: number }).parent) out.push((drafts[i]?.item as { text: string }).text)
  return out.reverse()
}

describe('planImport', () => {
  it('maps any forest to a DAG with the same parent relation, every message kept, each branch in order', () => {
    fc.assert(fc.property(forestArb, nodes => {
      const { drafts, problems } = planImport(nodes)
      expect(problems).toEqual([])
      expect(drafts.length).toBe(nodes.reduce((n, x) => n + x.items.length, 0))
      drafts.forEach((d, i) => { expect(d.parent).toBeLessThan(i) })
      const byId = new Map(nodes.map(n => [n.id, n]))
      const tagAt = new Map(drafts.map((d, i) => [(d.item as { text: string }).text, i]))
      for (const n of nodes) {
        if (n.items.length === 0) continue
        // the source branch to this node, nodes without items left out
        const path: string[] = []
        for (let x: ImportNode | undefined = n; x !== undefined; x = x.parent === null ? undefined : byId.get(x.parent)) {
          path.unshift(...x.items.map(it => (it as { text: string }).text))
        }
        const last = tagAt.get((n.items.at(-1) as { text: string }).text) as number
        expect(branchTags(drafts, last)).toEqual(path)
      }
    }), { numRuns: 300 })
  })

  it('places every node once whatever its pointers say: cycles and dangling parents hang from the root, repeats are skipped', () => {
    const wildArb = fc.array(fc.record({ id: fc.nat({ max: 30 }), parent: fc.option(fc.nat({ max: 35 }), { nil: null }), items: fc.nat({ max: 2 }) }), { minLength: 1, maxLength: 40 })
    fc.assert(fc.property(wildArb, specs => {
      const nodes: ImportNode[] = specs.map((s, i) => ({ id: `n${s.id}`, parent: s.parent === null ? null : `n${s.parent}`, line: i + 1, items: Array.from({ length: s.items }, (_, k) => item(`${i}.${k}`)) }))
      const { drafts, problems } = planImport(nodes)
      drafts.forEach((d, i) => { expect(d.parent).toBeLessThan(i) })
      const firsts = nodes.filter((n, i) => nodes.findIndex(m => m.id === n.id) === i)
      const tags = drafts.map(d => (d.item as { text: string }).text).sort()
      expect(tags).toEqual(firsts.flatMap(n => n.items.map(it => (it as { text: string }).text)).sort())
      const ids = new Set(firsts.map(n => n.id))
      for (const n of firsts) {
        if (n.parent !== null && !ids.has(n.parent)) expect(problems).toContain(`line ${n.line}: its parent ${JSON.stringify(n.parent)} is not in the file; attached to the start`)
      }
      expect(problems.filter(p => p.includes('repeats line')).length).toBe(nodes.length - firsts.length)
    }), { numRuns: 500 })
  })

  it('walks a chain 50,000 deep without recursion', () => {
    const nodes: ImportNode[] = Array.from({ length: 50_000 }, (_, i) => ({ id: `n${i}`, parent: i === 0 ? null : `n${i - 1}`, line: i + 1, items: [item(String(i))] }))
    const { drafts, tip } = planImport(nodes)
    expect(drafts.length).toBe(50_000)
    expect(tip).toBe(49_999)
  })
})
