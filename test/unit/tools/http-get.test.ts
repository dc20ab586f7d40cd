import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import zlib from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { htmlToText, linkTarget } from '../../../src/main/tools/html-text'
import { createHttpGetTool, guardedLookup } from '../../../src/main/tools/http-get-tool'
import { isPrivateAddress } from '../../../src/main/tools/private-address'
import type { ToolContext } from '../../../src/main/tools/tool'

let server: http.Server
let base: string
const hanging = new Set<http.ServerResponse>()

const PAGE = `<!doctype html><html><head><title>T &amp; co</title><style>body{color:red}</style>
<script>alert("x")</script></head><body><!-- hidden --><h1>Hello</h1><p>A&nbsp;para   with
   <b>bold</b> &lt;tag&gt; &#233;&#x1F600;</p><ul><li>one</li><li>two</li></ul><noscript>no</noscript></body></html>`

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const url = req.url ?? '/'
    if (url === '/page') { res.setHeader('content-type', 'text/html; charset=utf-8'); res.end(PAGE) }
    else if (url === '/text') { res.setHeader('content-type', 'text/plain'); res.end('  plain <b>as is</b>  \n') }
    else if (url === '/json') { res.setHeader('content-type', 'application/json'); res.end('{"a":1}') }
    else if (url === '/latin1') { res.setHeader('content-type', 'text/plain; charset=iso-8859-1'); res.end(Buffer.from([0x63, 0x61, 0x66, 0xe9])) }
    else if (url === '/gzip') { res.setHeader('content-type', 'text/plain'); res.setHeader('content-encoding', 'gzip'); res.end(zlib.gzipSync('zipped text')) }
    else if (url === '/png') { res.setHeader('content-type', 'image/png'); res.setHeader('content-length', '4'); res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47])) }
    else if (url === '/untyped-binary') { res.removeHeader('content-type'); res.end(Buffer.from([1, 0, 2, 0])) }
    else if (url === '/big') { res.setHeader('content-type', 'text/plain'); res.end('y'.repeat(50_000)) }
    else if (url === '/redirect') { res.statusCode = 302; res.setHeader('location', '/text'); res.end() }
    else if (url === '/loop') { res.statusCode = 302; res.setHeader('location', '/loop'); res.end() }
    else if (url === '/to-file') { res.statusCode = 302; res.setHeader('location', 'file:///etc/passwd'); res.end() }
    else if (url === '/links') { res.setHeader('content-type', 'text/html'); res.end('<p onclick="x>LEAK">see <a href="next/page">the next page</a> &amp;</p>') }
    else if (url === '/missing') { res.statusCode = 404; res.setHeader('content-type', 'text/html'); res.end('<p>Not here</p>') }
    else if (url === '/hang') { res.setHeader('content-type', 'text/plain'); res.write('partial'); hanging.add(res) }
    else { res.statusCode = 500; res.end() }
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  for (const r of hanging) r.destroy()
  server.closeAllConnections()
  server.close()
})

const ctx = (): ToolContext => ({ cwd: '/', signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: true, cwd: '/', hidden: [] } })
const tool = createHttpGetTool({ allowPrivateNetwork: true, maxBytes: 10_000, timeoutMs: 500 })
const get = (url: string): ReturnType<typeof tool.run> => tool.run({ url }, ctx())

describe('html to text', () => {
  it('drops scripts, styles and comments, keeps structure, decodes entities', () => {
    expect(htmlToText(PAGE)).toBe('T & co\n\nHello\n\nA para with bold <tag> é😀\n\n- one\n- two')
    expect(htmlToText('<p>&amp;lt; &#0; &unknown; &#x110000;</p>')).toBe('&lt; \ufffd &unknown; \ufffd')
    expect(htmlToText('<script>never closed')).toBe('')
  })
})

