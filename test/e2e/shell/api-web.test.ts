import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import WebSocket from 'ws'
import type { ApiEvent, ServerMessage } from '../../../src/shared/api/api'
import { memoryLogger } from '../../../src/shared/logger'
import { WebServer, findRendererDir } from '../../../src/main/api/web-server'
import { runCli } from '../../../src/main/cli/run-cli'
import type { ArborNode } from '../../../src/main/node'
import { apiNodes } from '../../helpers/api-nodes'
import { until } from '../../helpers/temp-dir'

// `arbor serve`'s web UI: the built renderer over HTTP, the API over a WebSocket that takes
// only the printed token and the server's own Origin. Serves whatever `npx electron-vite
// build` left in out/renderer.

const nodes = apiNodes('arbor-web-')
const { dirs, defer } = nodes

async function serveWeb (opts: { root?: string } = {}): Promise<{ web: WebServer; node: ArborNode; dir: string }> {
  const { node, api, dir } = await nodes.start('server')
  const web = new WebServer({ api, port: 0, log: memoryLogger(), ...(opts.root !== undefined ? { root: opts.root } : {}) })
  await web.listen()
  defer(() => web.close())
  return { web, node, dir }
}

/** Connects to /api; resolves with the open socket or the HTTP status it was refused with. */
function connect (url: string, origin: string | undefined): Promise<{ ws: WebSocket } | { status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, origin !== undefined ? { origin } : {})
    ws.on('open', () => { defer(() => ws.close()); resolve({ ws }) })
    ws.on('unexpected-response', (_req, res) => {
      let body = ''
      res.on('data', (d: Buffer) => { body += d.toString() })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    ws.on('error', err => reject(err))
  })
}

/** A JSON-RPC-ish client over an open socket: request() and the events seen. */
function client (ws: WebSocket): { request: (method: string, params: unknown) => Promise<ServerMessage>; events: ApiEvent[]; raw: ServerMessage[] } {
  let next = 1
  const waiting = new Map<number, (m: ServerMessage) => void>()
  const events: ApiEvent[] = []
  const raw: ServerMessage[] = []
  ws.on('message', data => {
    const m = JSON.parse(String(data)) as ServerMessage
    raw.push(m)
    if ('event' in m) events.push(m.event)
    else waiting.get(m.id)?.(m)
  })
  return {
    events,
    raw,
    request: (method, params) => new Promise(resolve => {
      const id = next++
      waiting.set(id, resolve)
      ws.send(JSON.stringify({ id, method, params }))
    })
  }
}

function get (port: number, rawPath: string, method = 'GET'): Promise<{ status: number; type: string | undefined; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    // http.request sends the path as given: no client-side normalisation of `..`
    const req = http.request({ host: '127.0.0.1', port, path: rawPath, method }, res => {
      let body = ''
      res.on('data', (d: Buffer) => { body += d.toString() })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body, headers: res.headers }))
    })
    req.on('error', reject)
    req.end()
  })
}

const apiUrl = (web: WebServer, token: string): string => `ws://127.0.0.1:${web.port}/api?token=${token}`

