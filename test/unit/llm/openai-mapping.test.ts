// IR <-> OpenAI Chat Completions mapping: conversations map to the wire format, and streamed
// chunks fold into the same result however the server cuts them.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { ChatCompletionChunk } from 'openai/resources/chat/completions'
import type { IrMessage, IrResult, IrStreamEvent, IrToolCall } from '../../../src/shared/llm-ir'
import {
  ChatStreamAccumulator, fromOpenAICompletion, mapFinishReason, parseToolArgs, TOOL_STATUS_PREFIX, toOpenAIMessages, toOpenAITools
} from '../../../src/main/llm/openai-mapping'
import { completionChunks, completionObject, type ScriptedCompletion } from '../../helpers/openai-test-server'
import { MAX_ARGS_DEPTH } from '../../../src/shared/entry/entry'
import { validateArgs } from '../../../src/main/tools/tool-args'

const textArb = fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: 'grapheme', maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 12 }))
const nameArb = fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_-]{0,20}$/)
const argsArb = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.string().map(raw => ({ _unparsed: raw })))
const toolCallArb: fc.Arbitrary<IrToolCall> = fc.record({ id: fc.string({ minLength: 1, maxLength: 12 }), name: nameArb, args: argsArb })
const statusArb = fc.constantFrom('ok' as const, 'error' as const, 'unknown' as const, 'cancelled' as const)
const messageArb: fc.Arbitrary<IrMessage> = fc.oneof(
  fc.record({ role: fc.constant('system' as const), text: textArb }),
  fc.record({ role: fc.constant('user' as const), text: textArb }),
  fc.record({ role: fc.constant('assistant' as const), text: textArb, toolCalls: fc.option(fc.array(toolCallArb, { maxLength: 3 }), { nil: undefined }), reasoning: fc.option(textArb, { nil: undefined }) }, { requiredKeys: ['role', 'text'] }),
  fc.record({ role: fc.constant('tool' as const), callId: fc.string({ minLength: 1, maxLength: 12 }), name: nameArb, output: textArb, status: statusArb })
)

const jsonRoundTrip = (v: unknown): unknown => v === undefined ? {} : JSON.parse(JSON.stringify(v))

describe('IR conversation -> OpenAI messages', () => {
  it('maps every message, keeping text, tool calls (JSON arguments) and tool results', () => {
    fc.assert(fc.property(fc.array(messageArb, { maxLength: 12 }), messages => {
      const wire = toOpenAIMessages(messages)
      expect(wire).toHaveLength(messages.length)
      // What the SDK sends must survive JSON.
      expect(JSON.parse(JSON.stringify(wire))).toEqual(wire)
      messages.forEach((m, i) => {
        const w = wire[i] as unknown as Record<string, unknown>
        expect(w.role).toBe(m.role)
        expect(w).not.toHaveProperty('reasoning')
        switch (m.role) {
          case 'system': case 'user': expect(w.content).toBe(m.text); break
          case 'assistant': {
            const calls = m.toolCalls ?? []
            if (calls.length === 0) {
              expect(w.content).toBe(m.text)
              expect(w).not.toHaveProperty('tool_calls')
            } else {
              expect(w.content).toBe(m.text === '' ? null : m.text)
              const tcs = w.tool_calls as Array<{ id: string; type: string; function: { name: string; arguments: string } }>
              expect(tcs.map(t => [t.id, t.type, t.function.name])).toEqual(calls.map(c => [c.id, 'function', c.name]))
              tcs.forEach((t, j) => expect(JSON.parse(t.function.arguments)).toEqual(jsonRoundTrip(calls[j]?.args)))
            }
            break
          }
          case 'tool':
            expect(w.tool_call_id).toBe(m.callId)
            expect(w.content).toBe((m.status === 'ok' ? '' : TOOL_STATUS_PREFIX[m.status]) + m.output)
        }
      })
    }), { numRuns: 300 })
  })

  it('maps tool specs to function tools', () => {
    expect(toOpenAITools([{ name: 'bash', description: 'run a command', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } }]))
      .toEqual([{ type: 'function', function: { name: 'bash', description: 'run a command', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } } }])
  })
})

/** A splitter driven by fast-check: cuts every string at the same (wrapped) positions, empty pieces included. */
function splitterFrom (cuts: number[]): (s: string) => string[] {
  return s => {
    const at = [...new Set(cuts.map(c => c % (s.length + 1)))].sort((a, b) => a - b)
    const out: string[] = []
    let prev = 0
    for (const p of at) { out.push(s.slice(prev, p)); prev = p }
    out.push(s.slice(prev))
    return out
  }
}

function accumulate (chunks: ChatCompletionChunk[], model = 'm'): { result: IrResult; events: IrStreamEvent[] } {
  const events: IrStreamEvent[] = []
  const acc = new ChatStreamAccumulator({ model, onEvent: e => events.push(e) })
  for (const c of chunks) acc.push(structuredClone(c))
  return { result: acc.result(), events }
}

const rawArgsArb = fc.oneof(fc.jsonValue({ maxDepth: 3 }).map(v => JSON.stringify(v)), fc.string({ maxLength: 20 }), fc.constant(''))
const scriptedArb: fc.Arbitrary<ScriptedCompletion> = fc.record({
  text: textArb,
  reasoning: fc.option(textArb, { nil: undefined }),
  reasoningField: fc.constantFrom('reasoning_content' as const, 'reasoning' as const),
  toolCalls: fc.array(fc.record({ id: fc.string({ minLength: 1, maxLength: 10 }), name: nameArb, arguments: rawArgsArb }), { maxLength: 3 }),
  finish: fc.constantFrom(undefined, 'length' as const, 'content_filter' as const),
  usage: fc.option(fc.record({ prompt_tokens: fc.nat(), completion_tokens: fc.nat(), reasoning_tokens: fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }) }), { nil: undefined })
}, { requiredKeys: ['text', 'toolCalls'] })

