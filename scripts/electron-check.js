// Can the Electron desktop app start on this machine? Used by scripts/start.js.
// electronStartDecision is pure (tested in test/unit/electron/shell.test.ts);
// findElectronBinary looks at node_modules/electron.
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

/**
 * @typedef {{ ok: true }
 *   | { ok: false, reasons: Array<'no-binary' | 'no-display'>, message: string }} ElectronDecision
 */

/**
 * Decide whether Electron can start, and if not, the one paragraph to print.
 * @param {{ platform: string, env: Record<string, string | undefined>, binaryPath: string | null }} input
 * @returns {ElectronDecision}
 */
export function electronStartDecision({ platform, env, binaryPath }) {
  /** @type {Array<'no-binary' | 'no-display'>} */
  const reasons = []
  /** @type {string[]} */
  const why = []
  if (!binaryPath) {
    reasons.push('no-binary')
    why.push('the Electron binary is not installed (node_modules/electron has no downloaded binary; ' +
      'run `npx install-electron` where it can be downloaded)')
  }
  const needsDisplay = platform !== 'darwin' && platform !== 'win32'
  if (needsDisplay && !env.DISPLAY && !env.WAYLAND_DISPLAY) {
    reasons.push('no-display')
    why.push('no graphical display was found (neither DISPLAY nor WAYLAND_DISPLAY is set)')
  }
  if (reasons.length === 0) return { ok: true }
  const message =
    `Arbor's desktop app cannot start here: ${why.join(', and ')}. ` +
    'Everything else works without Electron: the headless node with the web UI runs with ' +
    '`npm run serve`, and the command line with `npx arbor --help`.'
  return { ok: false, reasons, message }
}

/**
 * Path of the Electron executable, or null when it is not installed.
 *
 * Reads what node_modules/electron/index.js reads (path.txt, dist/) instead of
 * importing it first: importing it with the binary missing starts a download
 * (printing progress or a stack trace) and then throws "Electron failed to
 * install correctly...". Only when the binary is present is the module asked.
 * @param {Record<string, string | undefined>} [env]
 * @returns {string | null}
 */
export function findElectronBinary(env = process.env) {
  const require = createRequire(import.meta.url)
  let dir
  try {
    dir = dirname(require.resolve('electron/package.json'))
  } catch {
    return null
  }
  let relative
  try {
    relative = readFileSync(join(dir, 'path.txt'), 'utf8').trim()
  } catch {
    relative = ''
  }
  const override = env.ELECTRON_OVERRIDE_DIST_PATH
  const candidate = override ? join(override, relative || 'electron') : relative ? join(dir, 'dist', relative) : null
  if (!candidate || !existsSync(candidate)) return null
  try {
    const binary = require('electron')
    return typeof binary === 'string' && existsSync(binary) ? binary : null
  } catch {
    return null
  }
}
