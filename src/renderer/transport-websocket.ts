// The browser transport: a WebSocket to `arbor serve` on the page's own origin.
import type { Transport } from '../shared/api/api-client'

/** The token from a page address fragment like `#token=HEX` (also `#a=1&token=HEX`). */
export function tokenFromHash (hash: string): string | undefined {
  const params = new URLSearchParams(hash.replace(/^#/, ''))
  const token = params.get('token')
  return token !== null && token !== '' ? token : undefined
}

/** The fragment without its token, to put back in the address bar ('' when nothing is left). */
export function hashWithoutToken (hash: string): string {
  const params = new URLSearchParams(hash.replace(/^#/, ''))
  params.delete('token')
  const rest = params.toString()
  return rest === '' ? '' : '#' + rest
}

/** The API's WebSocket address for a page at `pageUrl`: same host, `/api`, ws or wss to match. */
export function apiSocketUrl (pageUrl: string, token: string | undefined): string {
  const page = new URL(pageUrl)
  const url = new URL('/api', page)
  url.protocol = page.protocol === 'https:' ? 'wss:' : 'ws:'
  url.hash = ''
  url.search = ''
  if (token !== undefined) url.searchParams.set('token', token)
  return url.toString()
}

/** Opens a WebSocket; resolves once it is open, rejects if it closes first or takes too long. */
export function webSocketTransport (url: string, timeoutMs = 10_000): Promise<Transport> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url)
    const messageFns: Array<(text: string) => void> = []
    const closeFns: Array<(reason?: string) => void> = []
    let open = false
    let ended = false
    const timer = setTimeout(() => {
      if (open) return
      ended = true
      ws.close()
      reject(new Error('timed out connecting to the node'))
    }, timeoutMs)

    const transport: Transport = {
      send: text => ws.send(text),
      onMessage: fn => { messageFns.push(fn) },
      onClose: fn => { closeFns.push(fn) },
      close: () => ws.close(1000, 'closed by the client')
    }
    ws.onopen = () => {
      clearTimeout(timer)
      if (ended) return
      open = true
      resolve(transport)
    }
    ws.onmessage = ev => {
      if (typeof ev.data !== 'string') return
      for (const fn of messageFns) fn(ev.data)
    }
    ws.onclose = ev => {
      clearTimeout(timer)
      if (ended) return
      ended = true
      const reason = ev.reason !== '' ? ev.reason : `code ${ev.code}`
      if (!open) reject(new Error(`could not connect to the node (${reason})`))
      else for (const fn of closeFns) fn(reason)
    }
    // an error is always followed by close, which reports it
    ws.onerror = () => undefined
  })
}
