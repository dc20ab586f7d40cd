// The preload (src/preload/index.ts) with Electron substituted: what it exposes to the page,
// and how it passes main's API ports on to the page.
import { afterEach, describe, expect, it, vi } from 'vitest'

const fake = vi.hoisted(() => {
  const ipc = new Map<string, (event: unknown, ...args: unknown[]) => void>()
  const exposed: Array<[string, unknown]> = []
  return {
    ipc,
    exposed,
    contextBridge: { exposeInMainWorld: (key: string, api: unknown) => { exposed.push([key, api]) } },
    ipcRenderer: { on: (channel: string, fn: (event: unknown, ...args: unknown[]) => void) => { ipc.set(channel, fn) } }
  }
})
vi.mock('electron', () => ({ contextBridge: fake.contextBridge, ipcRenderer: fake.ipcRenderer }))

const posted: Array<{ message: unknown; targetOrigin: string; transfer: unknown[] }> = []
vi.stubGlobal('window', { postMessage: (message: unknown, targetOrigin: string, transfer: unknown[] = []) => { posted.push({ message, targetOrigin, transfer }) } })
afterEach(() => { posted.length = 0 })

await import('../../../src/preload/index')

describe('the preload', () => {
  it('exposes only the version and "the API comes as a MessagePort": no Electron API reaches the page', () => {
    expect(fake.exposed).toEqual([['arbor', { version: expect.stringMatching(/^\d+\.\d+\.\d+/), api: 'message-port' }]])
    expect([...fake.ipc.keys()].sort()).toEqual(['arbor:api-port', 'arbor:node-down'])
  })

  it('passes every API port from main on to the page, in a window message', () => {
    const port = { a: 'MessagePort' }
    fake.ipc.get('arbor:api-port')?.({ ports: [port] })
    fake.ipc.get('arbor:api-port')?.({ ports: [{ b: 'the next one' }] })
    expect(posted).toEqual([
      { message: { type: 'arbor:api-port' }, targetOrigin: '*', transfer: [port] },
      { message: { type: 'arbor:api-port' }, targetOrigin: '*', transfer: [{ b: 'the next one' }] }
    ])
  })

  it('tells the page when the node went down, with main\'s reason', () => {
    fake.ipc.get('arbor:node-down')?.({ ports: [] }, 'the node stopped unexpectedly (exit code 1); restarting it')
    expect(posted).toEqual([{ message: { type: 'arbor:node-down', reason: 'the node stopped unexpectedly (exit code 1); restarting it' }, targetOrigin: '*', transfer: [] }])
  })
})
