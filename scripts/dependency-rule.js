// The dependency rule of DESIGN.md ("Layout"), as one table: which folder of src/ may import
// which. test/unit/repo/dependency-rule.test.ts enforces it on every import (the authority, inside
// npm test); eslint.config.js turns it into no-restricted-imports for early warnings.

/** Each unit's folder (or, for the composition root, its one file), repository-relative. */
export const UNITS = {
  shared: 'src/shared/',
  disk: 'src/main/disk/',
  secrets: 'src/main/secrets/',
  'history/index': 'src/main/history/index/',
  'history/store': 'src/main/history/store/',
  'history/import': 'src/main/history/import/',
  history: 'src/main/history/',
  search: 'src/main/search/',
  'sync/cluster': 'src/main/sync/cluster/',
  'sync/peers': 'src/main/sync/peers/',
  'sync/wire': 'src/main/sync/wire/',
  sync: 'src/main/sync/',
  llm: 'src/main/llm/',
  tools: 'src/main/tools/',
  runtime: 'src/main/runtime/',
  root: 'src/main/node.ts',
  api: 'src/main/api/',
  cli: 'src/main/cli/',
  electron: 'src/main/electron/',
  preload: 'src/preload/',
  renderer: 'src/renderer/',
  types: 'src/types/'
}

const LEAVES = ['shared', 'disk']
// a folder's parts, below the folder's own files (the orchestrator over them, as Corestore over its lib/)
const HISTORY = ['history', 'history/store', 'history/index', 'history/import']
const SYNC = ['sync', 'sync/cluster', 'sync/peers', 'sync/wire']
const CORE = [...LEAVES, 'secrets', ...HISTORY, 'search', ...SYNC, 'llm', 'tools', 'runtime']

/** What each unit may import besides itself; anything not named is refused. */
export const ALLOWED = {
  shared: [],
  // plain-Node leaves for what shared may not do (node:fs): every folder of main may use them
  disk: ['shared'],
  secrets: LEAVES,
  'history/index': LEAVES,
  'history/store': [...LEAVES, 'history/index'],
  'history/import': LEAVES,
  history: [...LEAVES, 'history/store', 'history/index', 'history/import'],
  // fed through its SearchSource: it knows entries, not how they are stored
  search: LEAVES,
  'sync/cluster': LEAVES,
  'sync/peers': LEAVES,
  'sync/wire': [...LEAVES, ...HISTORY, 'sync/peers'],
  sync: [...LEAVES, ...HISTORY, 'sync/cluster', 'sync/peers', 'sync/wire'],
  llm: LEAVES,
  tools: LEAVES,
  runtime: [...LEAVES, ...HISTORY, 'llm', 'tools'],
  // the wiring: the composition root (of the core only: its clients are composed over it), the
  // API and its transports, the CLI, the Electron shell
  root: CORE,
  api: [...CORE, 'root'],
  cli: [...CORE, 'root', 'api'],
  electron: [...CORE, 'root', 'api'],
  preload: ['shared'],
  renderer: ['shared'],
  types: []
}

/** Units that run where Node's modules do not (the renderer, and shared, which it uses). */
export const NO_NODE_BUILTINS = ['shared', 'renderer']

/** The only units that import Electron. */
export const MAY_IMPORT_ELECTRON = ['electron', 'preload']

/**
 * The unit a repository-relative file belongs to; undefined for a file outside every folder.
 * @param {string} file
 * @returns {keyof typeof UNITS | undefined}
 */
export function unitOf (file) {
  // the longest folder that holds it: a folder's parts are units of their own
  let best
  for (const [unit, where] of Object.entries(UNITS)) {
    const holds = where.endsWith('/') ? file.startsWith(where) : file === where
    if (holds && (best === undefined || where.length > UNITS[best].length)) best = unit
  }
  return /** @type {keyof typeof UNITS | undefined} */ (best)
}
