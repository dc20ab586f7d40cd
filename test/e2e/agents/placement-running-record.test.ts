// Every agent start this device writes is continued after a crash: the list of agents running
// here (runtime/agents.json, what a restart reconciles) names the conversation on disk before
// its agent.started is written. A retry started right after a turn ended was killed between
// the two and never continued (retry-model-restart.test.ts, about 1 run in 3 under load).
import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import type { EntriesEvent } from '../../../src/main/history/conversation-index'
import { apiNodes, scriptedModel } from '../../helpers/api-nodes'
import { until } from '../../helpers/temp-dir'

const nodes = apiNodes('arbor-running-record-')

describe('the record of agents running here', () => {
  it('names the conversation on disk before each start of its agent is written', async () => {
    const { node, api, dir } = await nodes.start('laptop')
    const root = await node.history.createConversation({ title: 'record first' })
    const conv = root.id
    await scriptedModel(node, conv, dir, { default: { text: 'ok' } })
    const file = path.join(dir, 'runtime', 'agents.json')
    const seen: Array<{ reason: string; recorded: boolean }> = []
    node.history.on('entries', (ev: EntriesEvent) => {
      for (const e of ev.joined) {
        if (e.kind !== 'agent.started' || !ev.local) continue
        let running: string[] = []
        try { running = (JSON.parse(fs.readFileSync(file, 'utf8')) as { running: string[] }).running } catch { /* none yet */ }
        seen.push({ reason: (e.body as { reason: string }).reason, recorded: running.includes(conv) })
      }
    })
    // three turns, each started the moment the one before ended (the state write of its end still under way)
    for (let i = 0; i < 3; i++) {
      await api.call('message.send', { conversation: conv, text: `turn ${i}` })
      await until(async () => seen.length === i + 1 && !node.agents.isRunning(conv), `turn ${i} to end`, 20_000)
    }
    expect(seen).toEqual([{ reason: 'user', recorded: true }, { reason: 'user', recorded: true }, { reason: 'user', recorded: true }])
  })
})
