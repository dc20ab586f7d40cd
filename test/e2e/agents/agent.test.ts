import { afterEach, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { HistoryStore } from '../../../src/main/history/history-store'
import { FakeProvider, type FakeScript } from '../../../src/main/llm/fake-provider'
import type { LlmProvider } from '../../../src/main/llm/provider'
import { AgentHost, type AgentConfig } from '../../../src/main/runtime/agent/agent-host'
import type { AgentEvent, FaultPoint } from '../../../src/main/runtime/agent/agent-loop'
import { validateEntry } from '../../../src/main/history/store/entry-codec'
import type { Tool } from '../../../src/main/tools/tool'
import type { Entry, EntryOf } from '../../../src/shared/entry/entry'
import { memoryLogger } from '../../../src/shared/logger'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs()
const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
  await dirs.cleanup()
})

/** Tools made for these tests: a ledger of external effects, a lookup, one that blows up. */
function testTools (ledger: string[], lookups: string[], explodeTimes = { left: 0 }): Map<string, Tool> {
  const tool = (name: string, effect: Tool['effect'], run: Tool['run']): Tool => ({ name, description: name, parameters: { type: 'object', properties: {} }, effect, timeoutMs: 5000, run })
  return new Map([
    ['ledger', tool('ledger', 'external', async (args, ctx) => { ledger.push(ctx.idemKey); return { status: 'ok', output: `paid ${JSON.stringify(args)}` } })],
    ['lookup', tool('lookup', 'read', async (_a, ctx) => { lookups.push(ctx.idemKey); return { status: 'ok', output: 'found it' } })],
    ['explode', tool('explode', 'read', async () => {
      if (explodeTimes.left-- > 0) throw new Error('the tool blew up')
      return { status: 'ok', output: 'fine this time' }
    })]
  ])
}

async function setup (script: FakeScript, opts: { tools?: Map<string, Tool>; fault?: (p: FaultPoint) => void; intensity?: number; midModel?: () => void; gate?: (lastUser: string) => Promise<void> } = {}) {
  const history = new HistoryStore({ dir: await dirs.make(), log: memoryLogger() })
  await history.ready()
  const fake = new FakeProvider(script)
  const midModel = opts.midModel
  const gate = opts.gate
  const lastUser = (req: Parameters<LlmProvider['chat']>[0]): string => { const m = req.messages.findLast(x => x.role === 'user'); return m?.role === 'user' ? m.text : '' }
  const provider: LlmProvider = midModel === undefined && gate === undefined
    ? fake
    : { name: 'fake', chat: async req => { await gate?.(lastUser(req)); const r = await fake.chat(req); midModel?.(); return r } }
  const ledger: string[] = []
  const lookups: string[] = []
  const tools = opts.tools ?? testTools(ledger, lookups)
  const events: AgentEvent[] = []
  const config: AgentConfig = { provider, model: 'fake-1', tools, sandbox: { enabled: true, cwd: '/tmp', hidden: [] }, system: 'You are a test agent.' }
  const host = new AgentHost({
    history,
    configFor: async () => config,
    onEvent: ev => events.push(ev),
    intensity: opts.intensity ?? 3,
    periodMs: 60_000,
    ...(opts.fault !== undefined ? { fault: opts.fault } : {})
  })
  await host.ready()
  closers.push(() => history.close(), () => host.close())
  const chat = async (conversation: string, text: string) => {
    const dag = await history.open(conversation)
    const tip = dag.branch().at(-1) as Entry
    const [u] = await history.append(conversation, [{ kind: 'user', body: { text }, parents: [tip.id] }])
    await host.start(conversation, { leaf: (u as Entry).id })
    return host.wait(conversation)
  }
  return { history, host, ledger, lookups, events, chat }
}

const kinds = (branch: Entry[]): string[] => branch.map(e => e.kind === 'agent.stopped' ? `stopped:${e.body.reason}` : e.kind === 'tool.result' ? `result:${e.body.status}` : e.kind)

