// The CLI's side of the local socket when the node dies under it (CI, stop 19: a SIGKILLed
// node left a command waiting for ever and an ECONNRESET uncaught): the transport ends,
// saying why, whenever the connection goes — even while the token is still being read.
import net from 'node:net'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openLocalApi, socketPath, tokenPath } from '../../../src/main/api/local-socket-client'
import { nodeApi } from '../../../src/main/cli/api-session'

const dirs: string[] = []
const servers: net.Server[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise(resolve => s.close(resolve))
  for (const d of dirs.splice(0)) await fs.rm(d, { recursive: true, force: true })
})

/** a "node" that takes the connection and drops it at once, the way a SIGKILL does */
async function droppingNode (): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'arbor-sock-'))
  dirs.push(dir)
  await fs.writeFile(tokenPath(dir), 'a'.repeat(64))
  const server = net.createServer(c => { c.destroy() })
  servers.push(server)
  await new Promise<void>(resolve => server.listen(socketPath(dir), resolve))
  return dir
}

describe('local socket client', () => {
  it('a connection dropped while the token is read ends the transport, and nothing is thrown uncaught', async () => {
    for (let i = 0; i < 20; i++) {
      const dir = await droppingNode()
      const t = await openLocalApi(dir)
      expect(t).not.toBeNull()
      const reason = await new Promise<string | undefined>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the transport never said it closed')), 5000)
        t?.onClose(r => { clearTimeout(timer); resolve(r) })
        t?.send('{"id":1,"method":"status","params":{}}')
      })
      expect(typeof reason).toBe('string')
    }
  })

  it('a command\'s calls fail, saying the node is gone, once its connection ended — also one made after the end', async () => {
    for (let i = 0; i < 10; i++) {
      const api = await nodeApi(await droppingNode())
      expect(api).not.toBeNull()
      const first = await api?.call('hello', {}).then(() => 'answered', (err: Error) => err.name)
      expect(first).toBe('NodeLostError')
      const later = await Promise.race([api?.call('hello', {}).then(() => 'answered', (err: Error) => err.name), new Promise(resolve => setTimeout(() => resolve('still waiting'), 5000))])
      expect(later).toBe('NodeLostError')
      await api?.close()
    }
  })
})
