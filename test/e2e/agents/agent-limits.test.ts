// Limits against runaway turns (runtime/agent/turn-limits.ts) through `arbor chat`, against the
// local OpenAI-compatible test server: a model that never stops calling tools is stopped at a step
// boundary by this device's step limit or token budget, with an entry that says which and how to
// go on; a message goes on with a fresh count. Real bash in bwrap, real history on disk.
import { afterEach, describe, expect, it } from 'vitest'
import { cliWithServer, type CliRun } from '../../helpers/captured-cli'
import { HistoryStore } from '../../../src/main/history/history-store'
import type { Entry } from '../../../src/shared/entry/entry'
import { reply, startOpenAITestServer, type OpenAITestServer } from '../../helpers/openai-test-server'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs()
let server: OpenAITestServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
  await dirs.cleanup()
})

const cliOn = (data: string, s: OpenAITestServer, workspaces?: string): ((...args: string[]) => Promise<CliRun>) => cliWithServer(data, s.baseURL, workspaces)

async function branchOf (data: string): Promise<Entry[]> {
  const store = new HistoryStore({ dir: data })
  await store.ready()
  try {
    return (await store.open((store.list()[0] as { id: string }).id)).branch()
  } finally {
    await store.close()
  }
}

/** Every tool call on the branch has its result, and the result comes before the stop that follows it. */
function callsAnswered (branch: Entry[]): void {
  const results = new Set(branch.flatMap(e => e.kind === 'tool.result' && e.body.status === 'ok' ? [e.body.callId] : []))
  const calls = branch.flatMap(e => e.kind === 'assistant' ? (e.body.toolCalls ?? []).map(c => c.id) : [])
  expect(calls.filter(id => !results.has(id))).toEqual([])
}

/** A model that always asks for one more command (a runaway turn), with usage as the server reports it. */
function runaway (s: OpenAITestServer, usage?: { prompt_tokens: number; completion_tokens: number }): void {
  s.respond = (_rec, i) => reply.toolCalls([{ id: `call_${i}`, name: 'bash', arguments: JSON.stringify({ command: 'true' }) }], usage !== undefined ? { usage } : {})
}

describe('limits against runaway turns', () => {
  it('--max-steps: the turn stops after that many model steps, every call with its result; a message goes on with a fresh count', async () => {
    const s = server = await startOpenAITestServer({ apiKey: 'sk-local', models: ['test-model'] })
    runaway(s)
    const data = await dirs.make()
    const arbor = cliOn(data, s, await dirs.make())
    const first = await arbor('chat', '--new', 'loop for ever', '--provider', 'openai', '--base-url', s.baseURL, '--model', 'test-model', '--max-steps', '3')
    expect(first.err).toMatch(/the agent stopped at its steps limit: stopped after 3 model steps in this turn \(this device's limit is 3\)\. Send a message, or resume, to go on/)
    expect(first.code).toBe(1)
    expect(s.chatRequests()).toHaveLength(3)
    let branch = await branchOf(data)
    callsAnswered(branch)
    expect(branch.at(-2)?.kind).toBe('tool.result') // stopped at a step boundary
    expect(branch.at(-1)).toMatchObject({ kind: 'agent.stopped', body: { reason: 'done', limit: 'steps' } })
    expect(branch.find(e => e.kind === 'meta' && e.body.key === 'limits')).toMatchObject({ body: { value: { maxSteps: 3 } } })

    // the next message: a fresh count of 3, then the model answers within it
    const id = (branch[0] as Entry).id
    let n = 0
    s.respond = (_rec, i) => ++n < 3 ? reply.toolCalls([{ id: `again_${i}`, name: 'bash', arguments: JSON.stringify({ command: 'true' }) }]) : reply.text('finished')
    const second = await arbor('chat', id.slice(0, 12), 'go on')
    expect(second.err).not.toMatch(/stopped/)
    expect(second.code).toBe(0)
    expect(s.chatRequests()).toHaveLength(6)
    branch = await branchOf(data)
    callsAnswered(branch)
    expect(branch.at(-1)).toMatchObject({ kind: 'agent.stopped', body: { reason: 'done' } })
    expect((branch.at(-1) as Entry & { body: { limit?: string } }).body.limit).toBeUndefined()
  }, 60_000)

  it('--token-budget: the agent stops before the step that would start past the budget, whichever turn it is', async () => {
    const s = server = await startOpenAITestServer({ apiKey: 'sk-local', models: ['test-model'] })
    runaway(s, { prompt_tokens: 100, completion_tokens: 10 })
    const data = await dirs.make()
    const arbor = cliOn(data, s, await dirs.make())
    const first = await arbor('chat', '--new', 'spend', '--provider', 'openai', '--base-url', s.baseURL, '--model', 'test-model', '--token-budget', '250')
    expect(first.code).toBe(1)
    expect(first.err).toMatch(/tokens limit: stopped: the conversation used 330 tokens of its 250-token budget on this device\. To go on, raise the budget/)
    expect(s.chatRequests()).toHaveLength(3) // 110, 220 < 250: a third step; 330: none
    const branch = await branchOf(data)
    callsAnswered(branch)
    expect(branch.at(-1)).toMatchObject({ kind: 'agent.stopped', body: { reason: 'done', limit: 'tokens' } })
    // a new message does not reset a budget; raising it does
    const id = (branch[0] as Entry).id
    expect((await arbor('chat', id.slice(0, 12), 'more')).code).toBe(1)
    expect(s.chatRequests()).toHaveLength(3)
    s.respond = () => reply.text('done', { usage: { prompt_tokens: 100, completion_tokens: 10 } })
    const raised = await arbor('chat', id.slice(0, 12), 'more', '--token-budget', '1000')
    expect(raised.code).toBe(0)
    expect(s.chatRequests()).toHaveLength(4)
  }, 60_000)
})