const PAY_SCRIPT: FakeScript = {
  rules: [{
    match: 'pay',
    reply: [
      { toolCalls: [{ name: 'lookup', args: { q: 'price' } }, { name: 'ledger', args: { amount: 5 } }] },
      { toolCalls: [{ name: 'ledger', args: { amount: 7 } }] },
      { text: 'Paid twice. {{lastToolOutput}}', usage: { input: 30, output: 6 } }
    ]
  }]
}

describe('the agent', () => {
  it('answers, runs tools, journals every step and stops when the model answers without tools', async () => {
    const { history, chat, ledger, events } = await setup(PAY_SCRIPT)
    const root = await history.createConversation({ title: 'pay' })
    expect(await chat(root.id, 'please pay')).toBe('done')
    const dag = await history.open(root.id)
    const branch = dag.branch()
    expect(kinds(branch)).toEqual([
      'conversation', 'user', 'agent.started',
      'assistant', 'tool.intent', 'result:ok', 'tool.intent', 'result:ok',
      'assistant', 'tool.intent', 'result:ok',
      'assistant', 'stopped:done'
    ])
    expect(ledger).toHaveLength(2)
    const last = branch.at(-2) as EntryOf<'assistant'>
    expect(last.body).toMatchObject({ text: 'Paid twice. paid {"amount":7}', usage: { input: 30, output: 6 }, model: 'fake-1' })
    expect(events.filter(e => e.type === 'token').map(e => (e as { delta: string }).delta).join('')).toContain('Paid twice.')
    expect(events.some(e => e.type === 'tool-start')).toBe(true)
  })

  it('starts a step that may not run twice only once its intent, and the message that asked for it, are stored', async () => {
    // The journal is written behind the agent; what it waits for is visible in the store.
    const made: { history?: HistoryStore } = {} // the tools look into the store setup() makes
    const seen: Array<{ tool: string; stored: boolean }> = []
    const check = (name: string, effect: Tool['effect']): Tool => ({
      name,
      description: name,
      parameters: { type: 'object', properties: {} },
      effect,
      timeoutMs: 5000,
      run: async (_args, ctx) => {
        const history = made.history as HistoryStore
        const [conversation] = history.list().map(c => c.id)
        const dag = await history.open(conversation as string)
        const intent = [...dag.entries()].find(e => e.kind === 'tool.intent' && e.body.idemKey === ctx.idemKey)
        seen.push({ tool: name, stored: intent !== undefined && dag.isJoined(intent.id) && dag.isJoined(intent.parents[0] as string) })
        return { status: 'ok', output: 'done' }
      }
    })
    const tools = new Map([['write', check('write', 'workspace')], ['pay', check('pay', 'external')], ['look', check('look', 'read')]])
    const script: FakeScript = { rules: [{ match: 'go', reply: [{ toolCalls: [{ name: 'look' }, { name: 'write' }] }, { toolCalls: [{ name: 'pay' }] }, { text: 'all done' }] }] }
    const env = await setup(script, { tools })
    const history = made.history = env.history
    const root = await history.createConversation({ title: 'journal first' })
    expect(await env.chat(root.id, 'go')).toBe('done')
    expect(seen.filter(s => s.tool !== 'look')).toEqual([{ tool: 'write', stored: true }, { tool: 'pay', stored: true }])
    expect(kinds((await history.open(root.id)).branch())).toEqual([
      'conversation', 'user', 'agent.started', 'assistant', 'tool.intent', 'result:ok', 'tool.intent', 'result:ok',
      'assistant', 'tool.intent', 'result:ok', 'assistant', 'stopped:done'
    ])
  })

  it('stops a crash-looping agent with a clear entry while another conversation keeps running', async () => {
    const script: FakeScript = { rules: [{ match: 'boom', reply: { fail: { message: 'the model service fell over' } } }, { match: 'slow', reply: { text: 'slowly but surely' } }] }
    // b's model answers only once a has crash-looped: b is mid-step all along, on any machine
    let release = (): void => {}
    const held = new Promise<void>(resolve => { release = resolve })
    const { history, host, chat } = await setup(script, { intensity: 2, gate: async text => { if (text === 'slow please') await held } })
    const a = await history.createConversation({ title: 'a' })
    const b = await history.createConversation({ title: 'b' })
    const slow = chat(b.id, 'slow please')
    expect(await chat(a.id, 'boom')).toBe('crash-loop')
    expect(host.isRunning(b.id)).toBe(true)
    release()
    expect(await slow).toBe('done')
    const branch = (await history.open(a.id)).branch()
    expect(kinds(branch).filter(k => k.startsWith('stopped') || k === 'agent.started')).toEqual([
      'agent.started', 'stopped:error', 'agent.started', 'stopped:error', 'agent.started', 'stopped:error', 'stopped:crash-loop'
    ])
    expect((branch.filter(e => e.kind === 'agent.started') as Array<EntryOf<'agent.started'>>).map(e => e.body.reason)).toEqual(['user', 'restart', 'restart'])
    const last = branch.at(-1) as EntryOf<'agent.stopped'>
    expect(last.body.message).toMatch(/crashed 3 times.*last error: the model service fell over/)
    expect((await history.open(b.id)).branch().at(-2)).toMatchObject({ kind: 'assistant', body: { text: 'slowly but surely' } })
  })

  it('stops at once on an error a restart cannot fix, saying what to do', async () => {
    const { history, chat } = await setup({ default: { fail: { code: 'auth', message: 'the API key was refused by http://x/v1; set OPENAI_API_KEY' } } })
    const root = await history.createConversation({ title: 'auth' })
    expect(await chat(root.id, 'hi')).toBe('error')
    const last = (await history.open(root.id)).branch().at(-1) as EntryOf<'agent.stopped'>
    expect(last.body).toMatchObject({ reason: 'error', message: expect.stringMatching(/OPENAI_API_KEY/) })
  })

  it('cancel ends the current step cleanly and records it', async () => {
    const ledger: string[] = []
    let markStarted!: () => void
    const started = new Promise<void>(resolve => { markStarted = resolve })
    const tools = testTools(ledger, [])
    tools.set('wait', { name: 'wait', description: 'waits', parameters: {}, effect: 'read', timeoutMs: 60_000, run: (_a, ctx) => new Promise(resolve => { markStarted(); ctx.signal.addEventListener('abort', () => resolve({ status: 'error', output: 'stopped while waiting' })) }) })
    const { history, host, chat } = await setup({ default: { toolCalls: [{ name: 'wait' }] } }, { tools })
    const root = await history.createConversation({ title: 'cancel' })
    const ended = chat(root.id, 'wait for it')
    await started
    await host.cancel(root.id)
    expect(await ended).toBe('cancelled')
    expect(kinds((await history.open(root.id)).branch()).slice(-3)).toEqual(['tool.intent', 'result:cancelled', 'stopped:cancelled'])
  })

  it('starts the next run of a conversation the moment the last one ended', async () => {
    const { history, host } = await setup({ default: { text: 'ok' } })
    const conv = (await history.createConversation({ title: 'back to back' })).id
    for (let i = 0; i < 5; i++) {
      const dag = await history.open(conv)
      const [u] = await history.append(conv, [{ kind: 'user', body: { text: `m${i}` }, parents: [(dag.branch().at(-1) as Entry).id] }])
      await host.start(conv, { leaf: (u as Entry).id })
      expect(await host.wait(conv)).toBe('done')
    }
    const stops = [...(await history.open(conv)).entries()].filter(e => e.kind === 'agent.stopped')
    expect(stops).toHaveLength(5)
  })

  it('after a tool crash, re-runs a read step with the same idempotency key', async () => {
    const lookups: string[] = []
    const explode = { left: 1 }
    const tools = testTools([], lookups, explode)
    const { history, chat } = await setup({ rules: [{ match: 'x', reply: [{ toolCalls: [{ name: 'explode' }] }, { text: 'ok' }] }] }, { tools })
    const root = await history.createConversation({ title: 'crash' })
    expect(await chat(root.id, 'x')).toBe('done')
    const branch = (await history.open(root.id)).branch()
    expect(kinds(branch)).toEqual(['conversation', 'user', 'agent.started', 'assistant', 'tool.intent', 'stopped:error', 'agent.started', 'result:ok', 'assistant', 'stopped:done'])
    expect(explode.left).toBe(-1) // ran twice: crashed, then fine
  })
})

