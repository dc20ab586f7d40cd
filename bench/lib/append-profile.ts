// Appends 10,000 chained entries in calls of 100 (as history.append.throughput does), for
// profiling: `node --cpu-prof --cpu-prof-dir DIR --import tsx bench/lib/append-profile.ts`.
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { HistoryStore } from '../../src/main/history/history-store'
import type { Entry, EntryDraft } from '../../src/shared/entry/entry'
import { benchLog, textMaker } from './util'

const TS = 1_700_000_000_000
const TOTAL = Number(process.env.ARBOR_PROFILE_ENTRIES ?? 10_000)
const CALL = Number(process.env.ARBOR_PROFILE_CALL ?? 100)
const ROUNDS = Number(process.env.ARBOR_PROFILE_ROUNDS ?? 3)
const text = textMaker(42)
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'arbor-append-profile-'))
try {
  for (let r = 0; r < ROUNDS; r++) {
    const store = new HistoryStore({ dir: path.join(tmp, String(r)), watchPeers: false, log: benchLog, now: () => TS })
    await store.ready()
    const root = await store.createConversation({ title: 'append profile' })
    // drafts chained with `$k` within a call, so nothing but the store builds entries here
    let parent = root.id
    const t0 = performance.now()
    for (let i = 0; i < TOTAL / CALL; i++) {
      const drafts: EntryDraft[] = Array.from({ length: CALL }, (_, k) => k % 2 === 0
        ? { kind: 'user', body: { text: text() }, parents: [k === 0 ? parent : `$${k - 1}`] }
        : { kind: 'assistant', body: { text: text() }, parents: [`$${k - 1}`] })
      const written = await store.append(root.id, drafts)
      parent = (written[written.length - 1] as Entry).id
    }
    const ms = performance.now() - t0
    process.stdout.write(`round ${r}: ${Math.round(TOTAL / (ms / 1000))} entries/s\n`)
    await store.close()
  }
} finally {
  await fs.rm(tmp, { recursive: true, force: true })
}
