import { describe, expect, it } from 'vitest'
import type { Tool, ToolContext } from '../../../src/main/tools/tool'
import { effectiveTimeout, validateArgs } from '../../../src/main/tools/tool-args'
import { defaultTools, findTool, runTool, toolSpecs, ToolCrashError } from '../../../src/main/tools/tool-registry'

const ctx = (signal = new AbortController().signal): ToolContext => ({ cwd: '/', signal, idemKey: 'k', sandbox: { enabled: true, cwd: '/', hidden: [] } })

function fake (run: Tool['run'], timeoutMs = 200): Tool {
  return {
    name: 'fake',
    description: 'a test tool',
    parameters: { type: 'object', properties: { n: { type: 'integer' }, s: { type: 'string' } }, required: ['s'], additionalProperties: false },
    effect: 'read',
    timeoutMs,
    run
  }
}

describe('tool registry', () => {
  it('has the default tools with their effects, and specs for the model', () => {
    const tools = defaultTools()
    expect(tools.map(t => [t.name, t.effect])).toEqual([
      ['bash', 'workspace'], ['read_file', 'read'], ['write_file', 'workspace'], ['edit_file', 'workspace'], ['list_dir', 'read'], ['http_get', 'idempotent']
    ])
    const specs = toolSpecs(tools)
    expect(specs.map(s => Object.keys(s))).toEqual(Array(6).fill(['name', 'description', 'parameters']))
    expect(specs.find(s => s.name === 'bash')?.parameters).toMatchObject({ required: ['command'] })
    expect(findTool(tools, 'edit_file')?.name).toBe('edit_file')
  })

  it('validates arguments minimally', () => {
    const schema = fake(async () => ({ status: 'ok', output: '' })).parameters
    expect(validateArgs(schema, { s: 'x', n: 3 })).toBeUndefined()
    expect(validateArgs(schema, {})).toBe("missing required argument 's'")
    expect(validateArgs(schema, { s: 1 })).toBe("argument 's' must be string, not integer")
    expect(validateArgs(schema, { s: 'x', n: 1.5 })).toBe("argument 'n' must be integer, not number")
    expect(validateArgs(schema, { s: 'x', file: 1 })).toBe("unknown argument 'file' (expected: n, s)")
    expect(validateArgs(schema, [1])).toBe('the arguments must be a JSON object, not array')
    expect(validateArgs(schema, { _unparsed: '{"s": ' })).toBe('the arguments were not valid JSON: {"s": ')
    expect(validateArgs({ type: 'object', properties: { e: { enum: ['a'] } } }, { e: 'b' })).toBe('argument \'e\' must be one of "a"')
  })

  it('refuses bad arguments without running the tool', async () => {
    let ran = false
    const r = await runTool(fake(async () => { ran = true; return { status: 'ok', output: '' } }), { n: 1 }, ctx())
    expect(r).toEqual({ status: 'error', output: "fake: missing required argument 's'" })
    expect(ran).toBe(false)
  })

  it('enforces the time limit through the signal, and says it timed out', async () => {
    const t = fake((_a, c) => new Promise(resolve => {
      c.signal.addEventListener('abort', () => resolve({ status: 'error', output: `stopped: ${(c.signal.reason as Error).message}` }))
    }), 50)
    expect(await runTool(t, { s: 'x' }, ctx())).toEqual({ status: 'error', output: 'stopped: timed out after 50 ms' })
  })

  it('passes the caller\'s cancel through', async () => {
    const ac = new AbortController()
    const t = fake((_a, c) => new Promise(resolve => {
      c.signal.addEventListener('abort', () => resolve({ status: 'error', output: 'cancelled' }))
    }), 10_000)
    setTimeout(() => ac.abort(), 20)
    expect(await runTool(t, { s: 'x' }, ctx(ac.signal))).toEqual({ status: 'error', output: 'cancelled' })
    expect((await runTool(t, { s: 'x' }, ctx(ac.signal))).output).toBe('fake did not run: cancelled')
  })

  it('rethrows a throw as ToolCrashError, for the agent to crash and be restarted', async () => {
    const run = runTool(fake(async () => { throw new TypeError('boom') }), { s: 'x' }, ctx())
    await expect(run).rejects.toThrow(ToolCrashError)
    await expect(run).rejects.toThrow(/^the fake tool crashed \(TypeError: boom\)/)
  })

  it('gives up on a tool that ignores its signal', async () => {
    const t = fake(() => new Promise(() => {}), 20)
    const t0 = Date.now()
    const r = await runTool(t, { s: 'x' }, ctx(), { abortGraceMs: 100 })
    expect(r.output).toBe('fake timed out after 20 ms and did not stop within 100 ms of being told to')
    expect(Date.now() - t0).toBeLessThan(1000)
  })

  it('lets a call ask for its own time limit only where the tool allows it', () => {
    expect(effectiveTimeout({ timeoutMs: 100 }, { timeoutMs: 5 })).toBe(100)
    expect(effectiveTimeout({ timeoutMs: 100, maxTimeoutMs: 1000 }, { timeoutMs: 5 })).toBe(5)
    expect(effectiveTimeout({ timeoutMs: 100, maxTimeoutMs: 1000 }, { timeoutMs: 50_000 })).toBe(1000)
    expect(effectiveTimeout({ timeoutMs: 100, maxTimeoutMs: 1000 }, {})).toBe(100)
  })
})
