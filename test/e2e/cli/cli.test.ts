import { afterEach, describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { capturedCli, type CliRun } from '../../helpers/captured-cli'
import { dataDir } from '../../../src/main/disk/data-dir'
import { tempDirs } from '../../helpers/temp-dir'
import { HistoryStore } from '../../../src/main/history/history-store'
import { entryId, makeEntry } from '../../../src/main/history/store/entry-codec'
import { memoryLogger } from '../../../src/shared/logger'

const dirs = tempDirs()
afterEach(() => dirs.cleanup())

/** Runs `arbor ...args` in process against a data directory. */
const arbor = (data: string, ...args: string[]): Promise<CliRun> => capturedCli(args, { ARBOR_DATA: data }, data)

describe('arbor CLI', () => {
  it('new, post, branch, ls, tree, show and export a conversation', async () => {
    const data = await dirs.make()
    const made = await arbor(data, 'new', '--title', 'Plan the trip', '--cwd', data)
    expect(made.code).toBe(0)
    const conv = made.out.trim()
    expect(conv).toMatch(/^[0-9a-f]{64}$/)
    const p = conv.slice(0, 6)
    const q = (await arbor(data, 'post', p, 'Where', 'should we go?')).out.trim()
    await arbor(data, 'post', p, 'Somewhere warm')
    const branch = await arbor(data, 'post', p, 'The mountains', '--parent', q.slice(0, 8))
    expect(branch.code).toBe(0)

    const ls = await arbor(data, 'ls')
    expect(ls.out).toMatch(/ID\s+UPDATED\s+ENTRIES\s+BRANCHES\s+TITLE/)
    expect(ls.out).toMatch(new RegExp(`${conv.slice(0, 12)}\\s+\\S+ ago\\s+4\\s+2\\s+Plan the trip`))
    const json = JSON.parse((await arbor(data, 'ls', '--json')).out) as Array<{ id: string; cwd: string }>
    expect(json[0]).toMatchObject({ id: conv, cwd: data })

    const tree = (await arbor(data, 'tree', p)).out
    expect(tree).toContain('Where should we go?')
    expect(tree).toMatch(/├─ {2}[0-9a-f]{8} user +Somewhere warm/)
    expect(tree).toMatch(/└─\* [0-9a-f]{8} user +The mountains/) // the new branch is selected

    const show = (await arbor(data, 'show', p)).out
    expect(show).toContain('The mountains')
    expect(show).not.toContain('Somewhere warm')
    const other = tree.match(/([0-9a-f]{8}) user +Somewhere warm/)?.[1] as string
    const showOther = (await arbor(data, 'show', p, '--leaf', other)).out
    expect(showOther).toContain('Somewhere warm')
    expect(showOther).not.toContain('The mountains')


    const md = (await arbor(data, 'export', p, '--format', 'md')).out
    expect(md).toMatch(/^# Plan the trip/)
    expect(md).toContain('## User')
    const all = JSON.parse((await arbor(data, 'export', p, '--format', 'json')).out) as { entries: Array<{ id: string; parents: string[] }>; heads: string[] }
    expect(all.entries).toHaveLength(4)
    expect(all.heads).toHaveLength(2)
    const seen = new Set<string>()
    for (const e of all.entries) { for (const par of e.parents) expect(seen.has(par)).toBe(true); seen.add(e.id) }

    // a branch named from the CLI shows in the tree (the name made one plain line); taken away again
    const named = await arbor(data, 'name', p, other, 'Beach', 'plan\u001b[31m')
    expect(named.code).toBe(0)
    expect((await arbor(data, 'tree', p)).out).toMatch(new RegExp(`${other} user +\\[Beach plan \\[31m\\] Somewhere warm`)) // the escape is a space
    expect((await arbor(data, 'name', p, other)).code).toBe(0)
    expect((await arbor(data, 'tree', p)).out).not.toContain('[Beach')
    expect((await arbor(data, 'name', p, 'zzzz', 'x')).code).not.toBe(0)
  })

  it('answers mistakes with one clear line and a non-zero exit', async () => {
    const data = await dirs.make()
    const cases: Array<[string[], RegExp, number]> = [
      [['show', 'abc'], /^arbor show: no conversation matches "abc"; `arbor ls` lists the conversations\n$/, 1],
      [['post'], /missing conversation and text/, 2],
      [['frobnicate'], /unknown command "frobnicate"/, 2],
      [['ls', '--bogus'], /Unknown option '--bogus'/, 2],
      [['new', '--cwd', '/does/not/exist'], /not a directory/, 1]
    ]
    for (const [args, message, code] of cases) {
      const r = await arbor(data, ...args)
      expect(r.code, args.join(' ')).toBe(code)
      expect(r.err, args.join(' ')).toMatch(message)
      expect(r.err.trim().split('\n'), args.join(' ')).toHaveLength(1)
    }
    const conv = (await arbor(data, 'new')).out.trim()
    const r = await arbor(data, 'export', conv, '--format', 'pdf')
    expect([r.code, r.err.trim()]).toEqual([2, 'arbor export: --format must be md or json'])
    expect((await arbor(data, 'post', conv, 'x', '--parent', 'ffff')).err).toMatch(/no entry of this conversation matches "ffff"/)
  })

  it('a reference that cannot name a conversation is refused before any node is opened: nothing is written', async () => {
    const data = await dirs.make()
    for (const cmd of [['show', 'zzz'], ['tree', 'not-hex'], ['status', 'xyz'], ['export', 'q', '--format', 'md']]) {
      const r = await arbor(data, ...cmd)
      expect(r.code, cmd.join(' ')).toBe(1)
      expect(r.err).toMatch(/no conversation \(ids are hex\) matches/)
    }
    expect(fs.readdirSync(data)).toEqual([])
  })

  it('shows and exports an entry from a newer version of Arbor, kept intact', async () => {
    // a (the newer Arbor) wrote a kind this one does not know, and a child of it; b received both
    const [a, b] = [new HistoryStore({ dir: await dirs.make(), log: memoryLogger() }), new HistoryStore({ dir: await dirs.make(), log: memoryLogger() })]
    await a.ready(); await b.ready()
    const root = await a.createConversation({ title: 'across versions' })
    const e = { v: 1 as const, conversation: root.id, parents: [root.id], author: { device: a.device }, ts: root.ts + 1, kind: 'checkpoint', body: { summary: 'so far' } }
    const future = { ...e, id: entryId(e) }
    const after = makeEntry({ kind: 'user', body: { text: 'still here' }, parents: [future.id] }, { conversation: root.id, device: a.device, ts: root.ts + 2 })
    const feed = a.corestore.get({ name: 'arbor/conversation/' + root.id })
    await feed.ready()
    await feed.append([Buffer.from(JSON.stringify(future)), Buffer.from(JSON.stringify(after))])
    const s1 = a.replicate(true)
    const s2 = b.replicate(false)
    s1.pipe(s2).pipe(s1)
    await b.addFeed(root.id, (a.feeds(root.id)[0] as { key: string }).key)
    const deadline = Date.now() + 10_000
    while (b.summary(root.id)?.size !== 3 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 10))
    s1.destroy(); s2.destroy()
    await a.close(); await b.close()

    const show = await arbor(b.dir, 'show', root.id.slice(0, 8))
    expect(show.code).toBe(0)
    expect(show.out).toMatch(/── From a newer version · .*\nAn entry from a newer version of Arbor\. Its kind, "checkpoint", is new to this version: update Arbor on this device to see it\./)
    expect(show.out).toContain('still here')
    const tree = (await arbor(b.dir, 'tree', root.id.slice(0, 8))).out
    expect(tree).toMatch(/unknown +An entry from a newer version/)
    const json = JSON.parse((await arbor(b.dir, 'export', root.id.slice(0, 8), '--format', 'json')).out) as { entries: unknown[]; waiting: unknown[] }
    expect(json.entries).toEqual([root, future, after])
    expect(json.waiting).toEqual([])
  })

  it('picks the data directory from --data, ARBOR_DATA, then the OS default', () => {
    expect(dataDir('/x', { ARBOR_DATA: '/y' })).toBe('/x')
    expect(dataDir(undefined, { ARBOR_DATA: '/y' })).toBe('/y')
    expect(dataDir(undefined, { HOME: '/home/u' }, 'linux')).toBe('/home/u/.config/Arbor')
    expect(dataDir(undefined, { HOME: '/home/u', XDG_CONFIG_HOME: '/cfg' }, 'linux')).toBe('/cfg/Arbor')
    expect(dataDir(undefined, { HOME: '/Users/u' }, 'darwin')).toBe('/Users/u/Library/Application Support/Arbor')
    expect(dataDir(undefined, { HOME: 'C:\\Users\\u', APPDATA: 'C:\\Users\\u\\AppData\\Roaming' }, 'win32')).toMatch(/Roaming.Arbor$/)
  })

  it('runs as the package bin (npx arbor) from the build', async () => {
    const bin = path.resolve('bin/arbor.js')
    expect(fs.existsSync(path.resolve('out/main/cli.js')), 'run `npm run build` first').toBe(true)
    const data = await dirs.make()
    const env = { ...process.env, ARBOR_DATA: data }
    const made = spawnSync(process.execPath, [bin, 'new', '--title', 'from the bin'], { env, encoding: 'utf8' })
    expect(made.status, made.stderr).toBe(0)
    const ls = spawnSync(process.execPath, [bin, 'ls'], { env, encoding: 'utf8' })
    expect(ls.stdout).toContain('from the bin')
    // Scripts off: npm exec of the project's own bin otherwise runs its `prepare` (a full build),
    // rewriting out/ under every other test's running processes.
    const npx = spawnSync('npx', ['--no-install', 'arbor', '--version'], { env: { ...env, npm_config_ignore_scripts: 'true' }, encoding: 'utf8' })
    expect(npx.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/)
    const bad = spawnSync(process.execPath, [bin, 'show', 'nope'], { env, encoding: 'utf8' })
    expect(bad.status).toBe(1)
    expect(bad.stderr).not.toMatch(/at .*\.js:\d+/) // no stack trace
  })
})
