// Attack (issue 23): the model is untrusted, and its tool call's arguments nest 100,000 levels
// (a prompt injection asks for it). Every recursive walk of them (the canonical encoder that
// writes the assistant entry, JSON.stringify of the next request) would overflow the stack.
// The call must become an error tool result that the model reads, saying why, and the turn go
// on: no crash, no stuck agent. `arbor chat`, the real openai SDK, a local OpenAI-compatible server.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { cliWithServer, type CliRun } from '../../helpers/captured-cli'
import { HistoryStore } from '../../../src/main/history/history-store'
import { MAX_ARGS_DEPTH, type Entry } from '../../../src/shared/entry/entry'
import { reply, startOpenAITestServer, type OpenAITestServer } from '../../helpers/openai-test-server'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs()
let server: OpenAITestServer
// The call's 200 KB go back to the model with its result (as invalid JSON does): a window they fit in, so no compaction comes first.
beforeEach(async () => { server = await startOpenAITestServer({ apiKey: 'sk-local', models: ['test-model'], contextWindow: 1_000_000 }) })
afterEach(async () => {
  await server.close()
  await dirs.cleanup()
})

const arbor = (data: string, ...args: string[]): Promise<CliRun> => cliWithServer(data, server.baseURL)(...args)

describe('attack: a tool call whose arguments nest 100,000 levels', () => {
  it('becomes an error tool result the model reads; the turn goes on to the model\'s answer', async () => {
    const data = await dirs.make()
    const work = path.join(await dirs.make(), 'project')
    fs.mkdirSync(work)
    const depth = 100_000
    const args = '{"path":' + '['.repeat(depth) + ']'.repeat(depth) + '}'
    server.enqueue(
      reply.toolCalls([{ id: 'call_deep', name: 'read_file', arguments: args }], { pieces: 64 * 1024 }),
      reply.text('I will not do that again.')
    )
    const r = await arbor(data, 'chat', '--new', 'read', 'it', '--provider', 'openai', '--base-url', server.baseURL, '--model', 'test-model', '--cwd', work)
    expect(r.err).not.toMatch(/agent stopped|Maximum call stack/)
    expect(r.code).toBe(0)
    expect(r.out).toContain('I will not do that again.')

    // the model was told, in the call's tool message, what was wrong
    const reqs = server.chatRequests().map(q => q.body as { messages: Array<{ role: string; content: unknown; tool_call_id?: string }> })
    expect(reqs).toHaveLength(2)
    const told = reqs[1]?.messages.at(-1)
    expect(told).toMatchObject({ role: 'tool', tool_call_id: 'call_deep' })
    expect(String(told?.content)).toContain(`nest deeper than ${MAX_ARGS_DEPTH} levels of arrays and objects`)

    const store = new HistoryStore({ dir: data })
    await store.ready()
    try {
      const branch = (await store.open(store.list()[0]?.id as string)).branch()
      expect(branch.map(e => e.kind).slice(-5)).toEqual(['assistant', 'tool.intent', 'tool.result', 'assistant', 'agent.stopped'])
      expect((branch.at(-3) as Entry).body).toMatchObject({ callId: 'call_deep', status: 'error' })
    } finally {
      await store.close()
    }
  }, 60_000)
})
