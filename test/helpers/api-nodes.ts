// Real nodes for tests of the API and what serves it, on a HyperDHT testnet on loopback.
// apiNodes() registers the test file's hooks: call it at the top level of the file.
import { afterAll, beforeAll, expect } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import createTestnet from 'hyperdht/testnet.js'
import type { ApiEvent } from '../../src/shared/api/api'
import { memoryLogger } from '../../src/shared/logger'
import { ApiService } from '../../src/main/api/api-service'
import { setMeta } from '../../src/main/history/set-meta'
import { ArborNode, type ArborNodeOptions } from '../../src/main/node'
import type { BootstrapNode } from '../../src/main/sync/sync-node'
import { perTest, type PerTest } from './per-test'

export interface ApiNode { node: ArborNode; api: ApiService; events: ApiEvent[]; dir: string }

export interface ApiNodes extends PerTest {
  /** the testnet's bootstrap nodes */
  bootstrap: () => BootstrapNode[]
  /**
   * A ready ArborNode in a fresh directory (its agents' HOME too) on the testnet, without the
   * CLI's socket, behind an ApiService whose events are kept; `options` override those.
   * Both are closed after the test.
   */
  start: (name: string, options?: Partial<ArborNodeOptions>) => Promise<ApiNode>
}

/** The testnet for the whole file; nodes, directories and whatever is deferred for each test (perTest). */
export function apiNodes (prefix: string): ApiNodes {
  const { dirs, defer } = perTest(prefix)
  let testnet: { bootstrap: BootstrapNode[]; destroy: () => Promise<void> } | undefined
  beforeAll(async () => { testnet = await createTestnet(3) })
  afterAll(async () => { await testnet?.destroy() })
  const bootstrap = (): BootstrapNode[] => {
    if (testnet === undefined) throw new Error('the testnet is not up: apiNodes() belongs at the top level of a test file')
    return testnet.bootstrap
  }
  return {
    dirs,
    bootstrap,
    defer,
    async start (name, options = {}) {
      const dir = await dirs.make()
      const node = new ArborNode({ dataDir: dir, bootstrap: bootstrap(), name, env: { HOME: dir }, log: memoryLogger(), ...options })
      await node.ready()
      const api = new ApiService(node, { version: 'test' })
      defer(async () => { api.close(); await node.close() })
      const events: ApiEvent[] = []
      api.subscribe(ev => { events.push(ev) })
      return { node, api, events, dir }
    }
  }
}

/**
 * Gives the conversation a scripted model of its own: the script in `dir`, named in its
 * `llm` setting as `arbor chat --script` keeps it.
 */
export async function scriptedModel (node: ArborNode, conversation: string, dir: string, script: unknown): Promise<void> {
  const file = path.join(dir, `script-${conversation.slice(0, 8)}.json`)
  fs.writeFileSync(file, JSON.stringify(script))
  await setMeta(node.history, await node.history.open(conversation), 'llm', { provider: 'fake', script: file })
}

/** The message of the Error `p` rejects with (failing the test if it resolves). */
export async function rejection (p: Promise<unknown>): Promise<string> {
  const err = await p.then(() => null, (e: unknown) => e)
  expect(err).toBeInstanceOf(Error)
  return (err as Error).message
}
