/** A JSON value as entries carry it: no undefined, no non-finite numbers. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/**
 * Canonical JSON: object keys sorted by code unit, no whitespace, keys whose value is
 * undefined dropped. Two equal values always encode to the same string, so the
 * encoding can be hashed into an id. A value nesting more than `maxDepth` levels of arrays
 * and objects is refused (TooDeepError) before the walk goes deeper.
 */
export function canonicalJson (value: unknown, at = '', maxDepth = Infinity): string {
  try {
    return encode(value, maxDepth)
  } catch (err) {
    throw located(err, value, at, maxDepth)
  }
}

/**
 * A value nests deeper than an encoder was allowed (`maxDepth` levels of arrays and objects):
 * refused before the walk could overflow the stack. `at`: where the value sits.
 */
export class TooDeepError extends TypeError {
  constructor (readonly at: string, readonly maxDepth: number) {
    super(`cannot encode the value at ${at || '/'}: it nests deeper than ${maxDepth} levels of arrays and objects`)
    this.name = 'TooDeepError'
  }
}

const NOT_JSON = 'not JSON'
const TOO_DEEP = 'too deep'

/** The error an encoder threw, said with where (`at`) and why. */
function located (err: unknown, value: unknown, at: string, maxDepth: number): unknown {
  if (!(err instanceof TypeError)) return err
  if (err.message === TOO_DEEP) return new TooDeepError(at, maxDepth)
  // The fast encoder keeps no path; encoding again with one throws the same error, located
  // (`at`: where the value sits in what is being encoded, for the message).
  if (err.message === NOT_JSON) encodeAt(value, at)
  return err
}

// What JSON.stringify escapes in a string (and, to keep the test simple, any surrogate):
// a string without any is its own JSON between quotes.
// eslint-disable-next-line no-control-regex -- control characters are what JSON escapes
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/

/** JSON.stringify of a string: a regular-expression test and quotes where nothing needs escaping (several times faster). */
function quote (s: string): string {
  return ESCAPED.test(s) ? JSON.stringify(s) : '"' + s + '"'
}

// Every entry is encoded at least once on the way to its feed: plain concatenation, no
// intermediate arrays, and no path strings (encodeAt builds those once something failed).
// `left`: the levels of arrays and objects the value may still nest.
function encode (value: unknown, left: number): string {
  if (value === null) return 'null'
  switch (typeof value) {
    case 'boolean': return value ? 'true' : 'false'
    case 'string': return quote(value)
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(NOT_JSON)
      return JSON.stringify(value)
    case 'object': {
      if (left === 0) throw new TypeError(TOO_DEEP)
      if (Array.isArray(value)) {
        let out = '['
        // An indexed loop, so holes encode as null as JSON.stringify does.
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i]
          out += (i === 0 ? '' : ',') + (item === undefined ? 'null' : encode(item, left - 1))
        }
        return out + ']'
      }
      const proto = Object.getPrototypeOf(value) as unknown
      if (proto !== Object.prototype && proto !== null) throw new TypeError(NOT_JSON)
      const obj = value as Record<string, unknown>
      const keys = Object.keys(obj).sort()
      let out = '{'
      for (const k of keys) {
        const v = obj[k]
        if (v === undefined) continue
        out += (out.length === 1 ? '' : ',') + quote(k) + ':' + encode(v, left - 1)
      }
      return out + '}'
    }
    default:
      throw new TypeError(NOT_JSON)
  }
}

/** The same walk as encode, keeping the path, to say where a value is not JSON (throws there). */
function encodeAt (value: unknown, path: string): void {
  if (value === null) return
  switch (typeof value) {
    case 'boolean':
    case 'string':
      return
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`cannot encode ${value} at ${path || '/'}: numbers must be finite`)
      return
    case 'object': {
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (value[i] !== undefined) encodeAt(value[i], `${path}/${i}`)
        return
      }
      const proto = Object.getPrototypeOf(value) as unknown
      if (proto !== Object.prototype && proto !== null) throw new TypeError(`cannot encode a ${(value as object).constructor?.name ?? 'non-plain object'} at ${path || '/'}: only plain objects and arrays`)
      const obj = value as Record<string, unknown>
      for (const k of Object.keys(obj).sort()) if (obj[k] !== undefined) encodeAt(obj[k], `${path}/${k}`)
      return
    }
    default:
      throw new TypeError(`cannot encode a ${typeof value} at ${path || '/'}`)
  }
}

/**
 * canonicalJson of a value and, beside it, the value as JSON.parse of that text gives it back
 * (keys in the same order, undefined fields dropped, holes and undefined items null, -0 as 0,
 * plain objects): one walk instead of an encoding and a parse. What an entry holds is what
 * its feed stores, and no object of the caller's is shared (strings are immutable).
 */
export function canonicalCopy (value: unknown, at = '', maxDepth = Infinity): { json: string; copy: Json } {
  try {
    const json = encodeCopy(value, maxDepth)
    return { json, copy: copied }
  } catch (err) {
    throw located(err, value, at, maxDepth)
  } finally {
    copied = null
  }
}

// encodeCopy's second result: set by each call, read by its caller at once (no pair allocated per value).
let copied: Json = null
// V8 slices strings from 13 characters on; shorter ones are always copies of their own
const COPY_AT = 13

function encodeCopy (value: unknown, left: number): string {
  if (value === null) { copied = null; return 'null' }
  switch (typeof value) {
    case 'boolean': copied = value; return value ? 'true' : 'false'
    case 'string': {
      const json = quote(value)
      // A long string may be a slice or a rope of a larger one (a tool's whole output, a
      // stream's tokens): a slice of a new rope flattens into a copy holding nothing else alive.
      copied = value.length < COPY_AT ? value : (' ' + value).slice(1)
      return json
    }
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(NOT_JSON)
      copied = value === 0 ? 0 : value // -0 is written 0
      return JSON.stringify(value)
    case 'object': {
      if (left === 0) throw new TypeError(TOO_DEEP)
      if (Array.isArray(value)) {
        const list: Json[] = []
        let out = '['
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i]
          if (item === undefined) { out += (i === 0 ? 'null' : ',null'); list.push(null); continue }
          out += (i === 0 ? '' : ',') + encodeCopy(item, left - 1)
          list.push(copied)
        }
        copied = list
        return out + ']'
      }
      const proto = Object.getPrototypeOf(value) as unknown
      if (proto !== Object.prototype && proto !== null) throw new TypeError(NOT_JSON)
      const obj = value as Record<string, unknown>
      const keys = Object.keys(obj).sort()
      const copy: { [key: string]: Json } = {}
      let out = '{'
      for (const k of keys) {
        const v = obj[k]
        if (v === undefined) continue
        out += (out.length === 1 ? '' : ',') + quote(k) + ':' + encodeCopy(v, left - 1)
        // an own "__proto__" key, as JSON.parse makes it, not the prototype's setter
        if (k === '__proto__') Object.defineProperty(copy, k, { value: copied, writable: true, enumerable: true, configurable: true })
        else copy[k] = copied
      }
      copied = copy
      return out + '}'
    }
    default:
      throw new TypeError(NOT_JSON)
  }
}
