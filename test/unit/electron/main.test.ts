// Electron main (src/main/electron/app.ts) with Electron substituted: the window, the node
// it forks and supervises, the ports it wires between them, the key it keeps, and the quit.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import type { FromNode, ToNode } from '../../../src/main/electron/node-process-protocol'
import { ManualClock } from '../../../src/shared/clock'
import { FileSecretStore } from '../../../src/main/secrets/secret-store'
import { tempDirs, until } from '../../helpers/temp-dir'

const fake = await vi.hoisted(async () => {
  const { FakeUtility } = await import('../../helpers/fake-utility')
  type Handler = (...args: unknown[]) => unknown
  class Emitter {
    readonly handlers = new Map<string, Handler[]>()
    on (event: string, handler: Handler): this {
      this.handlers.set(event, [...(this.handlers.get(event) ?? []), handler])
      return this
    }
    once (event: string, handler: Handler): this { return this.on(event, handler) }
    emit (event: string, ...args: unknown[]): void {
      for (const handler of this.handlers.get(event) ?? []) handler(...args)
    }
  }
  class FakeWebContents extends Emitter {
    openHandler: ((details: unknown) => unknown) | null = null
    /** what main sent the page: ports (postMessage) and messages (send) */
    readonly sent: Array<{ channel: string; args: unknown[]; ports?: unknown[] }> = []
    setWindowOpenHandler (handler: (details: unknown) => unknown): void { this.openHandler = handler }
    postMessage (channel: string, message: unknown, transfer: unknown[] = []): void { this.sent.push({ channel, args: [message], ports: transfer }) }
    send (channel: string, ...args: unknown[]): void { this.sent.push({ channel, args }) }
    /** the page (re)loads */
    load (): void { this.emit('did-start-loading'); this.emit('did-finish-load') }
  }
  class FakeBrowserWindow extends Emitter {
    static all: FakeBrowserWindow[] = []
    static getAllWindows (): FakeBrowserWindow[] { return FakeBrowserWindow.all }
    readonly webContents = new FakeWebContents()
    readonly loadURL = vi.fn(async (_url: string) => undefined)
    readonly loadFile = vi.fn(async (_file: string) => undefined)
    readonly show = vi.fn()
    readonly focus = vi.fn()
    readonly restore = vi.fn()
    minimized = false
    readonly isMinimized = vi.fn(() => this.minimized)
    isDestroyed (): boolean { return false }
    constructor (readonly options: { webPreferences?: Record<string, unknown> }) {
      super()
      FakeBrowserWindow.all.push(this)
    }
  }
  class FakeApp extends Emitter {
    lock = true
    /** Electron's quit: before-quit listeners may prevent it */
    quits = 0
    quitted = false
    readonly quit = vi.fn(() => {
      this.quits++
      let prevented = false
      this.emit('before-quit', { preventDefault: () => { prevented = true } })
      if (!prevented) this.quitted = true
    })
    readonly requestSingleInstanceLock = vi.fn(() => this.lock)
    readonly whenReady = vi.fn(async () => undefined)
    isReady (): boolean { return true }
  }
  let channels = 0
  class FakeMessageChannelMain {
    readonly port1: { end: string }
    readonly port2: { end: string }
    constructor () {
      channels++
      this.port1 = { end: `node-${channels}` }
      this.port2 = { end: `window-${channels}` }
    }
  }
  const safeStorage = {
    available: true,
    async isAsyncEncryptionAvailable (): Promise<boolean> { return this.available },
    getSelectedStorageBackend: () => 'gnome_libsecret',
    encryptStringAsync: async (s: string) => Buffer.from('sealed:' + Buffer.from(s).toString('hex')),
    decryptStringAsync: async (b: Buffer) => ({ shouldReEncrypt: false, result: Buffer.from(b.toString().replace(/^sealed:/, ''), 'hex').toString() })
  }
  const dialog = {
    response: 0,
    shown: [] as Array<Record<string, unknown>>,
    errors: [] as Array<[string, string]>,
    showMessageBox: vi.fn(async (...args: unknown[]) => {
      dialog.shown.push(args.at(-1) as Record<string, unknown>)
      return { response: dialog.response, checkboxChecked: false }
    }),
    showErrorBox: (title: string, content: string) => { dialog.errors.push([title, content]) }
  }
  const state = { app: new FakeApp(), forks: [] as Array<InstanceType<typeof FakeUtility>> }
  return {
    state,
    dialog,
    safeStorage,
    FakeBrowserWindow,
    FakeMessageChannelMain,
    utilityProcess: {
      fork: (modulePath: string, args: string[] = [], options: Record<string, unknown> = {}) => {
        const u = new FakeUtility(modulePath, args, options)
        state.forks.push(u)
        return u
      }
    },
    reset (lock: boolean) {
      state.app = new FakeApp()
      state.app.lock = lock
      state.forks = []
      channels = 0
      FakeBrowserWindow.all = []
      safeStorage.available = true
      dialog.response = 0
      dialog.shown = []
      dialog.errors = []
      return state.app
    }
  }
})

