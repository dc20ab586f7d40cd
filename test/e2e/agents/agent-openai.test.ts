import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { runCli } from '../../../src/main/cli/run-cli'
import { cliWithServer, type CliRun } from '../../helpers/captured-cli'
import { HistoryStore } from '../../../src/main/history/history-store'
import type { Entry } from '../../../src/shared/entry/entry'
import { reply, startOpenAITestServer, type OpenAITestServer } from '../../helpers/openai-test-server'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs()
let server: OpenAITestServer
beforeEach(async () => { server = await startOpenAITestServer({ apiKey: 'sk-local', models: ['test-model'] }) })
afterEach(async () => {
  await server.close()
  await dirs.cleanup()
})

// the key from the environment goes only to OPENAI_BASE_URL: the server is named there too
const arbor = (data: string, ...args: string[]): Promise<CliRun> => cliWithServer(data, server.baseURL)(...args)

describe('arbor chat with the real openai SDK against a local OpenAI-compatible server', () => {
  it('runs a multi-step, tool-using turn: bash makes a file in the workspace, read_file reads it back', async () => {
    const data = await dirs.make()
    const work = path.join(await dirs.make(), 'project')
    fs.mkdirSync(work)
    server.enqueue(
      reply.toolCalls([{ id: 'call_bash', name: 'bash', arguments: '{"command":"printf \'hello from bash\' > made.txt && echo written"}' }], { text: 'Making it.', usage: { prompt_tokens: 120, completion_tokens: 20 }, pieces: 5 }),
      reply.toolCalls([{ id: 'call_read', name: 'read_file', arguments: '{"path":"made.txt"}' }], { usage: { prompt_tokens: 160, completion_tokens: 12 } }),
      reply.text('The file says: hello from bash.', { usage: { prompt_tokens: 190, completion_tokens: 9 }, pieces: 3 })
    )
    const r = await arbor(data, 'chat', '--new', 'make', 'a', 'file', '--provider', 'openai', '--base-url', server.baseURL, '--model', 'test-model', '--cwd', work)
    expect(r.err).not.toMatch(/agent stopped/)
    expect(r.code).toBe(0)
    expect(r.out).toContain('Making it.')
    expect(r.out).toContain('⏵ bash printf')
    expect(r.out).toContain('The file says: hello from bash.')
    expect(r.err).toMatch(/tokens: 470 in, 41 out/)
    expect(fs.readFileSync(path.join(work, 'made.txt'), 'utf8')).toBe('hello from bash')

    // what the SDK sent: the tools, then each tool's result back to the model
    const reqs = server.chatRequests().map(q => q.body as { model: string; tools: Array<{ function: { name: string } }>; messages: Array<{ role: string; content: unknown; tool_call_id?: string }> })
    expect(reqs).toHaveLength(3)
    expect(reqs[0]?.model).toBe('test-model')
    expect(reqs[0]?.tools.map(t => t.function.name).sort()).toEqual(['bash', 'edit_file', 'http_get', 'list_dir', 'read_file', 'write_file'])
    expect(reqs[1]?.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_bash' })
    expect(String(reqs[1]?.messages.at(-1)?.content)).toContain('written')
    expect(reqs[2]?.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_read' })
    expect(String(reqs[2]?.messages.at(-1)?.content)).toContain('hello from bash')

    // the history holds exactly the expected entries
    const store = new HistoryStore({ dir: data })
    await store.ready()
    try {
      const [summary] = store.list()
      const dag = await store.open(summary?.id as string)
      const branch = dag.branch()
      expect(branch.map(e => e.kind)).toEqual([
        'conversation', 'meta', 'user', 'agent.started',
        'assistant', 'tool.intent', 'tool.result',
        'assistant', 'tool.intent', 'tool.result',
        'assistant', 'agent.stopped'
      ])
      expect(dag.size).toBe(branch.length)
      const body = (i: number): Record<string, unknown> => (branch[i] as Entry).body as Record<string, unknown>
      // the model settings are kept with the conversation, never the key
      expect(body(1)).toMatchObject({ key: 'llm', value: { provider: 'openai', model: 'test-model', baseURL: server.baseURL } })
      expect(JSON.stringify(body(1))).not.toContain('sk-local')
      branch.splice(1, 1)
      expect(body(1)).toEqual({ text: 'make a file' })
      expect(body(3)).toMatchObject({ text: 'Making it.', toolCalls: [{ id: 'call_bash', name: 'bash' }], usage: { input: 120, output: 20 }, model: 'test-model', finish: 'tool_calls' })
      expect(body(4)).toMatchObject({ callId: 'call_bash', tool: 'bash', effect: 'workspace', idemKey: `${(branch[3] as Entry).id}:call_bash` })
      expect(body(5)).toMatchObject({ callId: 'call_bash', status: 'ok' })
      expect(body(7)).toMatchObject({ callId: 'call_read', tool: 'read_file', effect: 'read' })
      expect(body(8)).toMatchObject({ callId: 'call_read', status: 'ok' })
      expect(String(body(8).output)).toContain('hello from bash')
      expect(body(9)).toMatchObject({ text: 'The file says: hello from bash.', finish: 'stop' })
      expect(body(10)).toMatchObject({ reason: 'done', epoch: 0 })
    } finally {
      await store.close()
    }
  })

  it('gives the model the project\'s AGENTS.md and the global one, and records which it was given in agent.started', async () => {
    const data = await dirs.make()
    const repo = path.join(await dirs.make(), 'repo')
    const work = path.join(repo, 'app')
    fs.mkdirSync(path.join(repo, '.git'), { recursive: true })
    fs.mkdirSync(work)
    fs.writeFileSync(path.join(repo, 'AGENTS.md'), 'Run the tests with npm test.\n')
    fs.writeFileSync(path.join(data, 'AGENTS.md'), 'Answer in British English.\n')
    server.enqueue(reply.text('Understood.'))
    const r = await arbor(data, 'chat', '--new', 'hello', '--provider', 'openai', '--base-url', server.baseURL, '--model', 'test-model', '--cwd', work)
    expect(r.code, r.err).toBe(0)
    const [req] = server.chatRequests().map(q => q.body as { messages: Array<{ role: string; content: unknown }> })
    const system = String(req?.messages[0]?.content)
    expect(req?.messages[0]?.role).toBe('system')
    expect(system).toContain(`Instructions from ${path.join(repo, 'AGENTS.md')}:\nRun the tests with npm test.`)
    expect(system.indexOf('British English')).toBeLessThan(system.indexOf('npm test'))
    const store = new HistoryStore({ dir: data })
    await store.ready()
    try {
      const dag = await store.open(store.list()[0]?.id as string)
      const started = dag.branch().find(e => e.kind === 'agent.started') as Entry
      const { createHash } = await import('node:crypto')
      expect((started.body as { instructions?: unknown }).instructions).toEqual([
        { path: path.join(data, 'AGENTS.md'), sha256: createHash('sha256').update('Answer in British English.\n').digest('hex'), bytes: 27 },
        { path: path.join(repo, 'AGENTS.md'), sha256: createHash('sha256').update('Run the tests with npm test.\n').digest('hex'), bytes: 29 }
      ])
    } finally {
      await store.close()
    }
  })

  it('a refused API key stops the agent with an entry that says what to do', async () => {
    const data = await dirs.make()
    server.enqueue(reply.unauthorized())
    let err = ''
    const code = await runCli(['chat', '--new', 'hi', '--provider', 'openai', '--base-url', server.baseURL, '--model', 'test-model'],
      { out: () => {}, err: t => { err += t }, env: { ARBOR_DATA: data, HOME: data, OPENAI_API_KEY: 'sk-wrong', OPENAI_BASE_URL: server.baseURL }, cwd: data })
    expect(code).toBe(1)
    expect(err).toMatch(/the agent stopped: .*(API key|key).*refused/i)
  })
})