function expectedResult (c: ScriptedCompletion, model: string): IrResult {
  const calls = c.toolCalls ?? []
  const r: IrResult = {
    text: c.text ?? '',
    toolCalls: calls.map(tc => ({ id: tc.id as string, name: tc.name, args: parseToolArgs(tc.arguments) })),
    finish: c.finish ?? (calls.length > 0 ? 'tool_calls' : 'stop'),
    model
  }
  if (c.reasoning) r.reasoning = c.reasoning
  if (c.usage) r.usage = { input: c.usage.prompt_tokens, output: c.usage.completion_tokens, ...(c.usage.reasoning_tokens ? { reasoning: c.usage.reasoning_tokens } : {}) }
  return r
}

describe('streamed chunks -> IrResult', () => {
  it('gives the same result however the server splits text, reasoning and tool arguments', () => {
    fc.assert(fc.property(scriptedArb, fc.array(fc.nat({ max: 200 }), { maxLength: 12 }), (c, cuts) => {
      const req = { model: 'test-model', includeUsage: true }
      const whole = accumulate(completionChunks({ ...c, pieces: s => [s] }, req))
      const split = accumulate(completionChunks({ ...c, pieces: splitterFrom(cuts) }, req))
      expect(split.result).toEqual(whole.result)
      expect(split.result).toEqual(expectedResult(c, 'test-model'))
      // The events carry the whole answer too.
      const texts = (es: IrStreamEvent[], type: 'text' | 'reasoning'): string => es.flatMap(e => e.type === type ? [e.delta] : []).join('')
      expect(texts(split.events, 'text')).toBe(c.text)
      expect(texts(split.events, 'reasoning')).toBe(c.reasoning ?? '')
      ;(c.toolCalls ?? []).forEach((tc, index) => {
        const evs = split.events.filter((e): e is Extract<IrStreamEvent, { type: 'tool-call' }> => e.type === 'tool-call' && e.index === index)
        expect(evs[0]).toMatchObject({ id: tc.id, name: tc.name })
        expect(evs.map(e => e.argsDelta ?? '').join('')).toBe(tc.arguments)
      })
      // And the non-streamed answer maps to the same result.
      expect(fromOpenAICompletion(completionObject(c, req), { model: 'x' })).toEqual(whole.result)
    }), { numRuns: 300 })
  })

  it('keeps invalid tool-call JSON as { _unparsed }, and empty arguments as {}', () => {
    const { result } = accumulate(completionChunks({ toolCalls: [{ id: 'a', name: 'f', arguments: '{"x": 1' }, { id: 'b', name: 'g', arguments: '' }] }, { model: 'm', includeUsage: false }))
    expect(result.toolCalls).toEqual([{ id: 'a', name: 'f', args: { _unparsed: '{"x": 1' } }, { id: 'b', name: 'g', args: {} }])
    expect(result.finish).toBe('tool_calls')
    expect(result.usage).toBeUndefined()
  })

  it('keeps arguments nesting deeper than an entry holds them as { _unparsed }, unparsed; those at the bound are parsed', () => {
    const nested = (n: number): string => '{"a":'.repeat(n) + '1' + '}'.repeat(n)
    expect(parseToolArgs(nested(MAX_ARGS_DEPTH))).toEqual(JSON.parse(nested(MAX_ARGS_DEPTH)))
    expect(parseToolArgs(nested(MAX_ARGS_DEPTH + 1))).toEqual({ _unparsed: nested(MAX_ARGS_DEPTH + 1) })
    expect(validateArgs({ type: 'object', properties: {} }, { _unparsed: nested(100_000) })).toBe(`the arguments nest deeper than ${MAX_ARGS_DEPTH} levels of arrays and objects, more than Arbor accepts`)
    expect(validateArgs({ type: 'object', properties: {} }, { _unparsed: '{"x": 1' })).toBe('the arguments were not valid JSON: {"x": 1')
  })

  it('accepts tool calls without index or id (some local servers) and finish "stop" with tool calls', () => {
    const base = { id: 'x', object: 'chat.completion.chunk', created: 0, model: 'llama' }
    const chunks = [
      { ...base, choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [{ function: { name: 'f', arguments: '{"a":1}' } }] }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: { tool_calls: [{ id: 'second', function: { name: 'g', arguments: '{}' } }] }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }
    ] as unknown as ChatCompletionChunk[]
    const acc = new ChatStreamAccumulator({ model: 'm', fallbackCallId: i => `fallback_${i}` })
    chunks.forEach(c => acc.push(c))
    expect(acc.result()).toEqual({
      text: '',
      toolCalls: [{ id: 'fallback_0', name: 'f', args: { a: 1 } }, { id: 'second', name: 'g', args: {} }],
      finish: 'tool_calls',
      model: 'llama'
    })
  })

  it('maps finish reasons', () => {
    expect(['stop', 'tool_calls', 'function_call', 'length', 'content_filter', null, 'weird'].map(mapFinishReason))
      .toEqual(['stop', 'tool_calls', 'tool_calls', 'length', 'content_filter', 'other', 'other'])
  })
})
