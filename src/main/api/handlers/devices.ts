// hello, devices.list/invite/join/forget, net.get/set: this device, the paired ones, the network.
import type { DeviceDto } from '../../../shared/api/api'
import { asApiError, type HandlerContext, type HandlersOf } from './handler-context'

type DeviceMethod = 'hello' | 'devices.list' | 'devices.invite' | 'devices.join' | 'devices.forget' | 'net.get' | 'net.set'

export function deviceHandlers (c: HandlerContext, version: string): HandlersOf<DeviceMethod> {
  const { node } = c
  return {
    hello: async () => ({ device: node.device, name: node.cluster.name, version }),
    'devices.list': async () => devices(c),
    'devices.invite': async () => node.invite({}),
    // the node's words on a bad code or a failed pairing are for the user, not a node fault to log
    'devices.join': async (p, ctx) => asApiError(node.join(p.code, ctx.signal ?? new AbortController().signal)),
    'devices.forget': async p => ({ text: await asApiError(node.forget(p.device)) }),
    'net.get': async () => c.netState(),
    'net.set': async p => { await node.setOnline(p.on); return c.netState() }
  }
}

async function devices (c: HandlerContext): Promise<DeviceDto[]> {
  const titles = new Map(c.node.history.list().map(s => [s.id, s.title]))
  c.presenceChanged()
  return (await c.node.devices()).map(d => ({
    ...d,
    agents: c.locations.on(d.device).map(conversation => ({ conversation, title: titles.get(conversation) ?? '' }))
  }))
}
