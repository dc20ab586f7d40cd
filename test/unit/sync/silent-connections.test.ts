// How long a new connection may stay silent before it is dropped (src/main/sync/peers/silent-connections.ts):
// short where the link is shown fast, and never so short, over and over, that a live slow link cannot open.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { QUICK_DROPS_MAX, QUICK_MIN_MS, SILENT_FLOOR_MS, SilenceDeadlines } from '../../../src/main/sync/peers/silent-connections'

const CAP = 3000
const dev = 'd'

describe('SilenceDeadlines', () => {
  it('waits the floor, doubles after each silent drop up to the cap, and follows how long the last connection took to open', () => {
    const d = new SilenceDeadlines(SILENT_FLOOR_MS, CAP)
    expect(d.wait(dev)).toBe(500)
    d.dropped(dev, false)
    expect(d.wait(dev)).toBe(1000)
    d.dropped(dev, false)
    d.dropped(dev, false)
    expect(d.wait(dev)).toBe(CAP)
    d.opened(dev, 40)
    expect(d.wait(dev)).toBe(500)
    d.opened(dev, 900)
    expect(d.wait(dev)).toBe(1800)
    expect(d.wait('other')).toBe(500)
  })

  it('a quick wait needs a ping, scales with it, and stops after QUICK_DROPS_MAX quick drops in a row until a connection opens', () => {
    const d = new SilenceDeadlines(SILENT_FLOOR_MS, CAP)
    expect(d.quickWait(dev, 2)).toBe(QUICK_MIN_MS)
    expect(d.quickWait(dev, 100)).toBe(400)
    // no shorter than the ordinary wait: then it is no quick check
    expect(d.quickWait(dev, 200)).toBeNull()
    for (let i = 0; i < QUICK_DROPS_MAX; i++) d.dropped(dev, true)
    expect(d.quickWait(dev, 2)).toBeNull()
    expect(d.wait(dev)).toBe(500) // quick drops do not lengthen the ordinary wait
    d.opened(dev, 30)
    expect(d.quickWait(dev, 2)).toBe(QUICK_MIN_MS)
  })

  /**
   * A device's successive connections over a live link whose first bytes take `firstByteMs`:
   * each is dropped when a wait (quick, if the ping answered, or ordinary) ends before them.
   * Returns the drops before one opened, or null if none opened in 50 tries.
   */
  function connectUntilOpen (d: SilenceDeadlines, firstByteMs: number, pingMs: number | null): number | null {
    for (let drops = 0; drops < 50; drops++) {
      const quick = pingMs === null ? null : d.quickWait(dev, pingMs)
      if (quick !== null && quick < firstByteMs) { d.dropped(dev, true); continue }
      if (d.wait(dev) < firstByteMs) { d.dropped(dev, false); continue }
      d.opened(dev, firstByteMs)
      return drops
    }
    return null
  }
  const doublings = (ms: number): number => Math.max(0, Math.ceil(Math.log2(ms / SILENT_FLOOR_MS)))

  it('a live link slower than every wait opens after a bounded number of drops, and its next connection is not dropped', () => {
    fc.assert(fc.property(
      fc.integer({ min: 1, max: CAP }),
      fc.oneof(fc.constant<'none'>('none'), fc.constant<'honest'>('honest'), fc.integer({ min: 1, max: 50 })),
      (firstByteMs, ping) => {
        const d = new SilenceDeadlines(SILENT_FLOOR_MS, CAP)
        // 'none': behind a NAT the ping goes unanswered; 'honest': it takes what the stream's
        // first bytes take; a number: it answers faster than the stream (a relay, a busy peer)
        const pingMs = ping === 'none' ? null : ping === 'honest' ? firstByteMs : ping
        const drops = connectUntilOpen(d, firstByteMs, pingMs)
        expect(drops).not.toBeNull()
        expect(drops as number).toBeLessThanOrEqual(doublings(firstByteMs) + (typeof ping === 'number' ? QUICK_DROPS_MAX : 0))
        // an honest ping never drops a live link early
        if (ping === 'honest') expect(drops).toBe(doublings(firstByteMs))
        // the same link again: it opens at once
        expect(connectUntilOpen(d, firstByteMs, pingMs)).toBe(0)
      }
    ))
  })
})
