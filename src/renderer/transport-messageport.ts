// The desktop transport: the API over a MessagePort to the node, which main sends through
// the preload as a window message — a new one after every page load and node restart.
import { API_PORT, NODE_DOWN, type BridgeMessage } from '../shared/api/desktop-bridge'
import type { Transport } from '../shared/api/api-client'

/** Where the preload's messages arrive: the window. */
export interface BridgeWindow {
  addEventListener (type: 'message', listener: (e: MessageEvent) => void): void
  removeEventListener (type: 'message', listener: (e: MessageEvent) => void): void
}

interface PortTransport extends Transport {
  /** ends it (once): the port is closed and onClose hears `reason` */
  end (reason: string): void
}

/** A Transport over one port: JSON text frames, as over the WebSocket. */
export function portTransport (port: MessagePort): PortTransport {
  const messageFns: Array<(text: string) => void> = []
  const closeFns: Array<(reason?: string) => void> = []
  let ended: string | null = null
  const end = (reason: string): void => {
    if (ended !== null) return
    ended = reason
    port.onmessage = null
    port.close()
    for (const fn of closeFns.splice(0)) fn(reason)
  }
  port.onmessage = ev => {
    if (typeof ev.data !== 'string') return
    for (const fn of messageFns) fn(ev.data)
  }
  // Where the browser reports a closed peer (newer Chromium does); the node-down message covers the rest.
  port.addEventListener('close', () => { end('the node closed the connection') })
  return {
    send: text => {
      if (ended !== null) throw new Error(`the connection to the node is closed (${ended})`)
      port.postMessage(text)
    },
    onMessage: fn => { messageFns.push(fn) },
    onClose: fn => {
      if (ended !== null) fn(ended)
      else closeFns.push(fn)
    },
    close: () => { end('closed by the client') },
    end
  }
}

/**
 * Hands ApiClient one transport at a time: connect() resolves with the next port to come
 * (or one that came while nobody waited). A new port ends the transport before it (the node
 * restarted, or main reconnected the page); a node-down message ends it with main's reason,
 * so the UI says why it is reconnecting.
 */
export class MessagePortConnector {
  private current: PortTransport | null = null
  private spare: MessagePort | null = null
  private waiter: ((t: Transport) => void) | null = null
  private readonly listener = (e: MessageEvent): void => { this.receive(e) }

  constructor (private readonly win: BridgeWindow) {
    win.addEventListener('message', this.listener)
  }

  readonly connect = (): Promise<Transport> => {
    const port = this.spare
    if (port !== null) {
      this.spare = null
      return Promise.resolve(this.open(port))
    }
    return new Promise(resolve => { this.waiter = resolve })
  }

  close (): void {
    this.win.removeEventListener('message', this.listener)
    this.current?.end('closed by the client')
    this.current = null
    this.spare?.close()
    this.spare = null
  }

  private receive (e: MessageEvent): void {
    // Only what the preload posts to this very window.
    if ((e.source as unknown) !== this.win) return
    const msg = e.data as BridgeMessage | null
    if (msg?.type === API_PORT) {
      const port = e.ports[0]
      if (port === undefined) return
      this.current?.end('the node restarted')
      this.current = null
      const waiter = this.waiter
      this.waiter = null
      if (waiter !== null) waiter(this.open(port))
      else {
        this.spare?.close()
        this.spare = port
      }
    } else if (msg?.type === NODE_DOWN) {
      this.spare?.close()
      this.spare = null
      this.current?.end(typeof msg.reason === 'string' && msg.reason !== '' ? msg.reason : 'the node stopped')
      this.current = null
    }
  }

  private open (port: MessagePort): PortTransport {
    const t = portTransport(port)
    this.current = t
    return t
  }
}