describe('the web UI server', () => {
  it('takes a WebSocket only with the token and its own Origin; then the API works', async () => {
    const { web, node } = await serveWeb()
    expect(web.url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${web.port}/#token=[0-9a-f]{64}$`))
    expect(web.url.endsWith(web.token)).toBe(true)

    const wrongToken = await connect(apiUrl(web, 'f'.repeat(64)), web.origin)
    expect(wrongToken).toMatchObject({ status: 403 })
    expect(await connect(apiUrl(web, ''), web.origin)).toMatchObject({ status: 403 })
    expect(await connect(`ws://127.0.0.1:${web.port}/api`, web.origin)).toMatchObject({ status: 403 })
    expect(await connect(apiUrl(web, web.token.slice(0, 63)), web.origin)).toMatchObject({ status: 403 })

    const wrongOrigin = await connect(apiUrl(web, web.token), 'http://evil.example')
    expect(wrongOrigin).toMatchObject({ status: 403 })
    expect((wrongOrigin as { body: string }).body).toMatch(/origin/)
    expect(await connect(apiUrl(web, web.token), `http://127.0.0.1:${web.port + 1}`)).toMatchObject({ status: 403 })
    expect(await connect(apiUrl(web, web.token), `https://127.0.0.1:${web.port}`)).toMatchObject({ status: 403 })
    expect(await connect(apiUrl(web, web.token), undefined)).toMatchObject({ status: 403 })
    expect(await connect(`ws://127.0.0.1:${web.port}/elsewhere?token=${web.token}`, web.origin)).toMatchObject({ status: 404 })

    const ok = await connect(apiUrl(web, web.token), web.origin)
    expect('ws' in ok).toBe(true)
    const c = client((ok as { ws: WebSocket }).ws)
    expect(await c.request('hello', {})).toEqual({ id: 1, result: { device: node.device, name: 'server', version: 'test' } })
    // localhost is this server too
    expect('ws' in await connect(apiUrl(web, web.token), `http://localhost:${web.port}`)).toBe(true)

    // errors come back as errors, with the request's id
    expect(await c.request('nope', {})).toMatchObject({ id: 2, error: { message: expect.stringMatching(/unknown method "nope"/) } })
    expect(await c.request('conversation.open', { id: 42 })).toMatchObject({ id: 3, error: { message: expect.stringMatching(/invalid params for conversation.open/) } })
    ;(ok as { ws: WebSocket }).ws.send('not json')
    await until(() => c.raw.some(m => 'id' in m && m.id === -1), 'the answer to a message that is not JSON')

    // a conversation and a turn of the scripted model, with its events
    expect(await c.request('settings.set', { provider: 'fake', apiKey: 'sk-secret' })).toMatchObject({ id: 4, result: { provider: 'fake', apiKeySet: true } })
    const created = await c.request('conversation.create', { title: 'over the web', cwd: await dirs.make() }) as { result: { id: string } }
    const sent = await c.request('message.send', { conversation: created.result.id, text: 'hello web' })
    expect(sent).toMatchObject({ result: { entry: { kind: 'user', body: { text: 'hello web' } } } })
    await until(() => c.events.some(e => e.type === 'agent' && !e.running), 'the agent to end')
    expect(c.events.flatMap(e => e.type === 'token' ? [e.delta] : []).join('')).toBe('You said: hello web')
    expect(c.events.some(e => e.type === 'entries' && e.entries.some(x => x.kind === 'assistant'))).toBe(true)
    expect(JSON.stringify(c.raw)).not.toContain('sk-secret')
  })

  it('serves the built renderer, with content types, and nothing outside it', async () => {
    const root = findRendererDir()
    expect(root, 'out/renderer is missing: run `npx electron-vite build`').not.toBeNull()
    const { web } = await serveWeb()
    const index = await get(web.port, '/')
    expect(index.status).toBe(200)
    expect(index.type).toBe('text/html; charset=utf-8')
    expect(index.body).toBe(fs.readFileSync(path.join(root as string, 'index.html'), 'utf8'))
    expect(index.headers['x-content-type-options']).toBe('nosniff')
    expect((await get(web.port, '/index.html?x=1')).body).toBe(index.body)
    expect((await get(web.port, '/', 'HEAD')).body).toBe('')
    expect((await get(web.port, '/', 'POST')).status).toBe(405)

    const script = /src="\.?\/?(assets\/[^"]+\.js)"/.exec(index.body)?.[1]
    expect(script, index.body).toBeDefined()
    const js = await get(web.port, '/' + (script as string))
    expect(js.status).toBe(200)
    expect(js.type).toBe('text/javascript; charset=utf-8')
    expect(js.headers['cache-control']).toContain('immutable')

    for (const p of ['/../../etc/passwd', '/..%2f..%2f..%2fetc%2fpasswd', '/%2e%2e/%2e%2e/%2e%2e/etc/passwd', '/assets/../../../../etc/passwd', '/assets', '/assets/', '/nope.html', '/%00', '/%E0%A4%A']) {
      const r = await get(web.port, p)
      expect(r.status, p).toBeGreaterThanOrEqual(400)
      expect(r.status, p).toBeLessThan(500)
      expect(r.body, p).not.toMatch(/root:/)
    }
    expect((await get(web.port, '/../../etc/passwd')).status).toBe(404)
  })

  it('does not follow a link out of the root', async () => {
    const root = await dirs.make()
    const outside = await dirs.make()
    fs.writeFileSync(path.join(root, 'index.html'), '<!doctype html><title>t</title>')
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'the secret')
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'link.txt'))
    const { web } = await serveWeb({ root })
    expect((await get(web.port, '/')).body).toContain('<title>t</title>')
    expect((await get(web.port, '/link.txt')).status).toBe(404)
  })

  it('`arbor serve --port 0` prints the address of the web UI and serves the API there', async () => {
    const data = await dirs.make()
    let out = ''
    const stop = new AbortController()
    const env = { ARBOR_DATA: data, HOME: data, ARBOR_BOOTSTRAP: nodes.bootstrap().map(b => `${b.host}:${b.port}`).join(',') }
    const done = runCli(['serve', '--port', '0', '--name', 'box'], { out: t => { out += t }, err: () => {}, env, cwd: data, signal: stop.signal })
    defer(async () => { stop.abort(); await done })
    await until(() => /#token=/.test(out), 'serve to print the address', 20_000)
    const m = /(http:\/\/127\.0\.0\.1:(\d+))\/#token=([0-9a-f]{64})/.exec(out)
    expect(m, out).not.toBeNull()
    const [, origin, port, token] = m as RegExpExecArray
    const ok = await connect(`ws://127.0.0.1:${port}/api?token=${token}`, origin)
    const c = client((ok as { ws: WebSocket }).ws)
    expect(await c.request('hello', {})).toMatchObject({ result: { name: 'box' } })
    stop.abort()
    expect(await done).toBe(0)
    expect(await runCli(['serve', '--port', 'http'], { out: () => {}, err: () => {}, env, cwd: data })).toBe(2)
  })
})