describe('http_get', () => {
  it('returns HTML as readable text and other text as is', async () => {
    const page = await get(`${base}/page`)
    expect(page.status).toBe('ok')
    expect(page.output).toBe(`[HTTP 200 ${base}/page, text/html; charset=utf-8]\nT & co\n\nHello\n\nA para with bold <tag> é😀\n\n- one\n- two`)
    expect((await get(`${base}/text`)).output).toBe(`[HTTP 200 ${base}/text, text/plain]\n  plain <b>as is</b>  \n`)
    expect((await get(`${base}/json`)).output).toMatch(/\{"a":1\}$/)
    expect((await get(`${base}/latin1`)).output).toMatch(/café$/)
    expect((await get(`${base}/gzip`)).output).toMatch(/zipped text$/)
  })

  it('refuses binary content with a note', async () => {
    const png = await get(`${base}/png`)
    expect(png).toEqual({ status: 'error', output: `[HTTP 200 ${base}/png, image/png]\nbinary content (4 bytes) not shown; http_get returns text only` })
    expect((await get(`${base}/untyped-binary`)).output).toMatch(/binary content \(4 bytes\) not shown/)
  })

  it('stops reading at the size limit', async () => {
    const r = await get(`${base}/big`)
    expect(r.truncated).toBe(true)
    expect(r.output).toMatch(/\[stopped reading after 10,000 bytes\]$/)
    expect(r.output.length).toBeLessThan(10_200)
  })

  it('stops at the time limit and on cancel', async () => {
    const t0 = Date.now()
    const r = await get(`${base}/hang`)
    expect(r).toEqual({ status: 'error', output: `http_get timed out after 500 ms: ${base}/hang` })
    expect(Date.now() - t0).toBeLessThan(2000)
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 50)
    expect((await tool.run({ url: `${base}/hang` }, { ...ctx(), signal: ac.signal })).output).toBe(`http_get cancelled: ${base}/hang`)
  })

  it('follows redirects within http(s) only, and a bounded number of them', async () => {
    expect((await get(`${base}/redirect`)).output).toMatch(new RegExp(`^\\[HTTP 200 ${base}/text`))
    expect((await get(`${base}/loop`)).output).toMatch(/too many redirects/)
    expect((await get(`${base}/to-file`)).output).toBe('http_get only fetches http and https URLs, not file:')
  })

  it('reports HTTP errors with the body, and bad URLs', async () => {
    expect(await get(`${base}/missing`)).toEqual({ status: 'error', output: `[HTTP 404 ${base}/missing, text/html]\nNot here` })
    expect((await get('ftp://example.com/x')).output).toMatch(/only fetches http and https/)
    expect((await get('not a url')).output).toBe('not a valid URL: not a url')
    expect((await tool.run({}, ctx())).output).toBe("missing required argument 'url'")
  })

  it('refuses private and loopback addresses unless allowed', async () => {
    const strict = createHttpGetTool()
    expect((await strict.run({ url: `${base}/text` }, ctx())).output).toMatch(/127\.0\.0\.1 is a private or loopback address/)
    expect((await strict.run({ url: 'http://localhost:1/' }, ctx())).output).toMatch(/localhost is local/)
    expect((await strict.run({ url: 'http://[::ffff:127.0.0.1]:1/' }, ctx())).output).toMatch(/private or loopback/)
    // a name that resolves to loopback is refused at connect time (what the tool passes to http.get)
    const port = new URL(base).port
    const refusal = await new Promise<Error>(resolve => {
      http.get(`http://localhost:${port}/text`, { lookup: guardedLookup(false) }, res => { res.resume(); resolve(new Error('connected')) }).on('error', resolve)
    })
    expect(refusal.message).toMatch(/^localhost resolves to (127\.0\.0\.1|::1), a private or loopback address/)
    // and allowed when private addresses are
    expect((await get(`http://localhost:${port}/text`)).output).toMatch(/plain <b>as is<\/b>/)
    for (const a of ['127.0.0.1', '10.1.2.3', '169.254.169.254', '192.168.1.1', '::1', 'fe80::1', '::ffff:10.0.0.1', '100.64.0.1']) expect(isPrivateAddress(a)).toBe(true)
    for (const a of ['1.1.1.1', '2606:4700::1111']) expect(isPrivateAddress(a)).toBe(false)
  })
})

