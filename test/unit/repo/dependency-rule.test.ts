// The dependency rule of DESIGN.md ("Layout") and docs/ARCHITECTURE.md §3, whose table is
// scripts/dependency-rule.js, checked on every import under src/: each file lives in a concern
// folder, each folder imports only what its ALLOWED list names, and no files import each other
// in a cycle. Type-only imports count for both: a type from another file is a dependency on its
// design.
import fs from 'node:fs'
import { isBuiltin } from 'node:module'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { ALLOWED, MAY_IMPORT_ELECTRON, NO_NODE_BUILTINS, unitOf } from '../../../scripts/dependency-rule.js'
import { cycles, importsOf, resolveImport, type ImportRef } from '../../helpers/import-graph'
import { ROOT } from '../../helpers/paths'


function sourceFiles (dir: string): string[] {
  const out: string[] = []
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`
    if (e.isDirectory()) out.push(...sourceFiles(rel))
    else if (/\.(ts|tsx)$/.test(e.name)) out.push(rel)
  }
  return out.sort()
}

interface Edge { from: string; to: string; ref: ImportRef }

/** What a bundler loads that is not code (the renderer's stylesheet, the preload's package.json). */
const ASSET = /\.(css|json)$/

/** Every import under src/, read from disk; relative ones resolved to files. */
function readTree (): { files: string[]; edges: Edge[]; packages: Array<{ from: string; ref: ImportRef }>; unresolved: string[] } {
  const files = sourceFiles('src')
  const known = new Set(files)
  const edges: Edge[] = []
  const packages: Array<{ from: string; ref: ImportRef }> = []
  const unresolved: string[] = []
  for (const from of files) {
    for (const ref of importsOf(from, fs.readFileSync(path.join(ROOT, from), 'utf8'))) {
      const to = resolveImport(from, ref.specifier, known)
      if (to === null) packages.push({ from, ref })
      else if (to === undefined && ASSET.test(ref.specifier) && fs.existsSync(path.join(ROOT, path.dirname(from), ref.specifier))) continue // a stylesheet, package.json: not a module of ours
      else if (to === undefined) unresolved.push(`${from}:${ref.line} imports '${ref.specifier}', which names no file under src/`)
      else edges.push({ from, to, ref })
    }
  }
  return { files, edges, packages, unresolved }
}

describe('the dependency rule (DESIGN.md "Layout")', () => {
  const tree = readTree()

  it('reads a tree of real size, every relative import naming a file', () => {
    expect(tree.files.length).toBeGreaterThan(100)
    expect(tree.edges.length).toBeGreaterThan(300)
    expect(tree.unresolved).toEqual([])
  })

  it('puts every file in a concern folder (or the composition root, src/main/node.ts)', () => {
    expect(tree.files.filter(f => unitOf(f) === undefined)).toEqual([])
  })

  it('lets each folder import only the folders its ALLOWED list names', () => {
    const violations = tree.edges.flatMap(e => {
      const from = unitOf(e.from)
      const to = unitOf(e.to)
      if (from === undefined || to === undefined || from === to || ALLOWED[from].includes(to)) return []
      return [`${e.from}:${e.ref.line} (${from}) imports ${e.to} (${to}) [${e.ref.kind}]; ${from} may import only: ${ALLOWED[from].join(', ') || 'nothing of ours'}`]
    })
    expect(violations).toEqual([])
  })

  it('keeps Node modules out of shared and the renderer, and Electron inside the shell and the preload', () => {
    const violations = tree.packages.flatMap(({ from, ref }) => {
      const unit = unitOf(from)
      if (unit === undefined) return []
      const name = ref.specifier
      if (NO_NODE_BUILTINS.includes(unit) && isBuiltin(name)) return [`${from}:${ref.line} (${unit}) imports the Node module '${name}'`]
      if (!MAY_IMPORT_ELECTRON.includes(unit) && (name === 'electron' || name.startsWith('electron/'))) return [`${from}:${ref.line} (${unit}) imports '${name}'`]
      return []
    })
    expect(violations).toEqual([])
  })

  // Type-only imports count too: erased at run time, they still tie two files' designs together,
  // so neither can be read or changed without the other; a shared type belongs in a leaf file.
  it('finds no import cycle between files (every import: type-only and dynamic ones too)', () => {
    const graph = new Map<string, string[]>(tree.files.map(f => [f, []]))
    for (const e of tree.edges) graph.get(e.from)!.push(e.to)
    expect(cycles(graph).map(c => `a cycle of ${c.length} files: ${c.join(', ')}`)).toEqual([])
  })
})

describe('import-graph (test/helpers/import-graph.ts)', () => {
  it('reads every kind of import, and which are type-only', () => {
    const text = [
      "import a from './a'",
      "import type { B } from './b'",
      "import { type C, type D } from './c'",
      "import { type E, f } from './e'",
      "export { g } from './g'",
      "export type { H } from './h'",
      "export * from './i'",
      "import './side-effect'",
      "const j = await import('./j')",
      "let k: import('./k').K",
      "// import { no } from './comment'",
      "const s = \"import { no } from './string'\""
    ].join('\n')
    expect(importsOf('src/x.ts', text).map(r => `${r.kind} ${r.specifier} ${r.line}`)).toEqual([
      'static ./a 1', 'type ./b 2', 'type ./c 3', 'static ./e 4', 'export ./g 5', 'type ./h 6',
      'export ./i 7', 'static ./side-effect 8', 'dynamic ./j 9', 'type ./k 10'
    ])
  })

  it('resolves relative specifiers to files, with or without an extension, and leaves packages alone', () => {
    const files = new Set(['src/a/b.ts', 'src/a/c.tsx', 'src/d/index.ts', 'src/types/e.d.ts'])
    expect(resolveImport('src/a/x.ts', './b', files)).toBe('src/a/b.ts')
    expect(resolveImport('src/a/x.ts', './b.js', files)).toBe('src/a/b.ts')
    expect(resolveImport('src/a/x.ts', './c', files)).toBe('src/a/c.tsx')
    expect(resolveImport('src/a/x.ts', '../d', files)).toBe('src/d/index.ts')
    expect(resolveImport('src/a/x.ts', '../types/e', files)).toBe('src/types/e.d.ts')
    expect(resolveImport('src/a/x.ts', './missing', files)).toBeUndefined()
    expect(resolveImport('src/a/x.ts', 'node:fs', files)).toBeNull()
    expect(resolveImport('src/a/x.ts', 'zod', files)).toBeNull()
  })

  it('reports each cycle with its files, a self-import too, and nothing for a DAG', () => {
    const g = new Map(Object.entries({ a: ['b'], b: ['c', 'd'], c: ['a'], d: ['e'], e: ['e'], f: ['a'] }))
    expect(cycles(g)).toEqual([['e'], ['a', 'b', 'c']])
    expect(cycles(new Map(Object.entries({ a: ['b', 'c'], b: ['c'], c: [] })))).toEqual([])
  })

  it('finds exactly the sets of mutually reachable nodes (against a brute-force closure)', () => {
    const graphArb = fc.integer({ min: 1, max: 12 }).chain(n =>
      fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: n * 3 }).map(pairs => ({ n, pairs })))
    fc.assert(fc.property(graphArb, ({ n, pairs }) => {
      const names = Array.from({ length: n }, (_, i) => `n${String(i).padStart(2, '0')}`)
      const g = new Map<string, string[]>(names.map(x => [x, []]))
      for (const [a, b] of pairs) g.get(names[a]!)!.push(names[b]!)
      const reach = names.map((_, i) => { // reach[i][j]: a path of one or more edges from i to j
        const seen = new Set<number>()
        const todo = pairs.filter(p => p[0] === i).map(p => p[1])
        while (todo.length > 0) {
          const j = todo.pop()!
          if (seen.has(j)) continue
          seen.add(j)
          for (const p of pairs) if (p[0] === j) todo.push(p[1])
        }
        return seen
      })
      const expected = new Set<string>()
      for (let i = 0; i < n; i++) {
        if (!reach[i]!.has(i)) continue
        expected.add(names.filter((_, j) => reach[i]!.has(j) && reach[j]!.has(i)).join(','))
      }
      expect(new Set(cycles(g).map(c => c.join(',')))).toEqual(expected)
    }), { numRuns: 300 })
  })
})
