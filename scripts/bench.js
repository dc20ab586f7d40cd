// `npm run bench [-- FILTER]`: runs every bench/*.ts (or those whose name contains FILTER)
// in sequence with `node --import tsx`, passing their JSON-line stdout through.
// Exits non-zero if any benchmark fails (a missed target is reported in its output, not here).
import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join, resolve } from 'node:path'

const root = resolve(import.meta.dirname, '..')
const filter = process.argv[2]
const files = readdirSync(join(root, 'bench'))
  .filter(f => f.endsWith('.ts') && !f.endsWith('.d.ts'))
  .filter(f => filter === undefined || f.includes(filter))
  .sort()

if (files.length === 0) {
  console.error(`bench: no bench/*.ts matches ${filter === undefined ? '(none found)' : `"${filter}"`}`)
  process.exit(2)
}

function run (file) {
  return new Promise(resolveRun => {
    const child = spawn(process.execPath, ['--import', 'tsx', join('bench', file)], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] })
    child.on('error', err => { console.error(`bench ${file}: ${err.message}`); resolveRun(1) })
    child.on('exit', (code, signal) => resolveRun(code ?? (signal !== null ? 1 : 0)))
  })
}

const failed = []
for (const file of files) {
  const code = await run(file)
  if (code !== 0) {
    console.error(`bench ${file}: exited with ${code}`)
    failed.push(file)
  }
}
if (failed.length > 0) {
  console.error(`bench: ${failed.length} of ${files.length} failed: ${failed.join(', ')}`)
  process.exit(1)
}
