import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { chromiumPath, preflightMessage, probeSystem } from '../../../scripts/test-preflight.js'
import { tempDirs } from '../../helpers/temp-dir'
import { ROOT } from '../../helpers/paths'

const SCRIPT = path.join(ROOT, 'scripts', 'test-preflight.js')
const dirs = tempDirs()
afterEach(() => dirs.cleanup())

/** The preflight as `npm test` runs it, with this environment. */
function preflight (env: NodeJS.ProcessEnv): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [SCRIPT], { env, encoding: 'utf8', timeout: 10_000 })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe('npm test preflight (scripts/test-preflight.js)', () => {
  it('passes in silence where bwrap and Chromium are installed', () => {
    const r = preflight({ ...process.env, ARBOR_CHROMIUM: '' })
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
  })

  it('stops with one paragraph naming both packages and the install command when PATH has no bwrap and Chromium is elsewhere', async () => {
    const emptyBin = await dirs.make()
    const r = preflight({ PATH: emptyBin, HOME: emptyBin, ARBOR_CHROMIUM: path.join(emptyBin, 'chromium') })
    expect(r.status).toBe(1)
    expect(r.stdout).toBe('')
    const lines = r.stderr.trimEnd().split('\n')
    expect(lines).toHaveLength(1)
    expect(r.stderr).toContain('bubblewrap')
    expect(r.stderr).toContain(`Chromium (the UI tests: nothing executable at ${path.join(emptyBin, 'chromium')}`)
    expect(r.stderr).toContain('apt-get install -y bubblewrap chromium')
    expect(r.stderr).toContain('README.md')
  })

  it('names only what is missing: a Chromium that is not executable, bwrap found', async () => {
    const dir = await dirs.make()
    const chromium = path.join(dir, 'chromium')
    fs.writeFileSync(chromium, '#!/bin/sh\n', { mode: 0o644 })
    const r = preflight({ ...process.env, ARBOR_CHROMIUM: chromium })
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/^npm test needs a system package that is missing here: Chromium /)
    expect(r.stderr).not.toContain('no working `bwrap`')
  })

  it('decides from what it found (pure)', () => {
    const all = { bwrap: true, chromium: true }
    expect(preflightMessage({ platform: 'linux', found: all, chromium: '/usr/bin/chromium' })).toBeNull()
    expect(preflightMessage({ platform: 'darwin', found: { bwrap: false, chromium: true }, chromium: '/x' })).toBeNull()
    expect(preflightMessage({ platform: 'linux', found: { bwrap: false, chromium: true }, chromium: '/x' })).toMatch(/^npm test needs a system package that is missing here: bubblewrap /)
    expect(chromiumPath({})).toBe('/usr/bin/chromium')
    expect(chromiumPath({ ARBOR_CHROMIUM: '/opt/c' })).toBe('/opt/c')
    expect(probeSystem({ PATH: '/nonexistent', ARBOR_CHROMIUM: '/nonexistent' })).toEqual({ bwrap: false, chromium: false })
  })
})
