// The import graph of a source tree, for the dependency-rule test. Pure: file texts come in,
// edges and strongly connected components go out; reading the disk is the caller's.
import path from 'node:path'
import ts from 'typescript'

export type ImportKind = 'static' | 'type' | 'export' | 'dynamic'

export interface ImportRef {
  /** the module specifier as written */
  specifier: string
  kind: ImportKind
  /** 1-based line, for the failure message */
  line: number
}

/** Every module a file names: import/export … from, `import type`, `import()` and `import('x').T` types. */
export function importsOf (fileName: string, text: string): ImportRef[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, fileName.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS)
  const out: ImportRef[] = []
  const add = (node: ts.Node, spec: ts.Expression | undefined, kind: ImportKind): void => {
    if (spec === undefined || !ts.isStringLiteralLike(spec)) return
    out.push({ specifier: spec.text, kind, line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1 })
  }
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      add(node, node.moduleSpecifier, typeOnlyImport(node) ? 'type' : 'static')
    } else if (ts.isExportDeclaration(node)) {
      add(node, node.moduleSpecifier, node.isTypeOnly ? 'type' : 'export')
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node, node.moduleReference.expression, node.isTypeOnly ? 'type' : 'static')
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node, node.arguments[0], 'dynamic')
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node, node.argument.literal, 'type')
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return out
}

function typeOnlyImport (node: ts.ImportDeclaration): boolean {
  const clause = node.importClause
  if (clause === undefined) return false // `import './x'` runs x
  if (clause.isTypeOnly) return true
  if (clause.name !== undefined) return false
  const bindings = clause.namedBindings
  return bindings !== undefined && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every(e => e.isTypeOnly)
}

const EXTENSIONS = ['.ts', '.tsx', '.d.ts', '/index.ts', '/index.tsx']

/**
 * The file a relative specifier names among `files` (repository-relative, '/'-separated), or
 * undefined when none does; null for a specifier that is not relative (a package, node:*).
 */
export function resolveImport (from: string, specifier: string, files: ReadonlySet<string>): string | undefined | null {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return null
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier))
  const bare = base.replace(/\.(m?js|jsx)$/, '')
  for (const candidate of [base, ...EXTENSIONS.map(e => bare + e)]) if (files.has(candidate)) return candidate
  return undefined
}

/**
 * Tarjan's strongly connected components of a directed graph, iteratively (no recursion
 * limit). Returns only the components that are cycles: two or more nodes, or one with a self-edge.
 */
export function cycles (graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const onStack = new Set<string>()
  const stack: string[] = []
  const found: string[][] = []
  let next = 0
  for (const root of [...graph.keys()].sort()) {
    if (index.has(root)) continue
    const work: Array<{ node: string; edge: number }> = [{ node: root, edge: 0 }]
    index.set(root, next); low.set(root, next); next++
    stack.push(root); onStack.add(root)
    while (work.length > 0) {
      const frame = work[work.length - 1]!
      const edges = graph.get(frame.node) ?? []
      if (frame.edge < edges.length) {
        const to = edges[frame.edge++]!
        if (!index.has(to)) {
          index.set(to, next); low.set(to, next); next++
          stack.push(to); onStack.add(to)
          work.push({ node: to, edge: 0 })
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!))
        }
        continue
      }
      work.pop()
      const parent = work[work.length - 1]
      if (parent !== undefined) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!))
      if (low.get(frame.node) !== index.get(frame.node)) continue
      const component: string[] = []
      for (;;) {
        const n = stack.pop()!
        onStack.delete(n)
        component.push(n)
        if (n === frame.node) break
      }
      if (component.length > 1 || edges.includes(frame.node)) found.push(component.sort())
    }
  }
  return found
}
