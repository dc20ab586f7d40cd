// The table `arbor ls` prints (pure: rows in, text out). 10,000 rows are most of a cold `ls`
// after the start-up: the rows are read by position (no object per conversation), each line
// built once, and the text handed on in pieces.
import type { ListRows } from '../history/index/index-listing'
import { oneLine } from './terminal-text'

/** A piece of the text is handed on once this long: a piece written is garbage, not a survivor of every scavenge. */
const PIECE = 64 * 1024

/** How long ago `ts` was, or its date when a day or more; `days` keeps each date formatted once. */
export function ago (ts: number, now: number, days?: Map<number, string>): string {
  const s = Math.max(0, Math.round((now - ts) / 1000))
  if (s < 60) return `${s}s ago`
  if (s < 3600) return `${Math.floor(s / 60)}m ago`
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`
  const day = Math.floor(ts / 86_400_000)
  let date = days?.get(day)
  if (date === undefined) { date = new Date(ts).toISOString().slice(0, 10); days?.set(day, date) }
  return date
}

function digits (v: number): number {
  let n = 1
  for (let x = v; x >= 10; x = Math.floor(x / 10)) n++
  return n
}

/** A column's cells, each padded to the column's width and followed by the gap, made once per distinct value. */
function cells (width: number): (v: number | string) => string {
  const made = new Map<number | string, string>()
  return v => {
    let cell = made.get(v)
    if (cell === undefined) { cell = String(v).padEnd(width) + '  '; made.set(v, cell) }
    return cell
  }
}

/** The listing's table (a header, then a line per row), handed to `write` in pieces that end at a line's end. */
export function writeListText (rows: ListRows, now: number, write: (text: string) => void): void {
  const n = rows.length
  // 10,000 rows fall on a few hundred days and a few thousand sizes: each cell is made once
  const days = new Map<number, string>()
  const updated = new Array<string>(n)
  let w0 = 'UPDATED'.length
  let w1 = 'ENTRIES'.length
  let w2 = 'BRANCHES'.length
  for (let i = 0; i < n; i++) {
    const a = ago(rows.updatedAt(i), now, days)
    updated[i] = a
    if (a.length > w0) w0 = a.length
    const s = digits(rows.size(i))
    if (s > w1) w1 = s
    const b = digits(rows.branches(i))
    if (b > w2) w2 = b
  }
  const updatedCell = cells(w0)
  const sizeCell = cells(w1)
  const branchesCell = cells(w2)
  let text = 'ID'.padEnd(12) + '  ' + 'UPDATED'.padEnd(w0) + '  ' + 'ENTRIES'.padEnd(w1) + '  ' + 'BRANCHES'.padEnd(w2) + '  TITLE\n'
  for (let i = 0; i < n; i++) {
    text += rows.id(i).slice(0, 12).padEnd(12) + '  ' + updatedCell(updated[i] as string) + sizeCell(rows.size(i)) + branchesCell(rows.branches(i)) + (oneLine(rows.title(i)) || '(untitled)') + '\n'
    if (text.length >= PIECE) { write(text); text = '' }
  }
  if (text !== '') write(text)
}
