// The Electron shell (DESIGN.md, Processes): one window showing the renderer.
// Kept thin on purpose; everything else runs on plain Node.
import { join } from 'node:path'
import { app, BrowserWindow } from 'electron'

export function createMainWindow(): BrowserWindow {
  const win = new BrowserWindow({
    width: 1100,
    height: 760,
    title: 'Arbor',
    show: false,
    webPreferences: {
      preload: join(import.meta.dirname, '../preload/index.cjs'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false
    }
  })
  win.once('ready-to-show', () => win.show())
  // The window shows the app and nothing else: no pop-ups, no navigating away.
  win.webContents.setWindowOpenHandler(() => ({ action: 'deny' }))
  win.webContents.on('will-navigate', (event) => event.preventDefault())

  const devUrl = process.env.ELECTRON_RENDERER_URL
  if (devUrl) void win.loadURL(devUrl)
  else void win.loadFile(join(import.meta.dirname, '../renderer/index.html'))
  return win
}

export function main(): void {
  if (!app.requestSingleInstanceLock()) {
    app.quit()
    return
  }
  let win: BrowserWindow | null = null
  const open = (): void => {
    win = createMainWindow()
    win.on('closed', () => { win = null })
  }
  app.on('second-instance', () => {
    if (!win) return
    if (win.isMinimized()) win.restore()
    win.focus()
  })
  app.on('window-all-closed', () => app.quit())
  app.on('activate', () => { if (BrowserWindow.getAllWindows().length === 0) open() })
  void app.whenReady().then(() => {
    // Issue 6: spawn and supervise the core (the node) as a utilityProcess here.
    open()
  })
}

main()
