// Node's worker_threads ports shaped as Electron's MessagePortMain and parentPort, so the
// desktop app's node (src/main/electron/node-process.ts) runs here on plain Node, over real ports.
import { MessageChannel, type MessagePort } from 'node:worker_threads'
import type { MessagePortLike } from '../../src/main/api/message-port'
import type { ParentPortLike } from '../../src/main/electron/node-process-protocol'

/** MessagePortMain's API over a worker_threads port: 'message' listeners get `{ data }`. */
export function portMain (port: MessagePort): MessagePortLike & { raw: MessagePort } {
  const wrapped = {
    raw: port,
    postMessage: (message: unknown) => { port.postMessage(message) },
    on (event: 'message' | 'close', listener: ((e: { data: unknown }) => void) | (() => void)) {
      if (event === 'message') port.on('message', (data: unknown) => { (listener as (e: { data: unknown }) => void)({ data }) })
      else port.on('close', listener as () => void)
      return wrapped
    },
    start: () => { port.start() },
    close: () => { port.close() }
  }
  return wrapped
}

type ParentListener = (e: { data: unknown; ports: MessagePortLike[] }) => void

/**
 * A parentPort pair: `parent` is what the node gets as process.parentPort; `main` posts to
 * it as Electron main's utilityProcess.postMessage(msg, ports) would and hears its replies.
 */
export function parentChannel (): { parent: ParentPortLike; main: { post: (data: unknown, ports?: MessagePort[]) => void; received: unknown[]; onMessage: (fn: (data: unknown) => void) => void }; close: () => void } {
  const { port1, port2 } = new MessageChannel()
  const listeners = new Map<ParentListener, (v: { data: unknown; ports: MessagePort[] }) => void>()
  const parent: ParentPortLike = {
    postMessage: message => { port1.postMessage(message) },
    on: (_event, listener) => {
      const wrapped = (v: { data: unknown; ports: MessagePort[] }): void => { listener({ data: v.data, ports: v.ports.map(portMain) }) }
      listeners.set(listener, wrapped)
      port1.on('message', wrapped)
      return parent
    },
    off: (_event, listener) => {
      const wrapped = listeners.get(listener)
      if (wrapped !== undefined) port1.off('message', wrapped)
      listeners.delete(listener)
      return parent
    }
  }
  const received: unknown[] = []
  const fns: Array<(data: unknown) => void> = []
  port2.on('message', (data: unknown) => {
    received.push(data)
    for (const fn of fns) fn(data)
  })
  return {
    parent,
    main: {
      post: (data, ports = []) => { port2.postMessage({ data, ports }, ports) },
      received,
      onMessage: fn => { fns.push(fn) }
    },
    close: () => { port1.close(); port2.close() }
  }
}
