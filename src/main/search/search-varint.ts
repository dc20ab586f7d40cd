// Postings as varint gaps (pure), the one encoding of the live postings and of segment files:
// a term's documents ascending, each as its distance from the previous (the first from -1).

/** Appends `n` (≥ 0) as a varint at `at` of `out` (room for 8 bytes needed); returns the end. */
export function putVarint (out: Uint8Array, at: number, n: number): number {
  while (n >= 0x80) { out[at++] = (n & 0x7f) | 0x80; n = Math.floor(n / 0x80) }
  out[at++] = n
  return at
}

/** The varint at `at` of `buf` and where it ends. */
export function getVarint (buf: Uint8Array, at: number): { n: number; end: number } {
  let n = 0
  let shift = 1
  for (;;) {
    if (at >= buf.length) throw new Error('a varint runs past its end')
    const b = buf[at++] as number
    n += (b & 0x7f) * shift
    if (b < 0x80) return { n, end: at }
    shift *= 0x80
  }
}

/** Calls `into` with each document of a posting list (varint gaps in bytes [from, to)). */
export function decodeGaps (buf: Uint8Array, from: number, to: number, into: (doc: number) => void): void {
  let doc = -1
  let gap = 0
  let shift = 1
  for (let i = from; i < to; i++) {
    const b = buf[i] as number
    gap += (b & 0x7f) * shift
    if (b < 0x80) { doc += gap; into(doc); gap = 0; shift = 1 } else shift *= 0x80
  }
}

/**
 * For each document of a posting list (bytes [from, to)) whose count in `met` is `when`, sets it
 * to `next` (a query's conditions met so far): decodeGaps without a call per document, the hot loop of a query.
 */
export function stepGaps (buf: Uint8Array, from: number, end: number, met: Uint8Array, when: number, next: number): void {
  let doc = -1
  let gap = 0
  let shift = 1
  for (let i = from; i < end; i++) {
    const b = buf[i] as number
    gap += (b & 0x7f) * shift
    if (b < 0x80) {
      doc += gap
      if (met[doc] === when) met[doc] = next
      gap = 0
      shift = 1
    } else shift *= 0x80
  }
}
