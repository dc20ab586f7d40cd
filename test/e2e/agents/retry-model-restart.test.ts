import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import type { Entry, EntryOf } from '../../../src/shared/entry/entry'
import { ApiSocket } from '../../helpers/served-node'
import { startServe, type Served } from '../../helpers/ui-session'
import { tempDirs, until } from '../../helpers/temp-dir'

// A retry with another model (a choice for that run alone) whose node is SIGKILLed mid-reply: a
// real `arbor serve` restarted on the same directory continues the turn the kill cut short, with
// the model the retry asked for, not the conversation's.
const dirs = tempDirs('arbor-retry-restart-')
const running: Served[] = []
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop()
  await dirs.cleanup()
})

async function serve (dir: string): Promise<{ served: Served; api: ApiSocket }> {
  const served = await startServe(dir, { name: 'laptop' })
  running.push(served)
  return { served, api: await ApiSocket.open(served.url) }
}

const entriesOf = async (api: ApiSocket, id: string): Promise<Entry[]> => (await api.request('conversation.open', { id })).entries
const replies = (all: Entry[]): Array<EntryOf<'assistant'>> => all.filter((e): e is EntryOf<'assistant'> => e.kind === 'assistant')

describe('a retry with another model, cut short by a crash', () => {
  it('is continued after the restart with the model the retry asked for', async () => {
    const dir = await dirs.make()
    const script = path.join(dir, 'script.json')
    // each reply streams for ~2 s: time to kill the node in the middle of one
    fs.writeFileSync(script, JSON.stringify({ default: { text: `answer by {{model}} ${'z'.repeat(400)}`, chunkSize: 4, delayMsPerChunk: 20 } }))
    const crashing = await serve(dir)
    let api = crashing.api
    const { id } = await api.request('conversation.create', { title: 'retry then crash' })
    await api.request('agent.configure', { conversation: id, llm: { provider: 'fake', script }, sandbox: false })
    await api.request('message.send', { conversation: id, text: 'hello' })
    await until(async () => replies(await entriesOf(api, id)).length === 1, 'the first reply', 20_000)
    const [first] = replies(await entriesOf(api, id))
    expect(first?.body.model).toBe('fake')
    await until(async () => (await api.request('agent.status', { conversation: id })).runningHere === null, 'the first turn to end', 20_000)

    await api.request('message.retry', { conversation: id, entry: (first as Entry).id, model: 'other-model' })
    // its start is written before the model is asked: kill the node while the reply streams
    await until(async () => (await entriesOf(api, id)).some(e => e.kind === 'agent.started' && (e as EntryOf<'agent.started'>).body.model === 'other-model'), 'the retry to start', 20_000)
    api.close()
    await crashing.served.kill('SIGKILL')
    api = (await serve(dir)).api
    // the kill cut the retry short: its reply was not recorded (a continuation takes ~2 s to stream one)
    expect(replies(await entriesOf(api, id))).toHaveLength(1)

    await until(async () => replies(await entriesOf(api, id)).length === 2, 'the cut-short retry to be continued', 30_000)
    const all = await entriesOf(api, id)
    const again = replies(all)[1] as EntryOf<'assistant'>
    expect(again.body.model).toBe('other-model')
    expect(again.body.text.startsWith('answer by other-model ')).toBe(true)
    // the continuation's own start says so too: a second crash keeps the model
    const restarts = all.filter((e): e is EntryOf<'agent.started'> => e.kind === 'agent.started' && e.body.reason === 'restart')
    expect(restarts.map(e => e.body.model)).toEqual(['other-model'])
    api.close()
  }, 90_000)
})
