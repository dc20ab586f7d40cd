/**
 * The `http_get` tool: fetches one http(s) URL on the host (the bash sandbox has no
 * network), within a size and a time limit. HTML comes back as readable text, other text
 * as is, binary content is refused. Private and loopback addresses (private-address.ts) are
 * refused unless allowed, checked at connect time (so DNS cannot point a public name at them).
 */
import dns from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import zlib from 'node:zlib'
import type { Readable } from 'node:stream'
import { isPrivateAddress } from './private-address'
import { groupDigits, limitOutput, type OutputLimits } from './output-limit'
import { abortWords, argsObject, timeoutReason, validateArgs } from './tool-args'
import type { Tool, ToolResult } from './tool'

export interface HttpGetOptions {
  /** stop reading after this many (decoded) bytes (default 2 MB) */
  maxBytes?: number
  /** for the whole fetch, redirects included (default 30 s) */
  timeoutMs?: number
  maxRedirects?: number
  /** allow loopback, private, link-local addresses (default false: tests and local use only) */
  allowPrivateNetwork?: boolean
  limits?: OutputLimits
}

const DEFAULT_MAX_BYTES = 2 * 1024 * 1024

const TEXT_TYPES = /^(text\/|application\/(json|xml|javascript|ecmascript|x-javascript|xhtml\+xml|rss\+xml|atom\+xml|ld\+json|x-yaml|yaml|toml|x-sh|sql|graphql|csv)\b)|[+](json|xml)\b/i

function isTextType (type: string): boolean {
  return TEXT_TYPES.test(type)
}

class FetchRefused extends Error {}

interface Fetched { status: number; url: string; type: string; body: Buffer; cut: boolean; declaredLength?: number; binary: boolean }

/** A dns lookup for http.get that refuses private addresses at connect time. */
export function guardedLookup (allowPrivate: boolean): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err !== null) return callback(err, '', 0)
      const list = addresses as dns.LookupAddress[]
      const bad = allowPrivate ? undefined : list.find(a => isPrivateAddress(a.address))
      if (bad !== undefined) return callback(new FetchRefused(`${hostname} resolves to ${bad.address}, a private or loopback address; http_get only fetches public addresses`), '', 0)
      if (options.all === true) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list)
      const first = list[0]
      if (first === undefined) return callback(new Error(`${hostname} has no address`), '', 0)
      callback(null, first.address, first.family)
    })
  }
}

function decoded (res: http.IncomingMessage): Readable {
  const enc = String(res.headers['content-encoding'] ?? '').trim().toLowerCase()
  if (enc === 'gzip' || enc === 'x-gzip') return res.pipe(zlib.createGunzip())
  if (enc === 'deflate') return res.pipe(zlib.createInflate())
  if (enc === 'br') return res.pipe(zlib.createBrotliDecompress())
  return res
}

function fetchOnce (url: URL, opts: Required<Pick<HttpGetOptions, 'maxBytes' | 'allowPrivateNetwork'>>, signal: AbortSignal): Promise<Fetched | { redirect: string; status: number }> {
  return new Promise((resolve, reject) => {
    const mod = url.protocol === 'https:' ? https : http
    const req = mod.get(url, {
      signal,
      lookup: guardedLookup(opts.allowPrivateNetwork),
      headers: {
        'user-agent': 'Arbor/0.1 (http_get tool)',
        accept: 'text/html,application/xhtml+xml,text/plain,application/json;q=0.9,*/*;q=0.5',
        'accept-encoding': 'gzip, deflate, br'
      }
    }, res => {
      const status = res.statusCode ?? 0
      const location = res.headers.location
      if (status >= 300 && status < 400 && location !== undefined) {
        res.destroy() // its body is never read: a redirect with an endless one must not keep the connection
        resolve({ redirect: location, status })
        return
      }
      const type = String(res.headers['content-type'] ?? '').trim()
      const declared = Number(res.headers['content-length'])
      const declaredLength = Number.isFinite(declared) ? declared : undefined
      if (type !== '' && !isTextType(type)) {
        res.destroy()
        resolve({ status, url: url.href, type, body: Buffer.alloc(0), cut: false, declaredLength, binary: true })
        return
      }
      const chunks: Buffer[] = []
      let size = 0
      let cut = false
      const stream = decoded(res)
      const done = (): void => resolve({ status, url: url.href, type, body: Buffer.concat(chunks), cut, declaredLength, binary: false })
      stream.on('data', (b: Buffer) => {
        if (cut) return
        const room = opts.maxBytes - size
        if (b.length >= room) {
          chunks.push(b.subarray(0, room))
          size += room
          cut = true
          res.destroy()
          stream.destroy()
          done()
          return
        }
        chunks.push(b)
        size += b.length
      })
      stream.on('end', done)
      stream.on('error', e => (cut ? undefined : reject(e)))
      res.on('error', e => (cut ? undefined : reject(e)))
    })
    req.on('error', reject)
  })
}

