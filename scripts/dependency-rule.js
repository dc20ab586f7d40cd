// The dependency rule of DESIGN.md ("Layout"), as one table: which folder of src/ may import
// which. test/unit/dependency-rule.test.ts enforces it on every import (the authority, inside
// npm test); eslint.config.js turns it into no-restricted-imports for early warnings.

/** Each unit's folder (or, for the composition root, its one file), repository-relative. */
export const UNITS = {
  shared: 'src/shared/',
  disk: 'src/main/disk/',
  secrets: 'src/main/secrets/',
  history: 'src/main/history/',
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
const CORE = [...LEAVES, 'secrets', 'history', 'sync', 'llm', 'tools', 'runtime']

/** What each unit may import besides itself; anything not named is refused. */
export const ALLOWED = {
  shared: [],
  // plain-Node leaves for what shared may not do (node:fs): every folder of main may use them
  disk: ['shared'],
  secrets: LEAVES,
  history: LEAVES,
  sync: [...LEAVES, 'history'],
  llm: LEAVES,
  tools: LEAVES,
  runtime: [...LEAVES, 'history', 'llm', 'tools'],
  // the wiring: the composition root, the API and its transports, the CLI, the Electron shell
  root: [...CORE, 'api'],
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
  for (const [unit, where] of Object.entries(UNITS)) if (where.endsWith('/') ? file.startsWith(where) : file === where) return /** @type {keyof typeof UNITS} */ (unit)
  return undefined
}
