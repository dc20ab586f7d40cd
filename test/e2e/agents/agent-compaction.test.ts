// A conversation longer than the model's window, against a local OpenAI-compatible server that
// refuses what does not fit (400 context_length_exceeded, as OpenAI does): many long turns, each
// answered; the history keeps every entry; no request after the first compaction is over the window.
import { afterEach, describe, expect, it } from 'vitest'
import { runCli } from '../../../src/main/cli/run-cli'
import { cliWithServer, type CliRun } from '../../helpers/captured-cli'
import { HistoryStore } from '../../../src/main/history/history-store'
import { SUMMARISER_PROMPT, SUMMARY_HEADER } from '../../../src/main/runtime/agent/compaction'
import type { Entry } from '../../../src/shared/entry/entry'
import { reply, startOpenAITestServer, type OpenAITestServer, type RecordedRequest } from '../../helpers/openai-test-server'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs()
let server: OpenAITestServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
  await dirs.cleanup()
})

const WINDOW = 3000
const TURNS = 10

const cliOn = (data: string, s: OpenAITestServer, workspaces?: string): ((...args: string[]) => Promise<CliRun>) => cliWithServer(data, s.baseURL, workspaces)

function isSummary (r: RecordedRequest): boolean {
  return (r.body as { messages: Array<{ content: unknown }> }).messages[0]?.content === SUMMARISER_PROMPT
}

async function longConversation (s: OpenAITestServer): Promise<{ data: string; outs: string[] }> {
  let summaries = 0
  s.respond = rec => {
    if (isSummary(rec)) return reply.text(`Summary #${++summaries}: the user sent long messages and each was answered at length.`)
    const last = (rec.body as { messages: Array<{ role: string; content: string }> }).messages.findLast(m => m.role === 'user')
    const n = /turn (\d+)/.exec(last?.content ?? '')?.[1] ?? '?'
    return reply.text(`Answer to turn ${n}: ` + 'a long answer. '.repeat(40))
  }
  const data = await dirs.make()
  const arbor = cliOn(data, s)
  const outs: string[] = []
  const first = await arbor('chat', '--new', `turn 1: ${'a long question. '.repeat(50)}`, '--provider', 'openai', '--base-url', s.baseURL, '--model', 'test-model')
  expect(first.err).not.toMatch(/agent stopped/)
  expect(first.code).toBe(0)
  outs.push(first.out)
  const store = new HistoryStore({ dir: data })
  await store.ready()
  const id = (store.list()[0] as { id: string }).id
  await store.close()
  for (let t = 2; t <= TURNS; t++) {
    const r = await arbor('chat', id.slice(0, 12), `turn ${t}: ${'a long question. '.repeat(50)}`)
    expect(r.err, `turn ${t}`).not.toMatch(/agent stopped/)
    expect(r.code, `turn ${t}`).toBe(0)
    outs.push(r.out)
  }
  return { data, outs }
}

async function branchOf (data: string): Promise<{ branch: Entry[]; size: number }> {
  const store = new HistoryStore({ dir: data })
  await store.ready()
  try {
    const dag = await store.open((store.list()[0] as { id: string }).id)
    return { branch: dag.branch(), size: dag.size }
  } finally {
    await store.close()
  }
}

function checkHistory (branch: Entry[], size: number, outs: string[]): void {
  // every turn answered, in the transcript and the history; every entry kept, on one branch
  outs.forEach((out, i) => expect(out).toContain(`Answer to turn ${i + 1}:`))
  expect(branch.filter(e => e.kind === 'user').map(e => /^turn \d+:/.exec((e.body as { text: string }).text)?.[0])).toEqual(outs.map((_, i) => `turn ${i + 1}:`))
  expect(branch.filter(e => e.kind === 'assistant')).toHaveLength(TURNS)
  expect(size).toBe(branch.length)
  const compactions = branch.filter(e => e.kind === 'compaction')
  expect(compactions.length).toBeGreaterThan(1)
  for (const c of compactions) if (c.kind === 'compaction') expect(c.body.folded.from).toBe((branch[0] as Entry).id)
}