function charsetOf (type: string, body: Buffer): string {
  const fromHeader = /charset\s*=\s*"?([\w.:-]+)/i.exec(type)?.[1]
  if (fromHeader !== undefined) return fromHeader
  if (/html/i.test(type) || type === '') {
    const meta = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(body.subarray(0, 2048).toString('latin1'))?.[1]
    if (meta !== undefined) return meta
  }
  return 'utf-8'
}

function decodeText (body: Buffer, charset: string): string {
  try { return new TextDecoder(charset).decode(body) } catch { return new TextDecoder('utf-8').decode(body) }
}

export function createHttpGetTool (opts: HttpGetOptions = {}): Tool {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES
  const maxRedirects = opts.maxRedirects ?? 5
  const allowPrivateNetwork = opts.allowPrivateNetwork ?? false
  const tool: Tool = {
    name: 'http_get',
    description: `Fetch a web page or text over http(s) with GET (the bash sandbox has no network). HTML comes back as plain text; at most ${groupDigits(maxBytes)} bytes are read; binary content is not shown.`,
    parameters: {
      type: 'object',
      properties: { url: { type: 'string', description: 'an http:// or https:// URL' } },
      required: ['url'],
      additionalProperties: false
    },
    effect: 'idempotent',
    timeoutMs: opts.timeoutMs ?? 30_000,
    async run (args, ctx) {
      const bad = validateArgs(tool.parameters, args)
      if (bad !== undefined) return { status: 'error', output: bad }
      let url: URL
      try { url = new URL(argsObject(args).url as string) } catch { return { status: 'error', output: `not a valid URL: ${String(argsObject(args).url)}` } }

      const ac = new AbortController()
      const onAbort = (): void => ac.abort(ctx.signal.reason)
      if (ctx.signal.aborted) onAbort()
      ctx.signal.addEventListener('abort', onAbort, { once: true })
      const timer = setTimeout(() => ac.abort(timeoutReason(tool.timeoutMs)), tool.timeoutMs)
      try {
        for (let hop = 0; ; hop++) {
          if (url.protocol !== 'http:' && url.protocol !== 'https:') return { status: 'error', output: `http_get only fetches http and https URLs, not ${url.protocol}` }
          const host = url.hostname.replace(/^\[|\]$/g, '')
          if (!allowPrivateNetwork && net.isIP(host) !== 0 && isPrivateAddress(host)) {
            return { status: 'error', output: `${host} is a private or loopback address; http_get only fetches public addresses` }
          }
          if (!allowPrivateNetwork && /^localhost$|\.localhost$/i.test(host)) return { status: 'error', output: `${host} is local; http_get only fetches public addresses` }
          const r = await fetchOnce(url, { maxBytes, allowPrivateNetwork }, ac.signal)
          if ('redirect' in r) {
            if (hop >= maxRedirects) return { status: 'error', output: `too many redirects (more than ${maxRedirects}); last to ${r.redirect}` }
            url = new URL(r.redirect, url)
            continue
          }
          return await render(r, maxBytes, opts.limits)
        }
      } catch (e) {
        if (ac.signal.aborted) return { status: 'error', output: `http_get ${abortWords(ac.signal)}: ${url.href}` }
        if (e instanceof FetchRefused) return { status: 'error', output: e.message }
        const code = (e as NodeJS.ErrnoException).code
        return { status: 'error', output: `could not fetch ${url.href}: ${code !== undefined ? code + ' ' : ''}${(e as Error).message}` }
      } finally {
        clearTimeout(timer)
        ctx.signal.removeEventListener('abort', onAbort)
      }
    }
  }
  return tool
}

async function render (r: Fetched, maxBytes: number, limits: OutputLimits | undefined): Promise<ToolResult> {
  const status: ToolResult['status'] = r.status >= 200 && r.status < 300 ? 'ok' : 'error'
  const head = `[HTTP ${r.status} ${r.url}${r.type === '' ? '' : `, ${r.type}`}]`
  if (r.binary || (r.type === '' && r.body.subarray(0, 1024).includes(0))) {
    const size = r.declaredLength ?? (r.binary ? undefined : r.body.length)
    return { status: 'error', output: `${head}\nbinary content${size !== undefined ? ` (${groupDigits(size)} bytes)` : ''} not shown; http_get returns text only` }
  }
  const raw = decodeText(r.body, charsetOf(r.type, r.body))
  const isHtml = /html/i.test(r.type) || (r.type === '' && /^\s*<(!doctype html|html)/i.test(raw))
  // html-to-text is loaded by the first page that needs it, not by every node that starts (a CLI command's included)
  const text = isHtml ? (await import('./html-text')).htmlToText(raw, r.url) : raw
  const cutNote = r.cut ? `\n[stopped reading after ${groupDigits(maxBytes)} bytes]` : ''
  const limited = limitOutput(text, limits)
  const result: ToolResult = { status, output: `${head}\n${limited.text}${cutNote}` }
  if (limited.truncated || r.cut) result.truncated = true
  return result
}
