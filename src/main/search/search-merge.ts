// Merging segments of the full-text index (tiered, log-structured): segments of about the same
// size merge `factor` at a time, so there are at most factor-1 of each size, O(log n) in all.
// A merge reads its inputs front to back and writes one segment: the terms merged in order, each
// term's postings concatenated (only the first gap of each input's run is written again), the
// rows copied. Dead documents stay until the log is compacted (search-compact.ts), which rebuilds.
import { getVarint, putVarint } from './search-varint'
import { SegmentWriter, type Segment } from './search-segment'
import type { TermPosting } from './search-postings'

/** A segment's size class: how many times `factor` its documents are over the live part's. */
function tier (docs: number, unit: number, factor: number): number {
  return Math.max(0, Math.floor(Math.log(Math.max(1, docs / unit)) / Math.log(factor)))
}

/**
 * The run of segments (oldest first) to merge next, or null: the newest `factor` segments when
 * they are of one size class and the result stays within `maxDocs`.
 */
export function pickMerge (docs: readonly number[], opts: { unit: number; factor: number; maxDocs: number }): { from: number; to: number } | null {
  const { unit, factor, maxDocs } = opts
  for (let end = docs.length; end >= factor; end--) {
    const run = docs.slice(end - factor, end)
    const t = tier(run[0] as number, unit, factor)
    if (run.every(d => tier(d, unit, factor) === t) && run.reduce((a, b) => a + b, 0) <= maxDocs) return { from: end - factor, to: end }
  }
  return null
}

type Entry = TermPosting & { first: number }

/** Writes the merge of `inputs` (oldest first) to `file`; the documents of input i are renumbered after those before it. */
export async function mergeSegments (inputs: readonly Segment[], file: string, opts: { blockBytes?: number; beforeSync?: () => Promise<void> } = {}): Promise<number> {
  const w = await SegmentWriter.create(file, opts.blockBytes)
  try {
    const base: number[] = []
    let total = 0
    for (const s of inputs) { base.push(total); total += s.docs }
    const its = inputs.map(s => s.entries())
    const heads: Array<Entry | null> = await Promise.all(its.map(async it => { const r = await it.next(); return r.done === true ? null : r.value }))
    const gap = Buffer.alloc(8)
    for (;;) {
      let term: string | null = null
      for (const h of heads) if (h !== null && (term === null || h.term < term)) term = h.term
      if (term === null) break
      const parts: Uint8Array[] = []
      let last = -1
      for (const [i, h] of heads.entries()) {
        if (h === null || h.term !== term) continue
        const b = base[i] as number
        // the run's first document, written again as a gap from the previous run's last
        const n = putVarint(gap, 0, b + h.first - last)
        parts.push(Buffer.from(gap.subarray(0, n)), h.bytes.subarray(getVarint(h.bytes, 0).end))
        last = b + h.last
        const r = await (its[i] as AsyncGenerator<Entry>).next()
        heads[i] = r.done === true ? null : r.value
      }
      await w.term({ term, bytes: Buffer.concat(parts), last })
    }
    for (const s of inputs) for await (const rows of s.rows()) await w.rows(rows)
    return await w.finish(opts.beforeSync)
  } catch (err) {
    await w.abort()
    throw err
  }
}
