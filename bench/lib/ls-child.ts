// Child process for the `arbor ls` cold-start benchmark: times new HistoryStore + ready()
// + list() on the data directory given as argv[2] (module loading excluded) and prints
// {"ms":..,"count":..}. The store is closed after the clock stops.
import { HistoryStore } from '../../src/main/history/history-store'
import { benchLog } from './util'

const dir = process.argv[2]
if (dir === undefined) throw new Error('usage: ls-child.ts DIR')
const t0 = performance.now()
const store = new HistoryStore({ dir, watchPeers: false, log: benchLog })
await store.ready()
const list = store.list()
const ms = performance.now() - t0
await store.close()
process.stdout.write(JSON.stringify({ ms, count: list.length }) + '\n')
