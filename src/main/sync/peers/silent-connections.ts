// Connections on which the peer never said anything: HyperDHT can hand one side a connection
// whose other end was never made (docs/ARCHITECTURE.md, "Sync"). Pure logic; SyncNode acts on it.
import type NoiseSecretStream from '@hyperswarm/secret-stream'

/** How long a new connection first waits for its peer's first bytes when nothing shows the link is fast. */
export const SILENT_FLOOR_MS = 500
/** The least wait of a quick check: scheduling on this device and the peer's, on a busy machine. */
export const QUICK_MIN_MS = 150
/** A quick check waits this many of the peer's measured round trips. */
export const QUICK_ROUND_TRIPS = 4
/** Quick drops in a row for one device, after which only the ordinary wait applies. */
export const QUICK_DROPS_MAX = 5

/**
 * How long a new connection to each device may stay silent — not one byte from the peer,
 * at the transport or above — before it is taken for one whose far end does not exist.
 *
 * A live peer's end sends its secret-stream header and its Protomux opens as soon as our
 * first packet reaches it, so its first bytes come within a round trip. Two waits:
 * - ordinary: SILENT_FLOOR_MS, or twice what the device's last connection took to open;
 *   each silent drop doubles it, up to the cap (the open timeout, which drops any
 *   connection whose arbor channel is not open by then anyway). A link slower than the
 *   wait loses one connection and the next one waits twice as long: it is never dropped
 *   over and over while its first bytes are on their way.
 * - quick: when the peer's address answered a ping in `pingMs`, the link is shown to be that
 *   fast, and the peer's end, if it existed, would have answered as fast (same process,
 *   same path): QUICK_ROUND_TRIPS round trips, at least QUICK_MIN_MS, and at least what the
 *   device's last connection took to open (a ping that answers faster than the stream, e.g.
 *   a relay's, costs drops once, not at every reconnect). A quick drop does not lengthen the
 *   ordinary wait; after QUICK_DROPS_MAX of them in a row only the ordinary wait applies
 *   until a connection to the device opens.
 */
export class SilenceDeadlines {
  private readonly waits = new Map<string, number>()
  private readonly quickDrops = new Map<string, number>()
  private readonly openedIn = new Map<string, number>()

  constructor (private readonly floorMs: number, private readonly capMs: number) {}

  /** how long a new connection to the device waits for its first bytes (ordinary wait) */
  wait (device: string): number { return Math.min(this.capMs, this.waits.get(device) ?? this.floorMs) }

  /** the quick wait for a connection whose peer answered a ping in pingMs, or null if none applies */
  quickWait (device: string, pingMs: number): number | null {
    if ((this.quickDrops.get(device) ?? 0) >= QUICK_DROPS_MAX) return null
    const ms = Math.max(QUICK_MIN_MS, QUICK_ROUND_TRIPS * pingMs, this.openedIn.get(device) ?? 0)
    return ms < this.wait(device) ? ms : null
  }

  /** a connection to it stayed silent for its whole wait (the quick one, or the ordinary one) and was dropped */
  dropped (device: string, quick: boolean): void {
    if (quick) this.quickDrops.set(device, (this.quickDrops.get(device) ?? 0) + 1)
    else this.waits.set(device, Math.min(this.capMs, this.wait(device) * 2))
  }

  /** its arbor channel opened `openedMs` after the connection came: later connections wait twice that (at least the floor) */
  opened (device: string, openedMs: number): void {
    this.quickDrops.delete(device)
    this.openedIn.set(device, openedMs)
    const ms = Math.min(this.capMs, Math.max(this.floorMs, 2 * openedMs))
    if (ms === this.floorMs) this.waits.delete(device)
    else this.waits.set(device, ms)
  }
}

/** Whether anything at all has arrived from the peer on this connection (bytes of the transport, or a message). */
export function heardFrom (stream: NoiseSecretStream): boolean {
  // UDX counts every byte received, the peer's secret-stream header included; other transports (tests' pipes) have only the messages.
  const { rawBytesRead, rawStream } = stream as unknown as { rawBytesRead: number; rawStream: { bytesReceived?: unknown } | null }
  return rawBytesRead > 0 || (typeof rawStream?.bytesReceived === 'number' && rawStream.bytesReceived > 0)
}

/** Where the connection's packets go (a UDX stream's remote address), or null on other transports. */
export function peerAddress (stream: NoiseSecretStream): { host: string; port: number } | null {
  const raw = stream.rawStream as unknown as { remoteHost?: unknown; remotePort?: unknown } | null
  return typeof raw?.remoteHost === 'string' && typeof raw.remotePort === 'number' && raw.remotePort > 0 ? { host: raw.remoteHost, port: raw.remotePort } : null
}
