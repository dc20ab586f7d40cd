import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { capturedCli, type CliRun } from '../../helpers/captured-cli'
import { tempDirs } from '../../helpers/temp-dir'

// `arbor retry` and `arbor fork` in process, each command opening the data directory's node
// for itself (no node runs), with the scripted model.

const dirs = tempDirs()
afterEach(() => dirs.cleanup())

const arbor = (data: string, ...args: string[]): Promise<CliRun> => capturedCli(args, { ARBOR_DATA: data, HOME: data }, data)

describe('arbor retry and arbor fork', () => {
  it('retry answers again as a sibling branch (with another model), printing the new reply; fork copies the branch into a new conversation', async () => {
    const data = await dirs.make()
    const work = await dirs.make()
    const script = path.join(work, 'script.json')
    fs.writeFileSync(script, JSON.stringify({ default: { text: 'Answer from {{model}} to {{lastUser}}' } }))
    const chat = await arbor(data, 'chat', '--new', 'hello there', '--provider', 'fake', '--script', script, '--cwd', work)
    expect(chat.code).toBe(0)
    expect(chat.out).toContain('Answer from fake to hello there')
    const conv = (chat.out.match(/conversation ([0-9a-f]{64})/) as RegExpMatchArray)[1] as string

    const retried = await arbor(data, 'retry', conv.slice(0, 8), '--model', 'second-model')
    expect(retried.err).toMatch(/^retrying [0-9a-f]{8}: a new branch after [0-9a-f]{8}, with second-model\n/)
    expect(retried.code).toBe(0)
    expect(retried.out.trim()).toBe('Answer from second-model to hello there')
    // both replies are in the tree, the new one on the branch shown
    const tree = (await arbor(data, 'tree', conv)).out
    expect(tree).toContain('Answer from fake to hello there')
    expect(tree).toMatch(/\* [0-9a-f]{8} assistant +Answer from second-model/)
    expect((await arbor(data, 'show', conv)).out).toContain('Answer from second-model')

    // a named reply: the first one, with the conversation's own model again
    const first = (tree.match(/([0-9a-f]{8}) assistant +Answer from fake/) as RegExpMatchArray)[1] as string
    const again = await arbor(data, 'retry', conv, first)
    expect(again.code).toBe(0)
    expect(again.out.trim()).toBe('Answer from fake to hello there')
    const user = (tree.match(/([0-9a-f]{8}) user +hello there/) as RegExpMatchArray)[1] as string
    const bad = await arbor(data, 'retry', conv, user)
    expect(bad.code).toBe(1)
    expect(bad.err).toBe(`arbor retry: entry ${user} is a "user" entry, not an assistant reply: only a reply can be retried\n`)

    const forked = await arbor(data, 'fork', conv, '--title', 'Another way')
    expect(forked.code).toBe(0)
    const fid = forked.out.trim()
    expect(fid).toMatch(/^[0-9a-f]{64}$/)
    expect((await arbor(data, 'ls')).out).toMatch(new RegExp(`${fid.slice(0, 12)}.*Another way`))
    const shown = (await arbor(data, 'show', fid)).out
    expect(shown).toContain('hello there')
    expect(shown).toContain('Answer from fake to hello there') // the branch shown when it was forked
    expect(shown).not.toContain('second-model')
    const follow = await arbor(data, 'chat', fid, 'and now?')
    expect(follow.out).toContain('Answer from fake to and now?') // the fork kept this device's model setting
    expect((await arbor(data, 'fork', conv, 'zz')).err).toMatch(/entry must be a hex id/)
  })
})
