// Preload (sandboxed, bundled to CJS): the only bridge between renderer and Electron.
import { contextBridge } from 'electron'
import { version } from '../../package.json'

export interface ArborBridge {
  readonly version: string
  /** Issue 6: the API MessagePort to the node arrives here; null until then. */
  readonly api: null
}

const arbor: ArborBridge = { version, api: null }

contextBridge.exposeInMainWorld('arbor', arbor)
