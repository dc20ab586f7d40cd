/**
 * Minimal argument checking against a tool's JSON Schema: an object, required fields
 * present, declared fields of the declared type (string, number, integer, boolean, object,
 * array; plus minimum/maximum and enum), no unknown fields when additionalProperties is
 * false. Messages are written for the model to fix its call.
 */
import type { JsonSchema } from '../../shared/llm-ir'
import { MAX_ARGS_DEPTH } from '../../shared/entry/entry'
import { nestsDeeperThan } from '../../shared/entry/json-depth'
import type { Tool } from './tool'

function typeOf (v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'array'
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number'
  return typeof v
}

function matchesType (v: unknown, type: unknown): boolean {
  if (type === undefined) return true
  if (Array.isArray(type)) return type.some(t => matchesType(v, t))
  const t = typeOf(v)
  return t === type || (type === 'number' && t === 'integer')
}

/** The first problem with `args`, or undefined when they fit the schema. */
export function validateArgs (schema: JsonSchema, args: unknown): string | undefined {
  const props = (schema.properties ?? {}) as Record<string, JsonSchema>
  if (args === undefined || args === null) args = {}
  if (typeof args !== 'object' || Array.isArray(args)) return `the arguments must be a JSON object, not ${typeOf(args)}`
  const obj = args as Record<string, unknown>
  if (typeof obj._unparsed === 'string' && !('_unparsed' in props)) {
    if (nestsDeeperThan(obj._unparsed, MAX_ARGS_DEPTH)) return `the arguments nest deeper than ${MAX_ARGS_DEPTH} levels of arrays and objects, more than Arbor accepts`
    return `the arguments were not valid JSON: ${obj._unparsed.slice(0, 200)}`
  }
  for (const name of (schema.required ?? []) as string[]) {
    if (obj[name] === undefined) return `missing required argument '${name}'`
  }
  for (const [name, value] of Object.entries(obj)) {
    const p = props[name]
    if (p === undefined) {
      if (schema.additionalProperties === false) {
        return `unknown argument '${name}' (expected: ${Object.keys(props).join(', ') || 'none'})`
      }
      continue
    }
    if (value === undefined) continue
    if (!matchesType(value, p.type)) return `argument '${name}' must be ${String(p.type)}, not ${typeOf(value)}`
    if (typeof value === 'number') {
      if (typeof p.minimum === 'number' && value < p.minimum) return `argument '${name}' must be at least ${p.minimum}`
      if (typeof p.maximum === 'number' && value > p.maximum) return `argument '${name}' must be at most ${p.maximum}`
    }
    if (Array.isArray(p.enum) && !p.enum.includes(value)) return `argument '${name}' must be one of ${p.enum.map(e => JSON.stringify(e)).join(', ')}`
  }
  return undefined
}

/** The arguments as an object, after validateArgs passed. */
export function argsObject (args: unknown): Record<string, unknown> {
  return (args !== null && typeof args === 'object' ? args : {}) as Record<string, unknown>
}

/**
 * The time limit for one run: the tool's default, or the call's `timeoutMs` argument when
 * the tool allows one (maxTimeoutMs), clamped to [1 ms, maxTimeoutMs].
 */
export function effectiveTimeout (tool: Pick<Tool, 'timeoutMs' | 'maxTimeoutMs'>, args: unknown): number {
  const asked = argsObject(args).timeoutMs
  if (tool.maxTimeoutMs === undefined || typeof asked !== 'number' || !Number.isFinite(asked)) return tool.timeoutMs
  return Math.min(tool.maxTimeoutMs, Math.max(1, Math.floor(asked)))
}

/** The reason runTool and the tools give an AbortController when a time limit passes. */
export function timeoutReason (ms: number): Error {
  const e = new Error(`timed out after ${ms} ms`)
  e.name = 'TimeoutError'
  return e
}

/** Why a signal was aborted, in words for the model. */
export function abortWords (signal: AbortSignal): string {
  const r: unknown = signal.reason
  if (r instanceof Error && r.name === 'TimeoutError') return r.message
  return 'cancelled'
}
