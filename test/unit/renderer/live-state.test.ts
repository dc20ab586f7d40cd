// What the UI says about the network, and tool cards ahead of their recorded results.
import { describe, expect, it } from 'vitest'
import { dhtText, netLine, netText } from '../../../src/renderer/devices/net-state'
import { withLiveStatus, type ToolCallView } from '../../../src/renderer/transcript/transcript-items'

describe('the network indicator', () => {
  it('says offline when the switch is off, else how many paired devices are connected', () => {
    expect(netText({ online: false, peers: 0, paired: 2, bootstrap: [] })).toBe('Offline: network off')
    expect(netText({ online: true, peers: 0, paired: 0, bootstrap: [] })).toBe('Online · no other devices')
    expect(netText({ online: true, peers: 1, paired: 1, bootstrap: [] })).toBe('Online · 1 of 1 device connected')
    expect(netText({ online: true, peers: 1, paired: 3, bootstrap: [] })).toBe('Online · 1 of 3 devices connected')
    expect(dhtText({ online: true, peers: 0, paired: 0, bootstrap: [] })).toBe('the public HyperDHT')
    expect(netLine({ online: true, peers: 0, paired: 0, bootstrap: [] })).toMatch(/No other device is paired yet/)
    expect(netLine({ online: true, peers: 2, paired: 2, bootstrap: ['127.0.0.1:9'] })).toBe('Online: 2 of 2 paired devices connected, meeting on a private DHT (127.0.0.1:9).')
    expect(netLine({ online: false, peers: 0, paired: 2, bootstrap: [] })).toMatch(/^Offline/)
    expect(dhtText({ online: true, peers: 0, paired: 0, bootstrap: ['127.0.0.1:49737', '[::1]:4000'] })).toBe('a private DHT (127.0.0.1:49737, [::1]:4000)')
  })
})

describe('tool cards with live status', () => {
  const card = (status: ToolCallView['status']): ToolCallView => ({ callId: 'c1', name: 'bash', args: { command: 'ls' }, status })

  it('moves a pending or running card on as the agent reports, never a finished one', () => {
    const live = new Map([['c1', 'ok' as const]])
    expect(withLiveStatus(card('running'), live).status).toBe('ok')
    expect(withLiveStatus(card('pending'), new Map([['c1', 'running' as const]])).status).toBe('running')
    // the recorded result wins; an interrupted call (no agent) stays so
    expect(withLiveStatus(card('error'), live).status).toBe('error')
    expect(withLiveStatus(card('interrupted'), live).status).toBe('interrupted')
    const same = card('running')
    expect(withLiveStatus(same, new Map())).toBe(same)
  })
})
