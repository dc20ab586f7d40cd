// Reading Pi and Claude Code session files (hand-written fixtures in their formats) and hostile
// ones: what becomes which entry, the tree kept, bad lines counted by number, refusals with a reason.
import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { detectFormat, readSession } from '../../../src/main/history/import/import-session'
import { entryDrafts, type ImportDraft } from '../../../src/main/history/import/import-tree'
import { MAX_IMPORT_CHARS } from '../../../src/shared/api/import-limit'
import { MAX_ARGS_DEPTH, type EntryDraft } from '../../../src/shared/entry/entry'
import { MAX_JSON_DEPTH, jsonDepth } from '../../../src/shared/entry/json-depth'
import { makeEntry } from '../../../src/main/history/store/entry-codec'
import { E2E_FIXTURES } from '../../helpers/paths'

const fixture = (name: string): string => fs.readFileSync(path.join(E2E_FIXTURES, name), 'utf8')
const short = (d: ImportDraft): string => {
  const i = d.item
  return i.kind === 'tool.result' ? `result ${i.callId} ${i.status}` : i.kind === 'assistant' ? `assistant ${i.text}${i.toolCalls !== undefined ? ` [${i.toolCalls.map(c => c.name).join(',')}]` : ''}` : `${i.kind} ${i.text.split('\n')[0] ?? ''}`
}
/** Draft k's branch, root first, as short lines. */
const branch = (drafts: ImportDraft[], k: number): string[] => {
  const out: string[] = []
  for (let i = k; i !== -1; i = (drafts[i] as ImportDraft).parent) out.unshift(short(drafts[i] as ImportDraft))
  return out
}

describe('a Pi session', () => {
  const s = readSession(fixture('pi-session.jsonl'), 'auto')
  it('is recognised, named by its session_info, its tree kept', () => {
    expect(s.format).toBe('pi')
    expect(s.title).toBe('Project tooling questions')
    expect(s.problems).toEqual([])
    const d = s.plan.drafts
    // the shown branch: the file's last message, through the branch summary and compaction
    expect(branch(d, s.tip)).toEqual([
      'user Which Node version does package.json ask for?',
      'assistant Let me look. [read]',
      'result toolu_pi_1 ok',
      'assistant It asks for Node 20 or later.',
      'note Summary of the branch left here in Pi:',
      'user Instead: which linter?',
      'note The user ran `ls eslint.config.js` in Pi (exit 0):',
      'note Pi compacted the conversation here (900 tokens before). Its summary:',
      'assistant ESLint, with a flat config.'
    ])
    // the other branch hangs from the same assistant reply
    const other = d.findIndex(x => x.item.kind === 'assistant' && x.item.text === 'Vitest, going by the scripts.')
    expect(branch(d, other).slice(0, 4)).toEqual(branch(d, s.tip).slice(0, 4))
    expect(branch(d, other).slice(4)).toEqual(['user And which test runner?', 'assistant Vitest, going by the scripts.'])
    const call = d[1]?.item
    expect(call).toMatchObject({ kind: 'assistant', reasoning: 'I should read package.json.', model: 'claude-sonnet-4-5', toolCalls: [{ id: 'toolu_pi_1', name: 'read', args: { path: '/etc/hostname' } }] })
  })

  it('of version 1 (no ids) is one chain', () => {
    const text = [
      JSON.stringify({ type: 'session', id: 's', timestamp: 't', cwd: '/' }),
      JSON.stringify({ type: 'message', timestamp: 't', message: { role: 'user', content: 'one' } }),
      JSON.stringify({ type: 'message', timestamp: 't', message: { role: 'assistant', content: [{ type: 'text', text: 'two' }] } }),
      JSON.stringify({ type: 'message', timestamp: 't', message: { role: 'user', content: 'three' } })
    ].join('\n')
    const v1 = readSession(text, 'pi')
    expect(branch(v1.plan.drafts, v1.tip)).toEqual(['user one', 'assistant two', 'user three'])
    expect(v1.title).toBe('one')
  })
})

describe('a Claude Code session', () => {
  const s = readSession(fixture('claude-code-session.jsonl'), 'auto')
  it('is recognised, named by its summary; a reply split over lines is one entry, its tool results follow it', () => {
    expect(s.format).toBe('claude-code')
    expect(s.title).toBe("Checking the project's Node version")
    expect(branch(s.plan.drafts, s.tip)).toEqual([
      'user What Node version does this project need?',
      'assistant  [Read]',
      'result toolu_01Read ok',
      'assistant It needs **Node 20** or later (`engines.node` is `>=20`).',
      'note Claude Code compacted the conversation here.',
      'user Thanks. Is 22 fine too?'
    ])
    expect(s.plan.drafts[1]?.item).toMatchObject({ reasoning: 'package.json will say.', toolCalls: [{ id: 'toolu_01Read', name: 'Read', args: { file_path: '/home/someone/project/package.json' } }] })
    expect(s.problems).toEqual(['1 line of subagent (sidechain) conversations left out', '1 bookkeeping line (file snapshots and the like) left out'])
  })
})

