// Connections on which the peer never said anything: HyperDHT can hand one side a connection
// whose other end was never made (docs/ARCHITECTURE.md, "Sync"). Pure logic; SyncNode acts on it.
import type NoiseSecretStream from '@hyperswarm/secret-stream'

/** How long a new connection first waits for its peer's first bytes (a loopback or LAN peer answers in a few ms). */
export const SILENT_FLOOR_MS = 500

/**
 * How long a new connection to each device may stay silent — not one byte from the peer,
 * at the transport or above — before it is taken for one whose far end does not exist and
 * is dropped (and dialled again at once). A live peer answers within one round trip: its
 * end sends the secret-stream header and the Protomux opens as soon as it exists. A link
 * slower than the wait loses one connection, and the next waits twice as long, up to the
 * cap (the open timeout, which drops any connection whose arbor channel is not open by
 * then anyway): a slow link is never dropped over and over, it costs a redial per doubling.
 */
export class SilenceDeadlines {
  private readonly waits = new Map<string, number>()

  constructor (private readonly floorMs: number, private readonly capMs: number) {}

  /** how long a new connection to the device waits for its first bytes */
  wait (device: string): number { return Math.min(this.capMs, this.waits.get(device) ?? this.floorMs) }

  /** a connection to it stayed silent for its whole wait and was dropped */
  dropped (device: string): void { this.waits.set(device, Math.min(this.capMs, this.wait(device) * 2)) }

  /** it was heard within the wait: the link is as fast as the wait assumed */
  heard (device: string): void { this.waits.delete(device) }
}

/** Whether anything at all has arrived from the peer on this connection (bytes of the transport, or a message). */
export function heardFrom (stream: NoiseSecretStream): boolean {
  // UDX counts every byte received, the peer's secret-stream header included; other transports (tests' pipes) have only the messages.
  const { rawBytesRead, rawStream } = stream as unknown as { rawBytesRead: number; rawStream: { bytesReceived?: unknown } | null }
  return rawBytesRead > 0 || (typeof rawStream?.bytesReceived === 'number' && rawStream.bytesReceived > 0)
}
