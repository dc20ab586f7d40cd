/** A JSON value as entries carry it: no undefined, no non-finite numbers. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/**
 * Canonical JSON: object keys sorted by code unit, no whitespace, keys whose value is
 * undefined dropped. Two equal values always encode to the same string, so the
 * encoding can be hashed into an id.
 */
export function canonicalJson (value: unknown): string {
  return encode(value, '')
}

function encode (value: unknown, path: string): string {
  if (value === null) return 'null'
  switch (typeof value) {
    case 'boolean': return value ? 'true' : 'false'
    case 'string': return JSON.stringify(value)
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`cannot encode ${value} at ${path || '/'}: numbers must be finite`)
      return JSON.stringify(value)
    case 'object': {
      if (Array.isArray(value)) {
        const parts: string[] = []
        // An indexed loop, so holes encode as null as JSON.stringify does.
        for (let i = 0; i < value.length; i++) parts.push(encode(value[i] === undefined ? null : value[i], `${path}/${i}`))
        return '[' + parts.join(',') + ']'
      }
      const proto = Object.getPrototypeOf(value) as unknown
      if (proto !== Object.prototype && proto !== null) throw new TypeError(`cannot encode a ${(value as object).constructor?.name ?? 'non-plain object'} at ${path || '/'}: only plain objects and arrays`)
      const obj = value as Record<string, unknown>
      const keys = Object.keys(obj).filter(k => obj[k] !== undefined).sort()
      return '{' + keys.map(k => JSON.stringify(k) + ':' + encode(obj[k], `${path}/${k}`)).join(',') + '}'
    }
    default:
      throw new TypeError(`cannot encode a ${typeof value} at ${path || '/'}`)
  }
}
