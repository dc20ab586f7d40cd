// The desktop app's bridge (DESIGN.md, "Processes"): main hands each page a MessagePort to
// the node through the preload, which passes it on to the page with window.postMessage
// (a port cannot cross contextBridge). The renderer speaks the API over it.

/** What the preload exposes as `window.arbor`; its presence tells the renderer it runs in the desktop app. */
export interface ArborBridge {
  readonly version: string
  /** the API arrives as a MessagePort in an API_PORT window message, again after every node restart */
  readonly api: 'message-port'
}

/** main → preload (IPC), preload → page (window message `{ type }`): ports[0] is a new API port; it replaces the last one */
export const API_PORT = 'arbor:api-port'
/** main → preload (IPC, with the reason), preload → page (`{ type, reason }`): the node stopped; a new port follows when it is back */
export const NODE_DOWN = 'arbor:node-down'

export type BridgeMessage =
  | { type: typeof API_PORT }
  | { type: typeof NODE_DOWN; reason: string }
