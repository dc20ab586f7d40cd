// This node's network as the UI shows it: read on every (re)connection, then kept from the
// node's `net` events, so the switch and the offline indicator say what is, not what was asked.
import { useEffect, useState } from 'react'
import type { NetStateDto } from '../../shared/api/api'
import type { ApiClient, ConnectionStatus } from '../../shared/api/api-client'

export function useNetState (client: ApiClient, status: ConnectionStatus): NetStateDto | undefined {
  const [net, setNet] = useState<NetStateDto | undefined>()
  useEffect(() => client.onEvent(ev => { if (ev.type === 'net') setNet(ev.state) }), [client])
  useEffect(() => {
    if (status.state !== 'open') return
    let live = true
    client.call('net.get', {}).then(s => { if (live) setNet(s) }, () => undefined)
    return () => { live = false }
  }, [client, status.state, status.opened])
  return net
}

/** A few words for the always-visible indicator. */
export function netText (net: NetStateDto): string {
  if (!net.online) return 'Offline: network off'
  if (net.paired === 0) return 'Online · no other devices'
  return `Online · ${net.peers} of ${net.paired} device${net.paired === 1 ? '' : 's'} connected`
}

/** The Devices screen's line about the network. */
export function netLine (net: NetStateDto): string {
  if (!net.online) return 'Offline: this device neither syncs nor pairs until the network is on again; it keeps working on what it holds.'
  if (net.paired === 0) return `Online, meeting on ${dhtText(net)}. No other device is paired yet: invite one.`
  return `Online: ${net.peers} of ${net.paired} paired device${net.paired === 1 ? '' : 's'} connected, meeting on ${dhtText(net)}.`
}

/** Which DHT the node meets its devices on. */
export function dhtText (net: NetStateDto): string {
  return net.bootstrap.length === 0 ? 'the public HyperDHT' : `a private DHT (${net.bootstrap.join(', ')})`
}
