// `arbor ls` is the command people run most; its start-up is most of its time. What it loads
// is checked from outside: the built CLI under a module hook that reports every resolved URL.
import { afterEach, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { tempDirs } from '../../helpers/temp-dir'
import { HistoryStore } from '../../../src/main/history/history-store'
import { HistoryIndexFile, emptyIndex, indexDir } from '../../../src/main/history/index/history-index'
import { memoryLogger } from '../../../src/shared/logger'

const dirs = tempDirs()
afterEach(() => dirs.cleanup())

it('ls on a cleanly closed store loads no package, nothing of the API service or the storage stack, neither node:net nor node:crypto', async () => {
  const data = await dirs.make()
  const store = new HistoryStore({ dir: data, watchPeers: false, log: memoryLogger() })
  await store.ready()
  const root = await store.createConversation({ title: 'Listed' })
  await store.append(root.id, [{ kind: 'user', body: { text: 'hi' }, parents: [root.id] }])
  await store.close()

  const hooks = path.join(data, 'hooks.mjs')
  fs.writeFileSync(hooks, 'export async function resolve (s, c, next) { const r = await next(s, c); process.stderr.write(`loaded ${r.url}\\n`); return r }\n')
  const register = `data:text/javascript,import{register}from"node:module";register(${JSON.stringify('file://' + hooks)})`
  const r = spawnSync(process.execPath, ['--import', register, path.resolve('bin/arbor.js'), 'ls', '--data', data], { encoding: 'utf8', timeout: 30_000 })
  expect(r.status, r.stderr).toBe(0)
  expect(r.stdout).toContain('Listed')
  const loaded = r.stderr.split('\n').filter(l => l.startsWith('loaded ')).map(l => l.slice('loaded '.length))
  expect(loaded.some(u => u.includes('/out/main/cli.js'))).toBe(true)
  expect(loaded.filter(u => u.includes('/node_modules/'))).toEqual([])
  // no node runs (no socket file): nothing of the socket client; nothing is written: no temp names
  expect(loaded.filter(u => u === 'node:net' || u === 'node:crypto')).toEqual([])
  // the server side of the socket pulls in the API service (zod, openai, the tools)
  expect(loaded.filter(u => /\/(api-service|api-connection|local-socket|history-store|step-planner)-[A-Za-z0-9_-]{8}\.js$/.test(u))).toEqual([])
})

it('ls | head: a reader that stops early ends ls quietly, with no stack trace', async () => {
  const data = await dirs.make()
  // an index alone is what ls reads: 3,000 rows (~300 KB) are more than a pipe holds
  const state = emptyIndex('d'.repeat(64))
  for (let i = 0; i < 3000; i++) {
    const id = i.toString(16).padEnd(64, 'a')
    state.conversations[id] = { id, title: `conversation ${i}`, createdAt: 1, updatedAt: 1_764_000_000_000 + i, heads: [id], size: 1, waiting: 0 }
  }
  const index = new HistoryIndexFile(indexDir(data))
  await index.save(state)
  const r = spawnSync('sh', ['-c', `"${process.execPath}" "${path.resolve('bin/arbor.js')}" ls --data "${data}" | head -n 2`], { encoding: 'utf8', timeout: 30_000 })
  expect(r.stdout.split('\n')[1]).toMatch(/^bb7aaaaaaaaa /) // the most recent first
  expect(r.stderr).toBe('')
})