describe('hostile input', () => {
  const user = (uuid: string, parentUuid: string | null, text: string): string => JSON.stringify({ type: 'user', uuid, parentUuid, message: { role: 'user', content: text } })
  it('skips malformed lines, saying which; attaches dangling parents and cycles to the start, saying so', () => {
    const text = [
      user('a', null, 'first'),
      '{"type":"user", "uuid": "b", oops',
      '[1,2,3]',
      user('c', 'zzz', 'orphan'),
      user('d', 'e', 'loop one'),
      user('e', 'd', 'loop two'),
      user('a', null, 'a repeat'),
      JSON.stringify({ type: 'assistant', parentUuid: 'a', message: { content: 'no uuid' } })
    ].join('\n')
    const s = readSession(text, 'claude-code')
    expect(s.problems).toEqual([
      expect.stringMatching(/^line 2: not JSON/),
      'line 3: not a JSON object; skipped',
      'line 8: a assistant line without a "uuid"; skipped',
      'line 7: id "a" repeats line 1; skipped',
      'line 4: its parent "zzz" is not in the file; attached to the start',
      'line 5: its parents form a cycle; attached to the start'
    ])
    expect(s.plan.drafts.map(short)).toEqual(['user first', 'user orphan', 'user loop one', 'user loop two'])
    expect(s.plan.drafts.map(d => d.parent)).toEqual([-1, -1, -1, 2])
  })

  it('refuses a file too large, one of neither format, and one with nothing in it, saying why', () => {
    expect(() => readSession('x'.repeat(MAX_IMPORT_CHARS + 1), 'auto')).toThrow(/sessions up to 3 MiB are imported/)
    expect(() => readSession('{"hello":"world"}\nnot json', 'auto')).toThrow(/not a Pi or Claude Code session/)
    expect(() => readSession('{"type":"summary","summary":"only a title"}', 'auto')).toThrow(/nothing to import/)
    expect(detectFormat('garbage\n{"type":"session","version":3}')).toBe('pi')
  })

  it('cuts what an entry cannot hold, saying so', () => {
    const huge = 'y'.repeat(300_000)
    const text = [user('a', null, huge), JSON.stringify({ type: 'user', uuid: 'b', parentUuid: 'a', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: huge }] } })].join('\n')
    const drafts = entryDrafts(readSession(text, 'claude-code').plan, 'f'.repeat(64))
    expect(drafts[0]).toMatchObject({ kind: 'user', parents: ['f'.repeat(64)] })
    expect((drafts[0]?.body as { text: string }).text).toMatch(/\[cut at 200000 characters on import\]$/)
    expect(drafts[1]).toMatchObject({ kind: 'tool.result', body: { truncated: true }, parents: ['$0'] })
  })

  it('leaves out arguments that nest deeper than an entry holds them, though their line is within the bound', () => {
    // content as one block, not a list: the arguments sit a level nearer the top of the line than of the entry
    const line = (depth: number): string => JSON.stringify({ type: 'assistant', uuid: 'b', parentUuid: 'a', message: { id: 'm', content: { type: 'tool_use', id: 't', name: 'bash', input: 'DEEP' } } })
      .replace('"DEEP"', '['.repeat(depth) + ']'.repeat(depth))
    for (const [depth, kept] of [[MAX_ARGS_DEPTH, true], [MAX_ARGS_DEPTH + 1, false]] as const) {
      const text = [user('a', null, 'hello'), line(depth)].join('\n')
      expect(jsonDepth(line(depth))).toBeLessThanOrEqual(MAX_JSON_DEPTH)
      const s = readSession(text, 'claude-code')
      expect(s.problems).toEqual([])
      const drafts = entryDrafts(s.plan, 'f'.repeat(64))
      const args = (drafts[1]?.body as { toolCalls: Array<{ args: unknown }> }).toolCalls[0]?.args
      expect(kept ? jsonDepth(JSON.stringify(args)) : args).toEqual(kept ? depth : { imported: `arguments nesting deeper than ${MAX_ARGS_DEPTH} levels left out` })
      // and the entries can be written: within the bound
      let parent = 'f'.repeat(64)
      for (const d of drafts) parent = makeEntry({ ...d, parents: [parent] } as EntryDraft, { conversation: 'f'.repeat(64), device: 'a'.repeat(64), ts: 1 }).id
    }
  })
})
