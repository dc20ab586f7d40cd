import { useEffect, useState, type JSX } from 'react'
import type { ConnectionStatus } from '../../shared/api/api-client'

/** Says when the node is out of reach, and when the next attempt is. */
export function ConnectionBanner ({ status, hasToken, onRetry }: { status: ConnectionStatus; hasToken: boolean; onRetry: () => void }): JSX.Element | null {
  const [now, setNow] = useState(() => Date.now())
  const waiting = status.state === 'reconnecting'
  useEffect(() => {
    if (!waiting) return
    const t = setInterval(() => setNow(Date.now()), 500)
    return () => clearInterval(t)
  }, [waiting])

  if (status.state === 'open') return null
  let text: string
  if (status.state === 'closed') text = 'Disconnected from the node.'
  else if (status.state === 'connecting') text = 'Connecting to the node…'
  else {
    const secs = status.retryAt !== undefined ? Math.max(0, Math.ceil((status.retryAt - now) / 1000)) : 0
    const lead = status.opened > 0 ? 'Reconnecting…' : 'Cannot reach the node.'
    text = `${lead} ${secs > 0 ? `Next attempt in ${secs} s` : 'Trying now'} (attempt ${status.attempts + 1}).`
  }
  return (
    <div className={`banner banner-${status.state}`} role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      <span>{text}</span>
      {status.state === 'reconnecting' && status.error !== undefined ? <span className="banner-detail">{status.error}</span> : null}
      {!hasToken && status.opened === 0
        ? <span className="banner-detail">This page has no access token: open the address <code>arbor serve</code> printed (it ends in <code>#token=…</code>).</span>
        : null}
      {status.state === 'reconnecting' ? <button type="button" onClick={onRetry}>Retry now</button> : null}
    </div>
  )
}
