import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './app/App'
import { ApiClient } from '../shared/api/api-client'
import { ApiContext } from './api-context'
import { MessagePortConnector } from './transport-messageport'
import { apiSocketUrl, hashWithoutToken, tokenFromHash, webSocketTransport } from './transport-websocket'
import './styles.css'

const container = document.getElementById('root')
if (!container) throw new Error('Arbor: #root element missing from index.html')

// `arbor serve` opens the page at /#token=HEX. Keep the token for this tab (reloads work)
// and take it out of the address bar, where it would be seen, shared and bookmarked.
const TOKEN_KEY = 'arbor.token'
const fromHash = tokenFromHash(window.location.hash)
if (fromHash !== undefined) {
  sessionStorage.setItem(TOKEN_KEY, fromHash)
  history.replaceState(null, '', window.location.pathname + window.location.search + hashWithoutToken(window.location.hash))
}
const token = fromHash ?? sessionStorage.getItem(TOKEN_KEY) ?? undefined

// In the desktop app (the preload put window.arbor there) main sends the node's API ports;
// in a browser the page speaks to `arbor serve` over a WebSocket on its own origin.
const desktop = window.arbor !== undefined
const connect = desktop ? new MessagePortConnector(window).connect : () => webSocketTransport(apiSocketUrl(window.location.href, token))
const client = new ApiClient({ connect }).start()
window.addEventListener('online', () => client.retryNow())

createRoot(container).render(
  <StrictMode>
    <ApiContext.Provider value={client}>
      <App hasToken={desktop || token !== undefined} />
    </ApiContext.Provider>
  </StrictMode>
)