type Where = FaultPoint | 'mid-model' | 'mid-tool'

describe('faults at any step boundary and mid-step (fast-check)', () => {
  it('never runs an external step twice, and the history is a valid continuation', async () => {
    const points: Where[] = ['before-model', 'after-model', 'after-intent', 'before-tool', 'after-tool', 'after-result', 'mid-model', 'mid-tool']
    await fc.assert(fc.asyncProperty(
      fc.array(fc.record({ point: fc.constantFrom(...points), nth: fc.nat(3) }), { maxLength: 4 }),
      async faults => {
        const seen = new Map<Where, number>()
        const pending = faults.map(f => ({ ...f, fired: false }))
        const fault = (p: Where): void => {
          const n = seen.get(p) ?? 0
          seen.set(p, n + 1)
          const f = pending.find(x => !x.fired && x.point === p && x.nth === n)
          if (f !== undefined) { f.fired = true; throw new Error(`injected crash at ${p} #${n}`) }
        }
        // Mid-step crashes: the model's answer is lost after it was produced; a tool dies
        // after doing its work (for the ledger: the payment happened, its result is lost).
        const ledger: string[] = []
        const lookups: string[] = []
        const tools = testTools(ledger, lookups)
        for (const [name, t] of tools) tools.set(name, { ...t, run: async (args, ctx) => { const r = await t.run(args, ctx); fault('mid-tool'); return r } })
        const env = await setup(PAY_SCRIPT, { fault, intensity: 12, tools, midModel: () => fault('mid-model') })
        const root = await env.history.createConversation({ title: 'faults' })
        expect(await env.chat(root.id, 'pay now')).toBe('done')
        const dag = await env.history.open(root.id)
        const branch = dag.branch()
        // no external effect twice
        expect(new Set(ledger).size).toBe(ledger.length)
        // every entry valid; every call has exactly one result, after its intent when there is one
        const results = new Map<string, number>()
        const intents = new Set<string>()
        for (const e of branch) {
          expect(validateEntry(JSON.parse(JSON.stringify(e))).ok).toBe(true)
          if (e.kind === 'tool.intent') intents.add(e.body.callId)
          if (e.kind === 'tool.result') results.set(e.body.callId, (results.get(e.body.callId) ?? 0) + 1)
        }
        for (const e of branch) {
          if (e.kind !== 'assistant') continue
          for (const c of e.body.toolCalls ?? []) expect(results.get(c.id), c.id).toBe(1)
        }
        // three external calls in the script: each ran at most once (an unknown outcome may or may not have run)
        expect(ledger.length).toBeLessThanOrEqual(3)
        const toolOf = new Map(branch.flatMap(e => e.kind === 'tool.intent' ? [[e.body.callId, e.body.tool] as const] : []))
        const ledgerOk = branch.filter(e => e.kind === 'tool.result' && e.body.status === 'ok' && toolOf.get(e.body.callId) === 'ledger').length
        expect(ledger.length).toBeGreaterThanOrEqual(ledgerOk) // every recorded payment did happen
        expect(kinds(branch).at(-1)).toBe('stopped:done')
        expect(dag.waiting()).toEqual([])
        for (const c of closers.splice(0).reverse()) await c()
      }
    ), { numRuns: 30 })
  }, 120_000)
})
