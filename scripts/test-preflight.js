// `npm test` runs this first: without the system packages the tests need (bubblewrap for the
// sandbox, Chromium for the UI) it stops at once with one paragraph saying what to install,
// instead of many failing files. The decision is pure (test/unit/repo/test-preflight.test.ts).
import { spawnSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { pathToFileURL } from 'node:url'

/** Where the UI tests find Chromium: ARBOR_CHROMIUM, else Debian's. */
export function chromiumPath (env = process.env) {
  return env.ARBOR_CHROMIUM !== undefined && env.ARBOR_CHROMIUM !== '' ? env.ARBOR_CHROMIUM : '/usr/bin/chromium'
}

/**
 * What is there: bwrap runs from env.PATH (as the sandbox looks it up), Chromium is executable.
 * @param {Record<string, string | undefined>} env
 * @returns {{ bwrap: boolean, chromium: boolean }}
 */
export function probeSystem (env = process.env) {
  const bwrap = spawnSync('bwrap', ['--version'], { env, stdio: 'ignore' })
  let chromium = true
  try { accessSync(chromiumPath(env), constants.X_OK) } catch { chromium = false }
  return { bwrap: bwrap.error === undefined && bwrap.status === 0, chromium }
}

/**
 * The paragraph to print, or null when nothing is missing. bwrap counts on Linux only (elsewhere
 * the sandbox refuses to run and its tests say so).
 * @param {{ platform: string, found: { bwrap: boolean, chromium: boolean }, chromium: string }} input
 * @returns {string | null}
 */
export function preflightMessage ({ platform, found, chromium }) {
  const missing = []
  if (platform === 'linux' && !found.bwrap) missing.push('bubblewrap (the bash tool\'s sandbox: no working `bwrap` on PATH)')
  if (!found.chromium) missing.push(`Chromium (the UI tests: nothing executable at ${chromium}; ARBOR_CHROMIUM names another path)`)
  if (missing.length === 0) return null
  return `npm test needs ${missing.length === 1 ? 'a system package that is' : 'system packages that are'} missing here: ${missing.join(' and ')}. ` +
    'On Debian or Ubuntu install them with `sudo apt-get install -y bubblewrap chromium` ' +
    '(Fedora: `sudo dnf install -y bubblewrap chromium`), then run npm test again; see README.md, "Getting started".'
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const message = preflightMessage({ platform: process.platform, found: probeSystem(process.env), chromium: chromiumPath(process.env) })
  if (message !== null) {
    process.stderr.write(message + '\n')
    process.exit(1)
  }
}
