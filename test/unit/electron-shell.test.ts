// The Electron shell with Electron substituted, and `npm start`'s decision logic.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { electronStartDecision, findElectronBinary } from '../../scripts/electron-check.js'

const fake = vi.hoisted(() => {
  type Handler = (...args: unknown[]) => unknown
  class Emitter {
    readonly handlers = new Map<string, Handler[]>()
    on(event: string, handler: Handler): this {
      this.handlers.set(event, [...(this.handlers.get(event) ?? []), handler])
      return this
    }
    once(event: string, handler: Handler): this { return this.on(event, handler) }
    emit(event: string, ...args: unknown[]): void {
      for (const handler of this.handlers.get(event) ?? []) handler(...args)
    }
  }
  class FakeWebContents extends Emitter {
    openHandler: ((details: unknown) => unknown) | null = null
    setWindowOpenHandler(handler: (details: unknown) => unknown): void { this.openHandler = handler }
  }
  class FakeBrowserWindow extends Emitter {
    static all: FakeBrowserWindow[] = []
    static getAllWindows(): FakeBrowserWindow[] { return FakeBrowserWindow.all }
    readonly webContents = new FakeWebContents()
    readonly loadURL = vi.fn(async (_url: string) => undefined)
    readonly loadFile = vi.fn(async (_file: string) => undefined)
    readonly show = vi.fn()
    readonly focus = vi.fn()
    readonly restore = vi.fn()
    readonly isMinimized = vi.fn(() => false)
    constructor(readonly options: { webPreferences?: Record<string, unknown> }) {
      super()
      FakeBrowserWindow.all.push(this)
    }
  }
  class FakeApp extends Emitter {
    lock = true
    readonly quit = vi.fn()
    readonly requestSingleInstanceLock = vi.fn(() => this.lock)
    readonly whenReady = vi.fn(async () => undefined)
  }
  const state = { app: new FakeApp() }
  return {
    state,
    FakeBrowserWindow,
    reset(lock: boolean): FakeApp {
      state.app = new FakeApp()
      state.app.lock = lock
      FakeBrowserWindow.all = []
      return state.app
    }
  }
})

vi.mock('electron', () => ({
  get app() { return fake.state.app },
  BrowserWindow: fake.FakeBrowserWindow
}))

async function startShell(lock: boolean) {
  const app = fake.reset(lock)
  vi.resetModules()
  await import('../../src/main/electron/main')
  await new Promise((resolve) => setTimeout(resolve, 0)) // let whenReady() settle
  return { app, windows: fake.FakeBrowserWindow.all }
}

describe('Electron shell (src/main/electron/main.ts)', () => {
  const savedUrl = process.env.ELECTRON_RENDERER_URL
  beforeEach(() => { delete process.env.ELECTRON_RENDERER_URL })
  afterEach(() => {
    if (savedUrl === undefined) delete process.env.ELECTRON_RENDERER_URL
    else process.env.ELECTRON_RENDERER_URL = savedUrl
  })

  it('a second instance quits without opening a window', async () => {
    const { app, windows } = await startShell(false)
    expect(app.requestSingleInstanceLock).toHaveBeenCalledOnce()
    expect(app.quit).toHaveBeenCalledOnce()
    expect(windows).toHaveLength(0)
    expect(app.handlers.size).toBe(0)
  })

  it('the first instance opens one isolated, sandboxed window on the built renderer', async () => {
    const { app, windows } = await startShell(true)
    expect(app.quit).not.toHaveBeenCalled()
    expect(windows).toHaveLength(1)
    const win = windows[0]!
    expect(win.options.webPreferences).toMatchObject({ contextIsolation: true, sandbox: true, nodeIntegration: false })
    expect(String(win.options.webPreferences?.preload)).toMatch(/preload[\\/]index\.cjs$/)
    expect(win.loadFile).toHaveBeenCalledOnce()
    expect(win.loadFile.mock.calls[0]![0]).toMatch(/renderer[\\/]index\.html$/)
    expect(win.loadURL).not.toHaveBeenCalled()
  })

  it('loads the dev server when ELECTRON_RENDERER_URL is set', async () => {
    process.env.ELECTRON_RENDERER_URL = 'http://localhost:5173'
    const { windows } = await startShell(true)
    expect(windows[0]!.loadURL).toHaveBeenCalledWith('http://localhost:5173')
    expect(windows[0]!.loadFile).not.toHaveBeenCalled()
  })

  it('quits when all windows are closed', async () => {
    const { app } = await startShell(true)
    expect(app.handlers.has('window-all-closed')).toBe(true)
    app.emit('window-all-closed')
    expect(app.quit).toHaveBeenCalledOnce()
  })

  it('a second launch focuses the existing window', async () => {
    const { app, windows } = await startShell(true)
    app.emit('second-instance')
    expect(windows[0]!.focus).toHaveBeenCalledOnce()
  })

  it('denies pop-ups and navigation away from the app', async () => {
    const { windows } = await startShell(true)
    const contents = windows[0]!.webContents
    expect(contents.openHandler?.({ url: 'https://example.com' })).toEqual({ action: 'deny' })
    const event = { preventDefault: vi.fn() }
    contents.emit('will-navigate', event, 'https://example.com')
    expect(event.preventDefault).toHaveBeenCalledOnce()
  })
})

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
