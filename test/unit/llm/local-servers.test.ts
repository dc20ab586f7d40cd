import { afterEach, describe, expect, it } from 'vitest'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { detectLocalServers } from '../../../src/main/llm/local-servers'

const servers: http.Server[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise(resolve => s.close(resolve))
})

async function serve (handler: http.RequestListener): Promise<number> {
  const s = http.createServer(handler)
  servers.push(s)
  await new Promise<void>(resolve => s.listen(0, '127.0.0.1', resolve))
  return (s.address() as AddressInfo).port
}

/** a port nothing listens on */
async function freePort (): Promise<number> {
  const s = http.createServer()
  await new Promise<void>(resolve => s.listen(0, '127.0.0.1', resolve))
  const port = (s.address() as AddressInfo).port
  await new Promise(resolve => s.close(resolve))
  return port
}

describe('detectLocalServers', () => {
  it('reports servers answering GET /v1/models with their models, and skips the rest', async () => {
    const good = await serve((req, res) => {
      if (req.url === '/v1/models') { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ object: 'list', data: [{ id: 'llama3' }, { id: 'qwen' }] })) }
      else { res.statusCode = 404; res.end() }
    })
    const notFound = await serve((_req, res) => { res.statusCode = 404; res.end('no') })
    const garbage = await serve((_req, res) => { res.end('<html>hello</html>') })
    const hanging = await serve(() => { /* never answers */ })
    const closed = await freePort()
    const started = Date.now()
    const found = await detectLocalServers({
      candidates: [
        { name: 'Hanging', port: hanging },
        { name: 'Good', port: good },
        { name: 'NotFound', port: notFound },
        { name: 'Garbage', port: garbage },
        { name: 'Closed', port: closed }
      ],
      timeoutMs: 300
    })
    expect(found).toEqual([{ name: 'Good', baseURL: `http://127.0.0.1:${good}/v1`, models: ['llama3', 'qwen'] }])
    expect(Date.now() - started).toBeLessThan(2_000)
  })
})