describe('html to text, <pre>', () => {
  it('keeps line breaks and indentation inside pre', () => {
    expect(htmlToText('<p>x</p><pre>def f():\n    return 1 &lt; 2\n</pre><p>y</p>')).toBe('x\n\ndef f():\n    return 1 < 2\n\ny')
  })
})

describe('html to text, hostile pages', () => {
  it('never shows attribute text, even where a value holds ">"', () => {
    const text = htmlToText(`<p title="a>LEAK1" data-x='b>LEAK2' onclick="f(1>LEAK3)">visible</p><img alt="x>LEAK4" src="y>LEAK5"><input value="LEAK6"><div hidden-note="LEAK7">seen</div>`)
    expect(text).toBe('visible\n\nseen')
  })

  it('drops scripts and styles however their tags are written, and keeps what follows them', () => {
    const text = htmlToText(`<script data-x="a>b">LEAK1()</script ><p>one</p><script>var s = "</div>LEAK2"</script foo><p>two</p><style media="x>y">p{color:LEAK3}</style><script type="text/template"><p>LEAK4</p></script><!--[if IE]><p>LEAK5</p><![endif]--><p>three</p>`)
    expect(text).toBe('one\n\ntwo\n\nthree')
  })

  it('decodes every named entity as a browser does, once', () => {
    expect(htmlToText('<p>&hearts; &notin; &Eacute;cole &amp;amp; &#x26;lt; &NotNestedGreaterGreater; &frac13;</p>')).toBe('\u2665 \u2209 \u00c9cole &amp; &lt; \u2aa2\u0338 \u2153')
  })

  it('keeps links as their text with the absolute URL, nested links included, and no javascript: URL', () => {
    const page = 'https://site.test/docs/page.html'
    expect(htmlToText('<p>Read <a href="guide/start?a=1&amp;b=2#top">the <b>guide</b></a>, <a href="/faq">FAQ</a> or <a href="https://x.test/">https://x.test/</a>.</p>', page))
      .toBe('Read the guide [https://site.test/docs/guide/start?a=1&b=2#top], FAQ [https://site.test/faq] or https://x.test/.')
    const nested = htmlToText('<a href="https://outer.test/">outer <a href="https://inner.test/">inner</a> tail</a>', page)
    expect(nested).toContain('outer')
    expect(nested).toContain('inner [https://inner.test/]')
    expect(nested).toContain('[https://outer.test/]')
    expect(htmlToText('<a href="javascript:alert(1)">run</a> <a href=" data:text/html,x">data</a> <a href="mailto:a@b.test">mail</a>', page)).toBe('run data mail [mailto:a@b.test]')
    expect(linkTarget('notes/a.html', undefined)).toBe('notes/a.html')
    expect(linkTarget('vbscript:x', undefined)).toBe('')
  })

  it('survives nesting without end (cut, not a stack overflow), within a bounded time', () => {
    const deep = '<div>'.repeat(100_000) + 'deep' + '</div>'.repeat(100_000) + '<p>after</p>'
    const started = Date.now()
    const text = htmlToText('<p>before</p>' + deep)
    expect(text.startsWith('before')).toBe(true)
    expect(text).not.toContain('deep')
    expect(text.endsWith('after')).toBe(true)
    expect(Date.now() - started).toBeLessThan(10_000)
  })

  it('http_get resolves a page\'s links against the address it read the page from', async () => {
    const page = (await get(`${base}/links`)).output
    expect(page).toBe(`[HTTP 200 ${base}/links, text/html]\nsee the next page [${base}/next/page] &`)
  })
})
