// The app's window, and the link that keeps its page connected to the node.
import { join } from 'node:path'
import { BrowserWindow, type MessagePortMain } from 'electron'
import { API_PORT, NODE_DOWN } from '../../shared/api/desktop-bridge'
import type { NodeHost } from './node-host'

export function createMainWindow (): BrowserWindow {
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

/**
 * Gives a window's page a port to the node once both are there: after every page load
 * (a reload loses the old port) and every node start (the old node's ports are dead).
 */
export class WindowLink {
  private loaded = false
  private connected = false

  constructor (private readonly win: BrowserWindow, private readonly host: NodeHost<MessagePortMain>) {
    win.webContents.on('did-start-loading', () => { this.loaded = false; this.connected = false })
    win.webContents.on('did-finish-load', () => {
      this.loaded = true
      this.connected = false
      this.nodeUp()
    })
  }

  /** The node is up (or the page just loaded): send the page a new port, once. */
  nodeUp (): void {
    if (!this.loaded || this.connected || this.win.isDestroyed()) return
    const port = this.host.connect()
    if (port === null) return
    this.win.webContents.postMessage(API_PORT, null, [port])
    this.connected = true
  }

  /** The node stopped: the page hears why (its port is dead) and waits for the next one. */
  nodeDown (reason: string): void {
    this.connected = false
    if (this.loaded && !this.win.isDestroyed()) this.win.webContents.send(NODE_DOWN, reason)
  }
}
