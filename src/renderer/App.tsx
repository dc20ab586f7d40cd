import type { JSX } from 'react'
import type { ArborBridge } from '../preload/index'

declare global {
  interface Window {
    /** Present in the desktop app (preload); absent in a browser talking to `arbor serve`. */
    readonly arbor?: ArborBridge
  }
}

export function App(): JSX.Element {
  const version = window.arbor?.version
  return (
    <main className="shell">
      <h1>Arbor</h1>
      <p>
        The chat, conversation tree and devices views are coming. Meanwhile the <code>arbor</code>{' '}
        command line works, and <code>npm run serve</code> runs the headless node with this web UI.
      </p>
      {version ? <p className="meta">Desktop app, version {version}</p> : null}
    </main>
  )
}
