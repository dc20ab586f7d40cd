// conversation.fork: a branch copied into a new conversation of this device (the Fork button, `arbor fork`).
import type { ApiMethods } from '../../../shared/api/api'
import type { ApiParamsOut } from '../../../shared/api/api-params'
import type { Entry, EntryDraft } from '../../../shared/entry/entry'
import { entryByRef } from '../../../shared/entry/entry-ref'
import { copyDraft, forkCopy, notRunDraft } from '../../../shared/conversation/fork-copy'
import { setMeta } from '../../history/set-meta'
import { conversationSettings } from '../../runtime/agent/agent-config'
import { ApiError, asApiError, type HandlerContext, type HandlersOf } from './handler-context'

export function forkHandlers (c: HandlerContext): HandlersOf<'conversation.fork'> {
  return { 'conversation.fork': async p => fork(c, p) }
}

/**
 * A new conversation, authored here, whose history is a copy of the branch root → entry
 * (forkCopy: messages, replies, tool calls and results as history, never run again), whose
 * root says where it came from (`forkedFrom`). It takes this device's own settings of the
 * source (its model, the sandbox switch, the working directory the history's files are in),
 * never one a peer wrote. The source is not changed.
 */
async function fork (c: HandlerContext, p: ApiParamsOut<'conversation.fork'>): Promise<ApiMethods['conversation.fork']['result']> {
  const { node } = c
  const id = c.resolve(p.conversation)
  const dag = await node.history.open(id)
  if (dag.root?.kind !== 'conversation') throw new ApiError(`the start of conversation ${id.slice(0, 12)} has not arrived on this device yet`)
  const entry = await asApiError(Promise.resolve().then(() => entryByRef(dag, p.entry)))
  if (!dag.isJoined(entry.id)) throw new ApiError(`entry ${entry.id.slice(0, 8)} waits for a parent that has not arrived; fork from another entry`)
  const copy = forkCopy(dag.pathTo(entry.id))
  const own = conversationSettings(dag, node.device)
  const root = await node.history.createConversation({
    title: p.title ?? `${dag.title() === '' ? 'Untitled' : dag.title()} (fork)`,
    cwd: await node.workingDirectory(id),
    ...(own.model !== undefined ? { model: own.model } : {}),
    forkedFrom: { conversation: id, entry: entry.id }
  })
  const fid = root.id
  // Written in batches; a compaction names the copies of what it folded, known once they are written.
  const copies = new Map<string, string>()
  let tip = fid
  let batch: Array<{ source: string; draft: EntryDraft }> = []
  const parent = (): string => batch.length === 0 ? tip : `$${batch.length - 1}`
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return
    const written = await node.history.append(fid, batch.map(b => b.draft))
    written.forEach((w, i) => copies.set((batch[i] as { source: string }).source, w.id))
    tip = (written.at(-1) as Entry).id
    batch = []
  }
  for (const e of copy.entries) {
    if (e.kind === 'compaction') await flush()
    const draft = copyDraft(e, parent(), copies)
    if (draft !== undefined) batch.push({ source: e.id, draft })
  }
  for (const callId of copy.open) batch.push({ source: '', draft: notRunDraft(callId, parent()) })
  const copied = copies.size + batch.length
  await flush()
  node.history.select(fid, tip)
  let fdag = await node.history.open(fid)
  if (Object.keys(own.llm).length > 0) { await setMeta(node.history, fdag, 'llm', own.llm); fdag = await node.history.open(fid) }
  if (!own.sandbox) await setMeta(node.history, fdag, 'sandbox', false)
  return { id: fid, copied }
}
