// Attacks on http_get, the model's one way to the network (and so a prompt injection's):
// make it fetch from this machine or the local network through an address that does not
// look private (every IPv6 form that embeds or reaches one), as a literal host or as a DNS
// answer; or keep it reading a redirect's endless body.
import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHttpGetTool, guardedLookup } from '../../../src/main/tools/http-get-tool'
import type { ToolContext } from '../../../src/main/tools/tool'
import { until } from '../../helpers/temp-dir'

const ctx = (): ToolContext => ({ cwd: '/', signal: new AbortController().signal, idemKey: 'k', sandbox: { enabled: true, cwd: '/', hidden: [] } })

/** Private, loopback or otherwise not the public internet, in the forms an attacker would write. */
const PRIVATE_IPV6 = [
  '::1', '0:0:0:0:0:0:0:1', '0000:0000:0000:0000:0000:0000:0000:0001',
  '::ffff:127.0.0.1', '::ffff:7f00:1', '::FFFF:7F00:0001', '::ffff:10.0.0.1', '::ffff:a9fe:a9fe', // IPv4-mapped (169.254.169.254: cloud metadata)
  '::127.0.0.1', '::7f00:1', '::10.1.2.3', // IPv4-compatible
  '::ffff:0:127.0.0.1', '::ffff:0:7f00:1', '::ffff:0:192.168.1.1', // IPv4-translated
  '64:ff9b::7f00:1', '64:ff9b::127.0.0.1', '64:ff9b::a00:1', // NAT64, well-known prefix
  '64:ff9b:1::7f00:1', '64:ff9b:1:ffff::1', // NAT64, local-use prefix (RFC 8215)
  '2002:7f00:0001::', '2002:7f00:1::1', '2002:c0a8::', '2002:c0a8:0101::1', '2002:a00:1::', // 6to4 of private IPv4
  '2001:0::1', '2001::53aa:64c:0:0:7fff:fffe', '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
  'fec0::1', 'feff::1', // site-local
  'fc00::1', 'fd12:3456:789a::1', // unique-local
  'fe80::1', 'febf::1', // link-local
  '::', '0::0', // unspecified
  'ff02::1', 'ff05::2', 'ff0e::1', // multicast
  '100::1', '2001:db8::1', '3fff::1' // discard-only, documentation
]

let server: http.Server
let port = 0
let floodClosed = false
let floodBytes = 0

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === '/text') { res.setHeader('content-type', 'text/plain'); res.end('landed'); return }
    if (req.url === '/flood-redirect') {
      // a 302 whose body never ends (bounded here: at most 2000 chunks of 64 KiB, 2 ms apart)
      res.writeHead(302, { location: '/text', 'content-type': 'text/plain' })
      const chunk = Buffer.alloc(64 * 1024, 'x')
      let n = 0
      const timer = setInterval(() => {
        if (n++ >= 2000 || res.destroyed) { clearInterval(timer); res.end(); return }
        floodBytes += chunk.length
        res.write(chunk)
      }, 2)
      req.socket.on('close', () => { clearInterval(timer); floodClosed = true })
      return
    }
    res.statusCode = 404
    res.end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  port = (server.address() as AddressInfo).port
})
afterAll(() => { server.closeAllConnections(); server.close() })

describe('http_get refuses every form of a private address', () => {
  const strict = createHttpGetTool({ timeoutMs: 2000 })

  it.each(PRIVATE_IPV6)('as a literal host: [%s]', async a => {
    const r = await strict.run({ url: `http://[${a}]:${port}/text` }, ctx())
    expect(r).toMatchObject({ status: 'error', output: expect.stringMatching(/is a private or loopback address; http_get only fetches public addresses$/) })
  })

  it.each(['http://2130706433/', 'http://0x7f.1/', 'http://127.1/', 'http://0177.0.0.1/', 'http://0/', 'http://10.1/', 'http://169.254.169.254/'])('as an IPv4 form the URL parser normalizes: %s', async url => {
    const r = await strict.run({ url: url.replace(/\/$/, `:${port}/text`) }, ctx())
    expect(r.output).toMatch(/is a private or loopback address/)
  })

  // A resolver answers in any of these spellings (getaddrinfo hands numeric names back as they are written).
  it.each([...PRIVATE_IPV6, 'fe80::1%lo', 'fe80::1%1', '2130706433', '0x7f.1', '127.1'])('as a DNS answer: %s', async a => {
    const refusal = await new Promise<Error>(resolve => {
      guardedLookup(false)(a, { all: true }, err => { resolve(err ?? new Error('resolved')) })
    })
    expect(refusal.message).toMatch(/, a private or loopback address; http_get only fetches public addresses$/)
  })
})

describe('http_get does not read on a redirect\'s body', () => {
  it('drops the connection of a 302 whose body never ends, and follows it at once', async () => {
    const tool = createHttpGetTool({ allowPrivateNetwork: true, timeoutMs: 10_000 })
    const t0 = Date.now()
    const r = await tool.run({ url: `http://127.0.0.1:${port}/flood-redirect` }, ctx())
    expect(r).toEqual({ status: 'ok', output: `[HTTP 200 http://127.0.0.1:${port}/text, text/plain]\nlanded` })
    expect(Date.now() - t0).toBeLessThan(2000)
    await until(() => floodClosed, 'the server to see the redirect\'s connection closed', 2000)
    expect(floodBytes).toBeLessThan(8 * 1024 * 1024)
  })
})
