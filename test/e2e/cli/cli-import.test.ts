// `arbor import`: Pi and Claude Code session files (hand-written fixtures) become conversations of
// this device, through a real node on disk; hostile files are refused or reported by line, and
// a refused file writes nothing.
import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { ArborNode } from '../../../src/main/node'
import { ServedNode } from '../../../src/main/api/served-node'
import { memoryLogger } from '../../../src/shared/logger'
import { capturedCli, type CliRun } from '../../helpers/captured-cli'
import { validateEntry } from '../../../src/main/history/store/entry-codec'
import { perTest } from '../../helpers/per-test'
import { MAX_JSON_DEPTH } from '../../../src/shared/entry/json-depth'
import { E2E_FIXTURES } from '../../helpers/paths'

const { dirs, defer } = perTest('arbor-cli-import-')

async function startNode (): Promise<{ node: ArborNode; dir: string }> {
  const dir = await dirs.make()
  const log = memoryLogger()
  // with its local socket, as `arbor serve` runs it
  const served = new ServedNode(new ArborNode({ dataDir: dir, swarm: false, log, env: { HOME: dir } }), { log })
  await served.ready()
  defer(() => served.close())
  return { node: served.node, dir }
}

const arbor = (dir: string, ...args: string[]): Promise<CliRun> => capturedCli(args, { ARBOR_DATA: dir }, E2E_FIXTURES)

describe('arbor import', () => {
  it('imports a Pi session as a conversation of this device, its branches kept, the file\'s leaf shown', async () => {
    const { node, dir } = await startNode()
    const r = await arbor(dir, 'import', 'pi-session.jsonl')
    expect(r.err).toBe('imported 11 entries of a Pi session\n')
    expect(r.code).toBe(0)
    const id = r.out.trim()
    const dag = await node.history.open(id)
    expect(dag.title()).toBe('Project tooling questions')
    expect([...dag.entries()].every(e => e.author.device === node.device && e.author.agent === undefined)).toBe(true)
    expect(dag.headIds().length).toBe(2)
    const show = await arbor(dir, 'show', id.slice(0, 10))
    expect(show.out).toContain('ESLint, with a flat config.')
    expect(show.out).not.toContain('Vitest, going by the scripts.')
    // the JSON export holds every entry, each one valid as its feed holds it
    const json = JSON.parse((await arbor(dir, 'export', id, '--format', 'json')).out) as { entries: unknown[] }
    expect(json.entries.length).toBe(12)
    for (const e of json.entries) expect(validateEntry(e).ok).toBe(true)
  })

  it('imports a Claude Code session; --format names it', async () => {
    const { node, dir } = await startNode()
    const r = await arbor(dir, 'import', 'claude-code-session.jsonl', '--format', 'claude-code')
    expect(r.code).toBe(0)
    expect(r.err).toContain('arbor import: 1 line of subagent (sidechain) conversations left out\n')
    const branch = (await node.history.open(r.out.trim())).branch()
    expect(branch.map(e => e.kind)).toEqual(['conversation', 'user', 'assistant', 'tool.result', 'assistant', 'note', 'user'])
    expect(await arbor(dir, 'import', 'claude-code-session.jsonl', '--format', 'codex')).toMatchObject({ code: 2, err: 'arbor import: --format must be pi, claude-code or auto\n' })
  })

  it('reports bad lines by number and imports the rest; refuses a huge file or one of neither format, writing nothing', async () => {
    const { node, dir } = await startNode()
    const bad = path.join(dir, 'bad.jsonl')
    fs.writeFileSync(bad, [
      JSON.stringify({ type: 'user', uuid: 'a', parentUuid: null, message: { role: 'user', content: 'hello' } }),
      '{oops',
      JSON.stringify({ type: 'assistant', uuid: 'b', parentUuid: 'gone', message: { id: 'm', content: [{ type: 'text', text: 'hi' }] } })
    ].join('\n'))
    const r = await arbor(dir, 'import', bad)
    expect(r.code).toBe(0)
    expect(r.err).toMatch(/^arbor import: line 2: not JSON .*; skipped\narbor import: line 3: its parent "gone" is not in the file; attached to the start\nimported 2 entries/)

    const before = node.history.list().length
    const huge = path.join(dir, 'huge.jsonl')
    fs.writeFileSync(huge, (JSON.stringify({ type: 'user', uuid: 'x', parentUuid: null, message: { content: 'z'.repeat(1000) } }) + '\n').repeat(3300))
    expect(await arbor(dir, 'import', huge)).toMatchObject({ code: 1, err: expect.stringMatching(/is 3\.\d MiB; sessions up to 3 MiB are imported\n$/) as unknown })
    const neither = path.join(dir, 'neither.jsonl')
    fs.writeFileSync(neither, '{"a":1}\n{"b":2}\n')
    expect(await arbor(dir, 'import', neither)).toMatchObject({ code: 1, err: expect.stringMatching(/not a Pi or Claude Code session/) as unknown })
    expect(await arbor(dir, 'import', 'no-such.jsonl')).toMatchObject({ code: 1, err: 'arbor import: no-such.jsonl: no such file\n' })
    expect(node.history.list().length).toBe(before)
  })

  it('skips a line nesting 100,000 levels, saying which line, why and the bound, and imports the rest', async () => {
    const { node, dir } = await startNode()
    const deep = path.join(dir, 'deep.jsonl')
    const depth = 100_000
    const nested = '['.repeat(depth) + ']'.repeat(depth)
    fs.writeFileSync(deep, [
      JSON.stringify({ type: 'user', uuid: 'a', parentUuid: null, message: { role: 'user', content: 'hello' } }),
      JSON.stringify({ type: 'assistant', uuid: 'b', parentUuid: 'a', message: { id: 'm', content: [{ type: 'tool_use', id: 't1', name: 'bash', input: 'DEEP' }] } }).replace('"DEEP"', nested),
      JSON.stringify({ type: 'assistant', uuid: 'c', parentUuid: 'a', message: { id: 'n', content: [{ type: 'text', text: 'hi' }] } })
    ].join('\n'))
    const r = await arbor(dir, 'import', deep)
    expect(r.err).toBe(`arbor import: line 2: nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects, the most Arbor reads; skipped\nimported 2 entries of a Claude Code session\n`)
    expect(r.code).toBe(0)
    const branch = (await node.history.open(r.out.trim())).branch()
    expect(branch.map(e => e.kind)).toEqual(['conversation', 'user', 'assistant'])
  })
})