vi.mock('electron', () => ({
  get app () { return fake.state.app },
  BrowserWindow: fake.FakeBrowserWindow,
  MessageChannelMain: fake.FakeMessageChannelMain,
  utilityProcess: fake.utilityProcess,
  safeStorage: fake.safeStorage,
  dialog: fake.dialog
}))

const { runApp } = await import('../../../src/main/electron/app')

const dirs = tempDirs('arbor-electron-')
const started: Array<{ clock: ManualClock; nodes: typeof fake.state.forks }> = []

async function startApp (lock = true) {
  const app = fake.reset(lock)
  const dir = await dirs.make()
  const clock = new ManualClock(5_000_000)
  const forceKilled: number[] = []
  const echoed: string[] = []
  runApp({ dataDir: dir, clock, random: () => 0, forceKill: pid => { forceKilled.push(pid) }, echoLog: line => { echoed.push(line) } })
  const nodes = fake.state.forks
  started.push({ clock, nodes })
  const windows = fake.FakeBrowserWindow.all
  const node = (): (typeof nodes)[number] => nodes.at(-1) as (typeof nodes)[number]
  const say = (msg: FromNode): void => { node().say(msg) }
  /** what main posted to the current node */
  const toNode = (): ToNode[] => node().posted.map(p => p.msg as ToNode)
  const sent = (channel: string) => (windows[0]?.webContents.sent ?? []).filter(s => s.channel === channel)
  const logText = (): string => fs.existsSync(path.join(dir, 'logs', 'desktop.log')) ? fs.readFileSync(path.join(dir, 'logs', 'desktop.log'), 'utf8') : ''
  if (lock) await until(() => nodes.length === 1, 'the node to be forked')
  return { app, dir, clock, nodes, node, say, toNode, windows, sent, forceKilled, logText, echoed }
}

beforeEach(() => { delete process.env.ELECTRON_RENDERER_URL })
afterEach(async () => {
  // Whatever a test left running: let every node go.
  for (const { clock, nodes } of started.splice(0)) {
    await clock.advance(0)
    for (const n of nodes) if (!n.exited) n.exit(0)
    await clock.advance(60_000)
  }
  await dirs.cleanup()
})

describe('Electron main: the shell', () => {
  it('a second instance quits without opening a window or forking a node', async () => {
    const { app, windows, nodes } = await startApp(false)
    expect(app.requestSingleInstanceLock).toHaveBeenCalledOnce()
    expect(app.quit).toHaveBeenCalledOnce()
    expect(windows).toHaveLength(0)
    expect(nodes).toHaveLength(0)
  })

  it('the first instance opens one isolated, sandboxed window on the built renderer', async () => {
    const { app, windows } = await startApp()
    expect(app.quit).not.toHaveBeenCalled()
    expect(windows).toHaveLength(1)
    const win = windows[0]!
    expect(win.options.webPreferences).toMatchObject({ contextIsolation: true, sandbox: true, nodeIntegration: false })
    expect(String(win.options.webPreferences?.preload)).toMatch(/preload[\\/]index\.cjs$/)
    expect(win.loadFile.mock.calls[0]![0]).toMatch(/renderer[\\/]index\.html$/)
    expect(win.loadURL).not.toHaveBeenCalled()
  })

  it('loads the dev server when ELECTRON_RENDERER_URL is set', async () => {
    process.env.ELECTRON_RENDERER_URL = 'http://localhost:5173'
    const { windows } = await startApp()
    expect(windows[0]!.loadURL).toHaveBeenCalledWith('http://localhost:5173')
    expect(windows[0]!.loadFile).not.toHaveBeenCalled()
  })

  it('a second launch focuses the existing window (restoring it if minimised)', async () => {
    const { app, windows } = await startApp()
    app.emit('second-instance')
    expect(windows[0]!.focus).toHaveBeenCalledOnce()
    expect(windows[0]!.restore).not.toHaveBeenCalled()
    windows[0]!.minimized = true
    app.emit('second-instance')
    expect(windows[0]!.restore).toHaveBeenCalledOnce()
    expect(windows).toHaveLength(1)
  })

  it('denies pop-ups and navigation away from the app', async () => {
    const { windows } = await startApp()
    const contents = windows[0]!.webContents
    expect(contents.openHandler?.({ url: 'https://example.com' })).toEqual({ action: 'deny' })
    const event = { preventDefault: vi.fn() }
    contents.emit('will-navigate', event, 'https://example.com')
    expect(event.preventDefault).toHaveBeenCalledOnce()
  })
})

