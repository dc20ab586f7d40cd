import { makeEntry } from '../../src/main/history/store/entry-codec'
import type { Entry, EntryDraft } from '../../src/shared/entry/entry'

/** A device key for tests: this device's (`DEV`), a peer's (`PEER`). */
export const DEV = 'd'.repeat(64)
export const PEER = 'e'.repeat(64)

/** A linear branch from drafts, each the child of the previous, under a root of DEV's; `by` writes one as another device. */
export function linearBranch (...drafts: Array<Omit<EntryDraft, 'parents'> & { by?: string }>): Entry[] {
  const root = makeEntry({ kind: 'conversation', body: { title: 't', nonce: 'n' }, parents: [] }, { conversation: null, device: DEV, ts: 1 })
  const out: Entry[] = [root]
  let ts = 2
  for (const { by, ...d } of drafts) out.push(makeEntry({ ...d, parents: [(out.at(-1) as Entry).id] } as EntryDraft, { conversation: root.id, device: by ?? DEV, ts: ts++ }))
  return out
}