describe('a conversation longer than the model window', () => {
  it('the window reported by the server (vLLM max_model_len): compacted before each step that would not fit; no request is refused', async () => {
    const s = server = await startOpenAITestServer({ apiKey: 'sk-local', models: ['test-model'], contextWindow: WINDOW })
    const { data, outs } = await longConversation(s)
    const chats = s.chatRequests()
    expect(chats.every(r => (r.tokens as number) <= WINDOW), `requests over the window: ${chats.map(r => r.tokens).join(', ')}`).toBe(true)
    const { branch, size } = await branchOf(data)
    checkHistory(branch, size, outs)
    // what the model was sent after a compaction: the system prompt, the summary, the kept entries
    const after = chats.filter(r => !isSummary(r)).at(-1)?.body as { messages: Array<{ role: string; content: string }> }
    expect(after.messages[0]?.role).toBe('system')
    expect(after.messages[1]?.content).toMatch(new RegExp(`^${SUMMARY_HEADER.replace(/[[\].()]/g, '\\$&')}\\n\\nSummary #\\d+`))
    // a turn that fits asks the model once: a summary only where the branch had grown past the window
    expect(chats.filter(isSummary).length).toBe(branch.filter(e => e.kind === 'compaction').length)
  }, 120_000)

  it('a window nobody reported: the first refusal compacts and retries once, and no request after that is over the window', async () => {
    const s = server = await startOpenAITestServer({ apiKey: 'sk-local', models: ['test-model'], contextWindow: WINDOW, reports: 'none' })
    const { data, outs } = await longConversation(s)
    const chats = s.chatRequests()
    const refused = chats.map((r, i) => ({ i, over: (r.tokens as number) > WINDOW })).filter(r => r.over).map(r => r.i)
    expect(refused.length).toBeGreaterThanOrEqual(1)
    const firstSummary = chats.findIndex(isSummary)
    expect(firstSummary).toBe((refused[0] as number) + 1) // the refusal is answered by compacting
    expect(refused.every(i => i < firstSummary), `refused after the first compaction: ${refused.join(', ')}`).toBe(true)
    const { branch, size } = await branchOf(data)
    checkHistory(branch, size, outs)
  }, 120_000)

  for (const reports of ['vllm', 'none'] as const) {
    it(`a single turn larger than the window (window ${reports === 'vllm' ? 'reported' : 'nobody reported'}): folded after completed steps, the message kept verbatim; every step answered, no request over the window after the first compaction`, async () => {
      const s = server = await startOpenAITestServer({ apiKey: 'sk-local', models: ['test-model'], contextWindow: WINDOW, reports })
      const STEPS = 12
      let summaries = 0
      let steps = 0
      // each command prints ~2,500 characters (~630 tokens): the turn's outputs alone are ~2.5 windows
      s.respond = rec => isSummary(rec)
        ? reply.text(`Summary #${++summaries}: the agent ran seq commands for the user, ${steps} so far, each printed numbers.`)
        : ++steps <= STEPS ? reply.toolCalls([{ id: `call_${steps}`, name: 'bash', arguments: JSON.stringify({ command: `seq ${steps * 1000} ${steps * 1000 + 500}` }) }]) : reply.text(`Finished: ran ${STEPS} commands.`)
      const data = await dirs.make()
      const arbor = cliOn(data, s, await dirs.make())
      const ask = 'run twelve seq commands, one at a time'
      const r = await arbor('chat', '--new', ask, '--provider', 'openai', '--base-url', s.baseURL, '--model', 'test-model')
      expect(r.err).not.toMatch(/agent stopped/)
      expect(r.code).toBe(0)
      expect(r.out).toContain(`Finished: ran ${STEPS} commands.`)
      const { branch, size } = await branchOf(data)
      expect(size).toBe(branch.length) // every entry kept
      const user = branch.find(e => e.kind === 'user') as Entry
      // every step answered: each call has its ok result, in order, and the model answered at the end
      const results = branch.filter(e => e.kind === 'tool.result')
      expect(results.map(e => [e.body.callId, e.body.status])).toEqual(Array.from({ length: STEPS }, (_, i) => [`call_${i + 1}`, 'ok']))
      expect(branch.filter(e => e.kind === 'assistant')).toHaveLength(STEPS + 1)
      const compactions = branch.filter(e => e.kind === 'compaction')
      expect(compactions.length).toBeGreaterThan(0)
      for (const c of compactions) expect(c.body).toMatchObject({ keep: user.id, folded: { from: (branch[0] as Entry).id } })
      // what the model was sent after the first compaction: never over the window; the message verbatim after the summary
      const chats = s.chatRequests()
      const firstSummary = chats.findIndex(isSummary)
      expect(firstSummary).toBeGreaterThan(0)
      const over = chats.map((q, i) => ({ i, tokens: q.tokens as number })).filter(q => q.tokens > WINDOW)
      expect(over.every(q => q.i < firstSummary), `over the window: ${JSON.stringify(over)}`).toBe(true)
      if (reports === 'vllm') expect(over).toEqual([])
      const last = chats.at(-1)?.body as { messages: Array<{ role: string; content: string }> }
      expect(last.messages.slice(0, 3).map(m => m.role)).toEqual(['system', 'user', 'user'])
      expect(last.messages[1]?.content).toMatch(/^\[The earlier part/)
      expect(last.messages[2]?.content).toBe(ask)
      const asked = chats.filter(isSummary)[0]?.body as { messages: Array<{ content: string }> }
      expect(asked.messages[1]?.content).toMatch(/latest message is told to the agent again/)
    }, 120_000)
  }

  it('arbor compact <conv> [focus]: on demand, with what to focus on; refused when there is nothing to fold', async () => {
    const s = server = await startOpenAITestServer({ apiKey: 'sk-local', models: ['test-model'], contextWindow: 100_000 })
    s.respond = rec => isSummary(rec) ? reply.text('Summary: two questions were answered.') : reply.text('an answer')
    const data = await dirs.make()
    const arbor = cliOn(data, s)
    expect((await arbor('chat', '--new', 'first question', '--provider', 'openai', '--base-url', s.baseURL, '--model', 'test-model')).code).toBe(0)
    const { branch } = await branchOf(data)
    const id = (branch[0] as Entry).id
    expect(await arbor('compact', id.slice(0, 10))).toMatchObject({ code: 1, err: expect.stringMatching(/nothing to compact: there is nothing before the latest message to compact/) as unknown })
    expect((await arbor('chat', id.slice(0, 10), 'second question')).code).toBe(0)
    const done = await arbor('compact', id.slice(0, 10), 'the', 'questions')
    expect(done.err).toBe('')
    expect(done.code).toBe(0)
    expect(done.out).toMatch(/^compacted [0-9a-f]{12}: its context \(about \d+ tokens of a 100000-token window\) now starts from a summary, entry [0-9a-f]{8}; the history keeps every entry\n$/)
    const asked = s.chatRequests().filter(isSummary).at(-1)?.body as { messages: Array<{ content: string }> }
    expect(asked.messages[1]?.content).toContain('focusing on: the questions')
    expect(asked.messages[1]?.content).toContain('User: first question')
    expect(asked.messages[1]?.content).not.toContain('second question') // the latest message and its answer are kept as they are
    const after = await branchOf(data)
    expect(after.branch.at(-1)).toMatchObject({ kind: 'compaction', body: { summary: 'Summary: two questions were answered.', focus: 'the questions', model: 'test-model', folded: { from: id } } })
    // the next turn is sent the summary and the kept turn
    expect((await arbor('chat', id.slice(0, 10), 'third question')).code).toBe(0)
    const next = s.chatRequests().at(-1)?.body as { messages: Array<{ role: string; content: string }> }
    expect(next.messages.map(m => m.role)).toEqual(['system', 'user', 'user', 'assistant', 'user'])
    expect(next.messages.slice(2).map(m => m.content)).toEqual(['second question', 'an answer', 'third question'])
  }, 60_000)

  it('arbor chat --context-window N: the conversation\'s own window wins over the server\'s', async () => {
    const s = server = await startOpenAITestServer({ apiKey: 'sk-local', models: ['test-model'], contextWindow: 100_000 })
    s.respond = rec => isSummary(rec) ? reply.text('Summary: long questions, long answers.') : reply.text('an answer. '.repeat(40))
    const data = await dirs.make()
    const env = { ARBOR_DATA: data, HOME: data, OPENAI_API_KEY: 'sk-local', OPENAI_BASE_URL: s.baseURL, PATH: process.env.PATH }
    const chat = async (...args: string[]): Promise<number> => await runCli(['chat', ...args], { out: () => {}, err: () => {}, env, cwd: data })
    expect(await chat('--new', 'q1 ' + 'long. '.repeat(150), '--provider', 'openai', '--base-url', s.baseURL, '--model', 'test-model', '--context-window', '2500')).toBe(0)
    const id = ((await branchOf(data)).branch[0] as Entry).id
    for (let t = 2; t <= 4; t++) expect(await chat(id.slice(0, 10), `q${t} ` + 'long. '.repeat(150))).toBe(0)
    const { branch } = await branchOf(data)
    expect(branch.find(e => e.kind === 'meta' && e.body.key === 'llm')).toMatchObject({ body: { value: { contextWindow: 2500 } } })
    expect(branch.some(e => e.kind === 'compaction')).toBe(true)
    expect(s.chatRequests().every(r => (r.tokens as number) <= 2500)).toBe(true)
  }, 60_000)
})
