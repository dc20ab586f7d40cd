// The agent loop's compaction with real stores: a compaction is an entry of the branch, so an
// agent resumed on another device (its replica of the history) continues from the same summary
// and does not summarise again.
import { afterEach, describe, expect, it } from 'vitest'
import { HistoryStore } from '../../../src/main/history/history-store'
import { runAgent, type AgentDeps, type AgentOutcome, type AgentRun } from '../../../src/main/runtime/agent/agent-loop'
import { summaryMessage } from '../../../src/main/runtime/agent/compaction'
import { FakeProvider } from '../../../src/main/llm/fake-provider'
import type { ChatRequest, LlmProvider } from '../../../src/main/llm/provider'
import type { Entry, EntryOf } from '../../../src/shared/entry/entry'
import type { IrResult } from '../../../src/shared/llm-ir'
import { memoryLogger } from '../../../src/shared/logger'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs()
const stores: HistoryStore[] = []
afterEach(async () => {
  await Promise.all(stores.splice(0).map(s => s.close()))
  await dirs.cleanup()
})

async function store (): Promise<HistoryStore> {
  const s = new HistoryStore({ dir: await dirs.make(), log: memoryLogger() })
  await s.ready()
  stores.push(s)
  return s
}

/** A provider that keeps every request it answers. */
class Recording implements LlmProvider {
  readonly name = 'fake'
  readonly requests: ChatRequest[] = []
  constructor (private readonly inner: FakeProvider) {}
  async chat (req: ChatRequest): Promise<IrResult> {
    this.requests.push(req)
    return await this.inner.chat(req)
  }
}

const WINDOW = 1200

async function turn (history: HistoryStore, conversation: string, provider: LlmProvider, text: string, epoch = 0, reason: AgentRun['reason'] = 'user', expected: AgentOutcome = 'done', window: number | undefined = WINDOW): Promise<void> {
  const dag = await history.open(conversation)
  const tip = dag.branch().at(-1) as Entry
  const [user] = await history.append(conversation, [{ kind: 'user', body: { text }, parents: [tip.id] }])
  const deps: AgentDeps = {
    history,
    provider,
    model: 'fake',
    tools: new Map(),
    sandbox: { enabled: false, cwd: history.dir, hidden: [] },
    system: 'You are a test agent.',
    onEvent: () => {},
    ...(window !== undefined ? { contextWindow: { get: async () => window, learn: () => {} } } : {})
  }
  const run: AgentRun = { id: `run-${text.slice(0, 6)}`, conversation, epoch, reason, cursor: { tip: (user as Entry).id } }
  expect(await runAgent(deps, run, new AbortController().signal)).toBe(expected)
}

describe('compaction by the agent loop', () => {
  it('compacts before the step that would not fit; a resumed agent on another device continues from the same summary', async () => {
    const [laptop, server] = [await store(), await store()]
    const root = await laptop.createConversation({ title: 'long' })
    const onLaptop = new Recording(new FakeProvider({ default: { text: 'ok: ' + 'words '.repeat(60) } }))
    for (let i = 1; i <= 6; i++) await turn(laptop, root.id, onLaptop, `question ${i}: ${'tell me more. '.repeat(25)}`)
    const summaries = onLaptop.requests.filter(r => r.purpose === 'summary')
    expect(summaries.length).toBeGreaterThan(0)
    const dag = await laptop.open(root.id)
    const compactions = dag.branch().filter((e): e is EntryOf<'compaction'> => e.kind === 'compaction')
    expect(compactions).toHaveLength(summaries.length)
    const latest = compactions.at(-1) as EntryOf<'compaction'>
    expect(latest.body.summary).toMatch(/^Summary [0-9a-f]{16} of \d+ characters: /) // the fake's deterministic summary
    // every model request after the first compaction carries a summary and fits the window
    const first = onLaptop.requests.indexOf(summaries[0] as ChatRequest)
    for (const r of onLaptop.requests.slice(first + 1).filter(q => q.purpose === undefined)) {
      expect(r.messages[1]?.role).toBe('user')
      expect(r.messages[1]?.role === 'user' && r.messages[1].text.startsWith('[The earlier part of this conversation was compacted')).toBe(true)
    }

    // the server gets the history, then takes the agent over (a resume: a higher epoch, another device)
    const s1 = laptop.replicate(true)
    const s2 = server.replicate(false)
    s1.pipe(s2).pipe(s1)
    await server.addFeed(root.id, (laptop.feeds(root.id)[0] as { key: string }).key)
    const deadline = Date.now() + 10_000
    while (server.summary(root.id)?.size !== dag.size && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 10))
    s1.destroy(); s2.destroy()
    expect(server.summary(root.id)?.size).toBe(dag.size)

    const onServer = new Recording(new FakeProvider({ default: { text: 'from the server' } }))
    await turn(server, root.id, onServer, 'and now? (asked on the server)', 1, 'resume')
    const asked = onServer.requests.filter(r => r.purpose === undefined)
    expect(onServer.requests.filter(r => r.purpose === 'summary')).toEqual([]) // not summarised again
    expect(asked[0]?.messages[1]).toEqual(summaryMessage(latest)) // the same summary, from the laptop's entry
    expect(asked[0]?.messages.at(-1)).toEqual({ role: 'user', text: 'and now? (asked on the server)' })
  }, 60_000)

  it('a refusal of the context compacts once and retries once; refused again, the run stops and says why (no loop)', async () => {
    const history = await store()
    const root = await history.createConversation({ title: 'refused' })
    const fine = new Recording(new FakeProvider({ default: { text: 'fine' } }))
    await turn(history, root.id, fine, 'first', 0, 'user', 'done', undefined)
    const refusing = new Recording(new FakeProvider({ default: { fail: { code: 'context-length', message: 'too long' } } }))
    await turn(history, root.id, refusing, 'second', 0, 'user', 'error', undefined)
    expect(refusing.requests.map(r => r.purpose ?? 'model')).toEqual(['model', 'summary', 'model'])
    const branch = (await history.open(root.id)).branch()
    expect(branch.map(e => e.kind).slice(-3)).toEqual(['agent.started', 'compaction', 'agent.stopped'])
    expect(branch.at(-1)).toMatchObject({ body: { reason: 'error', message: expect.stringMatching(/too long\. It was compacted as far as it can be: the latest message and its latest step alone do not fit/) as unknown } })
    // what was retried: the summary and the latest message only
    expect(refusing.requests[2]?.messages.map(m => m.role)).toEqual(['system', 'user', 'user'])
  })
})
