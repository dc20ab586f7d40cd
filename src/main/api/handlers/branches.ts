// branch.name: a branch's name, a `meta` setting every device shows (shared/branch-name.ts).
import { branchName, branchNameKey } from '../../../shared/conversation/branch-name'
import type { Entry } from '../../../shared/entry/entry'
import { setMeta } from '../../history/set-meta'
import { ApiError, type HandlerContext, type HandlersOf } from './handler-context'

export function branchHandlers (c: HandlerContext): HandlersOf<'branch.name'> {
  return {
    'branch.name': async p => {
      const { node } = c
      const id = c.resolve(p.conversation)
      const dag = await node.history.open(id)
      if (dag.root?.kind !== 'conversation') throw new ApiError(`the start of conversation ${id.slice(0, 12)} has not arrived on this device yet`)
      if (!dag.isJoined(p.entry)) throw new ApiError(`entry ${p.entry.slice(0, 12)} is not in conversation ${id.slice(0, 12)}`)
      // the setting goes at the shown branch's tip: below a working agent's tip it would fork its branch
      const working = c.locations.of(id)
      if (working.length > 0 || c.starting.has(id)) throw new ApiError(`the agent is working ${working.some(a => a.self) || working.length === 0 ? 'here' : `on ${working.map(a => a.name).join(' and ')}`}: name the branch when it has finished its turn (or stop it)`)
      const name = branchName(p.name) ?? ''
      if (name === '' && p.name.trim() !== '') throw new ApiError('the name has nothing to show once control characters are taken out')
      const entry: Entry = await setMeta(node.history, dag, branchNameKey(p.entry), name)
      return { entry }
    }
  }
}
