// docs/ARCHITECTURE.md is how a newcomer finds the code: every file it names must be where it
// says. A name is a backticked path or file name (`src/main/node.ts`, `chat/continue-from.ts`,
// `agent-loop.ts`); it holds if some file of the repository ends with it.
import { expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'

/** Names that are not files of the repository: what the build writes, what a node keeps in its data directory, the design map beside the clone, other projects' files. */
const ELSEWHERE = new Set(['out/main/cli.js', 'out/main/node.js', 'out/preload/index.cjs', 'index.js', 'node.js', 'cli.js',
  'secrets.json', 'view-state.json', 'sync/cluster.json', 'runtime/agents.json', 'settings.json', 'index/index.json', 'sync-peers.json', 'DESIGN.md',
  'lib/messages.js', // hypercore's, named as the model for arbor-messages.ts
  'AGENTS.md', 'CLAUDE.md']) // a project's instructions, read from the agent's working directory
const FILE = /^[\w./@+-]+\.(ts|tsx|js|mjs|cjs|json|css|html|md|sh|yml|yaml)$/

it('every file docs/ARCHITECTURE.md names exists in the repository', () => {
  const doc = fs.readFileSync('docs/ARCHITECTURE.md', 'utf8')
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { encoding: 'utf8' }).split('\n').filter(f => f !== '')
  const named = new Set<string>()
  for (const m of doc.matchAll(/`([^`\n]+)`/g)) {
    const token = (m[1] as string).replace(/:\d+$/, '')
    if (FILE.test(token) && !ELSEWHERE.has(token) && !token.startsWith('.') && !token.includes('*')) named.add(token.replace(/^\.\//, ''))
  }
  expect(named.size).toBeGreaterThan(50)
  const missing = [...named].filter(t => !files.some(f => f === t || f.endsWith('/' + t)))
  expect(missing).toEqual([])
})