describe('Electron main: the node', () => {
  it('forks out/main/node.js as the "Arbor node" utilityProcess with its output piped, and starts it on the data directory', async () => {
    const { node, toNode, dir, logText } = await startApp()
    expect(node().modulePath).toMatch(/[\\/]node\.js$/)
    expect(node().args).toEqual([]) // nothing secret on argv
    expect(node().options).toEqual({ serviceName: 'Arbor node', stdio: 'pipe' })
    expect(toNode()).toEqual([{ type: 'start', dataDir: dir, secrets: {}, secretsDescription: 'encrypted with the system keychain' }])
    node().stdout.write('arbor node: hello from the node\n')
    await until(() => logText().includes('arbor node: hello from the node'), 'the node\'s output in the log')
  })

  it('gives the page a port to the node once both are there, and a new one after a reload', async () => {
    const { node, say, toNode, windows, sent } = await startApp()
    const contents = windows[0]!.webContents
    say({ type: 'ready', device: 'd'.repeat(64) })
    expect(sent('arbor:api-port')).toEqual([]) // the page has not loaded yet
    contents.load()
    expect(sent('arbor:api-port')).toEqual([{ channel: 'arbor:api-port', args: [null], ports: [{ end: 'window-1' }] }])
    expect(node().posted.at(-1)).toEqual({ msg: { type: 'connect' }, transfer: [{ end: 'node-1' }] })
    contents.load() // a reload: the page lost its port
    expect(sent('arbor:api-port').map(s => s.ports)).toEqual([[{ end: 'window-1' }], [{ end: 'window-2' }]])
    expect(toNode().filter(m => m.type === 'connect')).toHaveLength(2)
  })

  it('restarts a node that crashes, tells the page why meanwhile, and sends it a port to the new node', async () => {
    const { clock, nodes, node, say, windows, sent } = await startApp()
    windows[0]!.webContents.load()
    say({ type: 'ready', device: 'd1' })
    expect(sent('arbor:api-port')).toHaveLength(1)
    say({ type: 'failed', message: 'the disk holding /data is full' })
    node().exit(1)
    await clock.advance(0)
    expect(sent('arbor:node-down')).toEqual([{ channel: 'arbor:node-down', args: ['the node stopped unexpectedly (the disk holding /data is full); restarting it'] }])
    expect(windows).toHaveLength(1) // the window stays
    await clock.advance(499)
    await new Promise(resolve => setTimeout(resolve, 20))
    expect(nodes).toHaveLength(1)
    await clock.advance(1)
    await until(() => nodes.length === 2, 'the restart')
    say({ type: 'ready', device: 'd1' })
    expect(sent('arbor:api-port').map(s => s.ports)).toEqual([[{ end: 'window-1' }], [{ end: 'window-2' }]])
  })

  it('after 5 restarts within a minute it stops restarting and shows what happened and where the log is; "Try again" starts it again', async () => {
    const { clock, nodes, windows, sent, logText } = await startApp()
    windows[0]!.webContents.load()
    await crashSixTimes(clock, nodes)
    await until(() => fake.dialog.shown.length === 1, 'the error dialog')
    const shown = fake.dialog.shown[0]!
    expect(shown).toMatchObject({ type: 'error', message: 'Arbor’s node keeps stopping', buttons: ['Try again', 'Quit Arbor'] })
    expect(String(shown.detail)).toContain('the node stopped 6 times within 60 s and is not restarted again; the last time: exit code 1')
    expect(String(shown.detail)).toContain(path.join('logs', 'desktop.log'))
    expect(sent('arbor:node-down').at(-1)?.args[0]).toMatch(/is not restarted again/)
    expect(logText()).toMatch(/error node: the node stopped 6 times/)
    await until(() => nodes.length === 7, 'the node to be started again')
  })

  it('"Quit Arbor" in that dialog quits', async () => {
    const { app, clock, nodes } = await startApp()
    fake.dialog.response = 1
    await crashSixTimes(clock, nodes)
    await until(() => app.quitted, 'the app to quit')
  })
})

/** Six crashes, each after the backoff before it: one more than the restart intensity allows. */
async function crashSixTimes (clock: ManualClock, nodes: Array<{ exit: (code: number) => void }>): Promise<void> {
  for (let i = 0; i < 6; i++) {
    (nodes.at(-1) as { exit: (code: number) => void }).exit(1)
    await clock.advance(0)
    if (i === 5) break
    await clock.advance(500 * 2 ** i)
    await until(() => nodes.length === i + 2, `restart ${i + 1}`)
  }
}

