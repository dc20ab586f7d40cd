// Benchmarks of the renderer's pure functions, without a browser: the tree view's layout of
// a 10,000-entry conversation, and the code highlighter on hostile input. Their unit tests
// count the work as the input doubles (it must grow linearly); the times are measured here.
// One JSON line per measurement; see bench/README.md.
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import type { ConversationDag } from '../src/shared/conversation/conversation-dag'
import { highlight } from '../src/renderer/markdown/highlight'
import { layoutTree } from '../src/renderer/tree/tree-layout'
import { buildBigConversation } from '../test/fixtures/big-conversation'
import { emit, interleave, median, percentile, round, start } from './lib/util'

const RUNS = 15
const CHARS = 80_000 // below MAX_HIGHLIGHT_CHARS: the longest code it still highlights
const HOSTILE = ['"\\', '/*', '<a ', '$', "'", '{', '<!--', '`${']
const LANGS = ['ts', 'bash', 'html', 'css', 'yaml', 'rust', 'py']
const ORDINARY = 'export function add (a: number, b: number): number {\n  // the sum, "as is"\n  return a + b * 2 // <b>\n}\n'

/** ms of each of RUNS runs of `subject` and `baseline`, interleaved after a warm-up of each. */
async function interleaved (subject: () => unknown, baseline: () => unknown): Promise<{ subject: number[]; baseline: number[] }> {
  const timed = (fn: () => unknown) => async (): Promise<number> => { const took = start(); fn(); return took().ms }
  const [s = [], b = []] = await interleave(RUNS, [timed(subject), timed(baseline)])
  return { subject: s, baseline: b }
}

/** The least a layout must do: visit every entry once, pre-order, through the DAG's children. */
function walk (dag: ConversationDag): number {
  const root = dag.root
  if (root === undefined) return 0
  const stack = [root]
  let n = 0
  for (let e = stack.pop(); e !== undefined; e = stack.pop()) {
    n++
    for (const k of dag.children(e.id)) if (k.parents[0] === e.id) stack.push(k)
  }
  return n
}

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'arbor-bench-renderer-'))
try {
  const big = await buildBigConversation(tmp)
  const tree = await interleaved(() => layoutTree(big.dag), () => walk(big.dag))
  emit({
    name: 'ui.layout.tree.10000',
    value: round(median(tree.subject)),
    unit: 'ms',
    p90: round(percentile(tree.subject, 90)),
    baseline: round(median(tree.baseline)),
    baselineIs: 'a bare pre-order walk of the same DAG through its children',
    ratio: round(median(tree.subject) / median(tree.baseline)),
    entries: big.entries,
    rows: layoutTree(big.dag).rows.length
  })

  // the slowest hostile input, against ordinary code of the same length in the same language
  let worst = { value: -1, baseline: 0, p90: 0, lang: '', unit: '' }
  const ordinary = ORDINARY.repeat(Math.ceil(CHARS / ORDINARY.length)).slice(0, CHARS)
  for (const unit of HOSTILE) {
    const code = unit.repeat(Math.ceil(CHARS / unit.length)).slice(0, CHARS)
    for (const lang of LANGS) {
      const r = await interleaved(() => highlight(code, lang), () => highlight(ordinary, lang))
      if (median(r.subject) > worst.value) worst = { value: median(r.subject), baseline: median(r.baseline), p90: percentile(r.subject, 90), lang, unit }
    }
  }
  emit({
    name: 'ui.highlight.hostile.80000',
    value: round(worst.value),
    unit: 'ms',
    p90: round(worst.p90),
    baseline: round(worst.baseline),
    baselineIs: 'ordinary code of the same length in the same language',
    ratio: round(worst.value / worst.baseline),
    lang: worst.lang,
    input: JSON.stringify(worst.unit)
  })
} finally {
  await fs.rm(tmp, { recursive: true, force: true })
}
