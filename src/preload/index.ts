// Preload (sandboxed, bundled to CJS): the only bridge between renderer and Electron. It
// exposes no Electron API to the page: only the version, and the node's API ports, which
// it passes on as window messages (a MessagePort cannot cross contextBridge).
import { contextBridge, ipcRenderer } from 'electron'
import { version } from '../../package.json'
import { API_PORT, NODE_DOWN, type ArborBridge, type BridgeMessage } from '../shared/api/desktop-bridge'

const arbor: ArborBridge = { version, api: 'message-port' }

contextBridge.exposeInMainWorld('arbor', arbor)

// To this window only; its page is a file:// one, whose origin cannot be named, hence '*'.
ipcRenderer.on(API_PORT, event => {
  window.postMessage({ type: API_PORT } satisfies BridgeMessage, '*', [...event.ports])
})
ipcRenderer.on(NODE_DOWN, (_event, reason: unknown) => {
  window.postMessage({ type: NODE_DOWN, reason: String(reason) } satisfies BridgeMessage, '*')
})
