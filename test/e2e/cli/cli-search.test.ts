// `arbor search`: every conversation and branch, newest first, one terminal-safe line per hit
// (a message's escape sequences cannot reach the terminal), --json and --limit.
import { afterEach, describe, expect, it } from 'vitest'
import { runCli } from '../../../src/main/cli/run-cli'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs()
afterEach(() => dirs.cleanup())

async function arbor (data: string, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = ''
  let err = ''
  const code = await runCli(args, { out: t => { out += t }, err: t => { err += t }, env: { ARBOR_DATA: data }, cwd: data })
  return { code, out, err }
}

describe('arbor search', () => {
  it('finds a word of an old branch and of another conversation, newest first, as safe lines', async () => {
    const data = await dirs.make()
    const trip = (await arbor(data, 'new', '--title', 'Plan the trip')).out.trim()
    const q = (await arbor(data, 'post', trip, 'Shall we fly over the glacier?')).out.trim()
    await arbor(data, 'post', trip, 'The train is simpler', '--parent', trip.slice(0, 8)) // a newer branch from the root
    const other = (await arbor(data, 'new', '--title', 'Evil \u001b]0;owned\u0007 title')).out.trim()
    const evil = (await arbor(data, 'post', other, 'glaciers \u001b[2J\u001b]52;c;cGF5bG9hZA==\u0007 melt')).out.trim()

    const r = await arbor(data, 'search', 'glac')
    expect(r.code).toBe(0)
    const lines = r.out.trimEnd().split('\n')
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(new RegExp(`^${other.slice(0, 8)}  ${evil.slice(0, 8)}  Evil .*: glaciers .*melt$`))
    expect(lines[1]).toBe(`${trip.slice(0, 8)}  ${q.slice(0, 8)}  Plan the trip: Shall we fly over the glacier?`)
    expect(r.out).not.toContain('\u001b')
    expect(r.out).not.toContain('\u0007')

    const json = JSON.parse((await arbor(data, 'search', 'glacier', 'fly', '--json')).out) as Array<{ conversation: string; entry: string; title: string }>
    expect(json).toEqual([expect.objectContaining({ conversation: trip, entry: q, title: 'Plan the trip' })])
    expect((await arbor(data, 'search', 'glac', '--limit', '1')).out.trim().split('\n')).toHaveLength(1)
    expect((await arbor(data, 'search', 'nowhere')).out).toBe('no entry matches "nowhere"\n')
    const bad = await arbor(data, 'search', 'x', '--limit', '0')
    expect(bad.code).toBe(2)
    expect(bad.err).toContain('--limit')
  })
})
