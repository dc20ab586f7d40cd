// conversation.import: a Pi or Claude Code session file as a new conversation of this device.
import { ApiError, type HandlerContext, type HandlersOf } from './handler-context'
import { entryDrafts } from '../../history/import/import-tree'
import { ImportError, readSession } from '../../history/import/import-session'
import { readNodeSettings } from '../../runtime/agent/agent-config'
import type { Entry } from '../../../shared/entry/entry'

export function importHandlers (c: HandlerContext): HandlersOf<'conversation.import'> {
  return {
    'conversation.import': async p => {
      let session
      try {
        session = readSession(p.text, p.format)
      } catch (err) {
        if (err instanceof ImportError) throw new ApiError(err.message)
        throw err
      }
      const { node } = c
      // where this device's agent would work is this device's choice, never the file's
      const { defaultCwd } = await readNodeSettings(node.dataDir)
      const written = await node.history.writeConversation(
        { title: session.title, ...(defaultCwd !== undefined ? { cwd: defaultCwd } : {}) },
        id => entryDrafts(session.plan, id)
      )
      const root = written[0] as Entry
      // the file's own leaf is the branch shown (entries[k + 1] is draft k's)
      node.history.select(root.id, (written[session.tip + 1] ?? root).id)
      return { id: root.id, format: session.format, entries: session.plan.drafts.length, problems: session.problems }
    }
  }
}
