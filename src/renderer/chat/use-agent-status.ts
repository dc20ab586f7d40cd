// Where the open conversation's agent runs, kept current: agent.status is asked again (once
// per burst) whenever an event may have moved it — a lifecycle entry, the agent starting or
// ending, a device coming or going, the network switch.
import { useCallback, useEffect, useRef, useState } from 'react'
import type { AgentStatusDto } from '../../shared/api/api'
import type { ApiClient } from '../../shared/api/api-client'
import { errorText } from '../api-context'
import { affectsPlacement } from './agent-place'

/** Events come in bursts (a turn's entries, a reconnect): ask once they settle. */
const SETTLE_MS = 150
/** A device not heard from since the node started is taken for down only after the detection window: look again meanwhile. */
const AWAY_POLL_MS = 3000

export interface AgentStatusState {
  status: AgentStatusDto | undefined
  error: string | undefined
  /** asks the node again */
  refresh: () => void
  /** takes a status the node just answered with (agent.autoRevival), over any older answer on its way */
  accept: (s: AgentStatusDto) => void
}

export function useAgentStatus (client: ApiClient, conversation: string, connected: boolean): AgentStatusState {
  const [status, setStatus] = useState<AgentStatusDto | undefined>()
  const [error, setError] = useState<string | undefined>()
  // only the newest question's answer counts
  const seq = useRef(0)

  const refresh = useCallback(() => {
    const mine = ++seq.current
    client.call('agent.status', { conversation }).then(
      s => { if (seq.current === mine) { setStatus(s); setError(undefined) } },
      err => { if (seq.current === mine) setError(errorText(err)) }
    )
  }, [client, conversation])

  const accept = useCallback((s: AgentStatusDto) => {
    seq.current++
    setStatus(s)
    setError(undefined)
  }, [])

  useEffect(() => { if (connected) refresh() }, [connected, refresh])

  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const off = client.onEvent(ev => {
      if (timer !== undefined || !affectsPlacement(ev, conversation)) return
      timer = setTimeout(() => { timer = undefined; refresh() }, SETTLE_MS)
    })
    return () => { off(); clearTimeout(timer) }
  }, [client, conversation, refresh])

  const away = status?.owner != null && !status.owner.self && !status.ownerDown && !status.ownerConnected
  useEffect(() => {
    if (!away || !connected) return
    const t = setInterval(refresh, AWAY_POLL_MS)
    return () => clearInterval(t)
  }, [away, connected, refresh])

  return { status, error, refresh, accept }
}
