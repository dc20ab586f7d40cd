// branch.name: a branch's name as a `meta` setting (shared/branch-name.ts), through the API of a
// real node; shown by the tree layout and `arbor tree`; looked past by everything that reads a
// branch as an older Arbor does (the key is new, the kind is not).
import { describe, expect, it } from 'vitest'
import { asciiTree } from '../../../src/main/cli/ascii-tree'
import { planNext, toIrMessages } from '../../../src/main/runtime/agent/step-planner'
import { openWork } from '../../../src/main/runtime/placement/placement'
import { layoutTree } from '../../../src/renderer/tree/tree-layout'
import { BRANCH_NAME_MAX, branchNameKey } from '../../../src/shared/conversation/branch-name'
import { ConversationDag } from '../../../src/shared/conversation/conversation-dag'
import type { Entry } from '../../../src/shared/entry/entry'
import { apiNodes, rejection, scriptedModel } from '../../helpers/api-nodes'
import { until } from '../../helpers/temp-dir'

const nodes = apiNodes('arbor-branch-name-')

describe('branch.name', () => {
  it('names a turn\'s branch for the tree and arbor tree, renames and clears it; bad input is refused and writes nothing', async () => {
    const { node, api, events } = await nodes.start('laptop')
    await api.request('settings.set', { provider: 'fake' })
    const work = await nodes.dirs.make()
    const { id } = await api.request('conversation.create', { title: 'Names', cwd: work })
    const { entry: user } = await api.request('message.send', { conversation: id, text: 'first question' })
    await until(() => events.some(e => e.type === 'agent' && !e.running), 'the agent to end')
    const before = (await api.request('conversation.open', { id })).entries.length

    const { entry } = await api.request('branch.name', { conversation: id, entry: user.id, name: '  the \u001b]52;c;x\u0007 plan  ' })
    expect(entry).toMatchObject({ kind: 'meta', body: { key: branchNameKey(user.id), value: 'the ]52;c;x plan' } })
    let open = await api.request('conversation.open', { id })
    expect(open.entries).toHaveLength(before + 1)
    // the shown branch is the same, now ending at the setting
    expect(open.selected).toBe(entry.id)
    const dag = new ConversationDag(id, open.entries)
    expect(layoutTree(dag).rows.find(r => r.id === user.id)?.name).toBe('the ]52;c;x plan')
    expect(asciiTree(dag)).toMatch(/user +\[the \]52;c;x plan\] first question/)
    expect(asciiTree(dag)).not.toContain('\u001b')

    await api.request('branch.name', { conversation: id, entry: user.id, name: 'renamed' })
    open = await api.request('conversation.open', { id })
    expect(layoutTree(new ConversationDag(id, open.entries)).rows.find(r => r.id === user.id)?.name).toBe('renamed')
    await api.request('branch.name', { conversation: id, entry: user.id, name: '' })
    open = await api.request('conversation.open', { id })
    expect(layoutTree(new ConversationDag(id, open.entries)).rows.find(r => r.id === user.id)?.name).toBeUndefined()
    const size = open.entries.length

    expect(await rejection(api.request('branch.name', { conversation: id, entry: 'f'.repeat(64), name: 'x' }))).toMatch(/is not in conversation/)
    expect(await rejection(api.request('branch.name', { conversation: id, entry: user.id, name: 'x'.repeat(BRANCH_NAME_MAX + 1) }))).toMatch(/longer than 80/)
    expect(await rejection(api.request('branch.name', { conversation: id, entry: user.id, name: '\u0007\u0008' }))).toMatch(/nothing to show/)
    expect(await rejection(api.request('branch.name', { conversation: id, entry: 'xyz', name: 'x' }))).toMatch(/entry id/)
    expect((await api.request('conversation.open', { id })).entries).toHaveLength(size)

    // while the agent works the setting would fork its branch: refused, nothing written
    await scriptedModel(node, id, work, { default: { text: 'x'.repeat(400), chunkSize: 4, delayMsPerChunk: 50 } })
    const n = events.length
    await api.request('message.send', { conversation: id, text: 'go slowly' })
    await until(() => events.slice(n).some(e => e.type === 'token'), 'the first token')
    const during = (await api.request('conversation.open', { id })).entries.length
    expect(await rejection(api.request('branch.name', { conversation: id, entry: user.id, name: 'busy' }))).toMatch(/the agent is working here/)
    expect((await api.request('conversation.open', { id })).entries).toHaveLength(during)
    await api.request('agent.cancel', { conversation: id })
    await until(() => events.slice(n).some(e => e.type === 'agent' && !e.running), 'the agent to end')
  }, 30_000)

  it('is looked past by what reads a branch as an older Arbor does: the planner, the model\'s context, open work, the title', async () => {
    const { api, events } = await nodes.start('phone')
    await api.request('settings.set', { provider: 'fake' })
    const { id } = await api.request('conversation.create', { title: 'Older readers', cwd: await nodes.dirs.make() })
    const { entry: user } = await api.request('message.send', { conversation: id, text: 'hello there' })
    await until(() => events.some(e => e.type === 'agent' && !e.running), 'the agent to end')
    const without = new ConversationDag(id, (await api.request('conversation.open', { id })).entries)
    await api.request('branch.name', { conversation: id, entry: user.id, name: 'greeting' })
    const dag = new ConversationDag(id, (await api.request('conversation.open', { id })).entries)
    const branch = dag.branch()
    expect(branch.at(-1)).toMatchObject({ kind: 'meta' })
    const self = { device: 'd'.repeat(64), agent: 'x' }
    expect(planNext(branch, () => 'read', self)).toEqual(planNext(without.branch(), () => 'read', self))
    expect(planNext(branch, () => 'read', self)).toEqual({ kind: 'done' })
    expect(toIrMessages(branch, 'system')).toEqual(toIrMessages(without.branch(), 'system'))
    expect(openWork(dag)).toEqual([])
    expect(dag.title()).toBe('Older readers')
    // every device picks the same name whatever order the settings arrive in (LWW by clock)
    const named = branch.at(-1) as Entry
    const later = { ...named, id: 'e'.repeat(64), body: { ...(named.body as object), value: 'later', hlc: { ...(named.body as { hlc: { wall: number } }).hlc, wall: (named.body as { hlc: { wall: number } }).hlc.wall + 1 } } } as Entry
    for (const order of [[...dag.entries(), later], [later, ...dag.entries()]]) {
      expect(layoutTree(new ConversationDag(id, order)).rows.find(r => r.id === user.id)?.name).toBe('later')
    }
  }, 30_000)
})