describe('Electron main: quitting', () => {
  it('asks the node to shut down and quits only when it has', async () => {
    const { app, clock, node, say, toNode } = await startApp()
    say({ type: 'ready', device: 'd1' })
    app.emit('window-all-closed') // closing the window quits
    expect(app.quits).toBe(1)
    expect(app.quitted).toBe(false) // held back until the node is down
    await until(() => toNode().at(-1)?.type === 'shutdown', 'the shutdown message')
    await clock.advance(5_000)
    app.quit() // quitting again meanwhile changes nothing
    expect(toNode().filter(m => m.type === 'shutdown')).toHaveLength(1)
    expect(app.quitted).toBe(false)
    node().exit(0)
    await until(() => app.quitted, 'the app to quit')
    expect(node().kills).toBe(0)
    await clock.advance(60_000)
    expect(fake.state.forks).toHaveLength(1) // not restarted
  })

  it('kills a node that does not shut down within 10 s (SIGKILL 3 s later if it must), then quits', async () => {
    const { app, clock, node, forceKilled } = await startApp()
    app.quit()
    await clock.advance(9_999)
    expect(node().kills).toBe(0)
    await clock.advance(1)
    expect(node().kills).toBe(1)
    await clock.advance(3_000)
    expect(forceKilled).toEqual([node().pid])
    expect(app.quitted).toBe(false)
    node().exit(137)
    await until(() => app.quitted, 'the app to quit')
  })
})

describe('Electron main: the API key', () => {
  it('decrypts the stored key with safeStorage and hands it to the node in its start message', async () => {
    const dir = await dirs.make()
    await new FileSecretStore(dir).set('apiKey', 'sk-left-in-plain-text')
    const app = fake.reset(true)
    const clock = new ManualClock()
    runApp({ dataDir: dir, clock, echoLog: () => undefined })
    started.push({ clock, nodes: fake.state.forks })
    await until(() => fake.state.forks.length === 1, 'the node to be forked')
    const node = fake.state.forks[0]!
    expect(node.posted[0]?.msg).toMatchObject({ type: 'start', secrets: { apiKey: 'sk-left-in-plain-text' }, secretsDescription: 'encrypted with the system keychain' })
    expect(fs.readFileSync(path.join(dir, 'secrets.json'), 'utf8')).not.toContain('sk-left')
    expect(fs.readFileSync(path.join(dir, 'secrets.enc'), 'utf8')).not.toContain('sk-left')

    // a key set in the UI: the node asks main, which encrypts it
    node.say({ type: 'secret-set', id: 1, name: 'apiKey', value: 'sk-new' })
    await until(() => node.posted.some(p => (p.msg as ToNode).type === 'secret-saved'), 'the answer')
    expect(node.posted.at(-1)?.msg).toEqual({ type: 'secret-saved', id: 1 })
    const enc = fs.readFileSync(path.join(dir, 'secrets.enc'), 'utf8')
    expect(enc).not.toContain('sk-new')
    expect(JSON.parse(enc)).toEqual({ apiKey: Buffer.from('sealed:' + Buffer.from('sk-new').toString('hex')).toString('base64') })
    expect(app.quitted).toBe(false)
  })

  it('without a keychain the key stays in the private secrets.json, and the node (so the settings) and the log say so', async () => {
    const dir = await dirs.make()
    fake.reset(true)
    fake.safeStorage.available = false
    const clock = new ManualClock()
    const echoed: string[] = []
    runApp({ dataDir: dir, clock, echoLog: line => { echoed.push(line) } })
    started.push({ clock, nodes: fake.state.forks })
    await until(() => fake.state.forks.length === 1, 'the node to be forked')
    expect(fake.state.forks[0]!.posted[0]?.msg).toMatchObject({ secretsDescription: `in ${path.join(dir, 'secrets.json')}, readable only by you (no system keychain was found to encrypt it)` })
    expect(echoed.join('')).toMatch(/warn secrets: no system keychain to encrypt the API key with/)
    fake.state.forks[0]!.say({ type: 'secret-set', id: 1, name: 'apiKey', value: 'sk-plain' })
    await until(() => fs.existsSync(path.join(dir, 'secrets.json')), 'the key file')
    expect(fs.statSync(path.join(dir, 'secrets.json')).mode & 0o777).toBe(0o600)
    expect(fs.existsSync(path.join(dir, 'secrets.enc'))).toBe(false)
  })
})
