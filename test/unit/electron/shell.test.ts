// `npm start`'s decision logic (the shell itself, with Electron substituted: electron-main.test.ts).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { electronStartDecision, findElectronBinary } from '../../../scripts/electron-check.js'

describe('npm start: can Electron start? (scripts/electron-check.js)', () => {
  const display = { DISPLAY: ':0' }

  it('starts with a binary and a display', () => {
    expect(electronStartDecision({ platform: 'linux', env: display, binaryPath: '/x/electron' })).toEqual({ ok: true })
    expect(electronStartDecision({ platform: 'linux', env: { WAYLAND_DISPLAY: 'wayland-0' }, binaryPath: '/x/electron' }).ok).toBe(true)
    expect(electronStartDecision({ platform: 'darwin', env: {}, binaryPath: '/x/Electron' }).ok).toBe(true)
  })

  it('explains a missing binary in one paragraph pointing to serve and the CLI', () => {
    const decision = electronStartDecision({ platform: 'linux', env: display, binaryPath: null })
    expect(decision.ok).toBe(false)
    if (decision.ok) return
    expect(decision.reasons).toEqual(['no-binary'])
    expect(decision.message).toMatch(/Electron binary is not installed/)
    expect(decision.message).toContain('npm run serve')
    expect(decision.message).toContain('npx arbor --help')
    expect(decision.message).not.toContain('\n')
  })

  it('explains a missing display on Linux', () => {
    const decision = electronStartDecision({ platform: 'linux', env: {}, binaryPath: '/x/electron' })
    expect(decision.ok).toBe(false)
    if (decision.ok) return
    expect(decision.reasons).toEqual(['no-display'])
    expect(decision.message).toMatch(/DISPLAY/)
    expect(decision.message).toContain('npm run serve')
  })

  it('names both reasons when both apply', () => {
    const decision = electronStartDecision({ platform: 'linux', env: {}, binaryPath: null })
    expect(decision.ok ? [] : decision.reasons).toEqual(['no-binary', 'no-display'])
  })

  it('finds no binary in an empty dist directory, without throwing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'arbor-electron-'))
    try {
      expect(findElectronBinary({ ELECTRON_OVERRIDE_DIST_PATH: dir })).toBeNull()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
