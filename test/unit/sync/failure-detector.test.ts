import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { FailureDetector } from '../../../src/main/sync/peers/failure-detector'

const A = 'a'.repeat(64)
const B = 'b'.repeat(64)

describe('FailureDetector', () => {
  it('suspects a device once it has been silent for suspectAfterMs, not before', () => {
    const d = new FailureDetector(500)
    expect(d.heard(A, 1000)).toBe(false)
    expect(d.check(1499)).toEqual([])
    expect(d.isSuspected(A)).toBe(false)
    expect(d.check(1500)).toEqual([A])
    expect(d.isSuspected(A)).toBe(true)
    expect(d.suspectedSince(A)).toBe(1500)
    expect(d.lastHeard(A)).toBe(1000)
  })

  it('any message resets the silence', () => {
    const d = new FailureDetector(500)
    d.heard(A, 0)
    d.heard(A, 400)
    expect(d.check(899)).toEqual([])
    expect(d.check(900)).toEqual([A])
  })

  it('suspects at once when the connection is lost, even if just heard', () => {
    const d = new FailureDetector(500)
    d.heard(A, 0)
    expect(d.lost(A, 10)).toBe(true)
    expect(d.isSuspected(A)).toBe(true)
    expect(d.suspectedSince(A)).toBe(10)
    // the silence check does not report it a second time
    expect(d.check(10_000)).toEqual([])
    expect(d.lost(A, 10_001)).toBe(false)
    expect(d.suspectedSince(A)).toBe(10)
  })

  it('a device lost before it was ever heard is suspected', () => {
    const d = new FailureDetector(500)
    expect(d.lost(A, 0)).toBe(true)
    expect(d.isSuspected(A)).toBe(true)
    expect(d.lastHeard(A)).toBeUndefined()
  })

  it('recovers a suspected device when it is heard again, and can suspect it again later', () => {
    const d = new FailureDetector(500)
    d.heard(A, 0)
    expect(d.check(600)).toEqual([A])
    expect(d.heard(A, 700)).toBe(true)
    expect(d.isSuspected(A)).toBe(false)
    expect(d.suspectedSince(A)).toBeUndefined()
    expect(d.heard(A, 710)).toBe(false)
    expect(d.check(1100)).toEqual([])
    expect(d.check(1210)).toEqual([A])
    expect(d.lost(A, 1250)).toBe(false)
    expect(d.heard(A, 1300)).toBe(true)
  })

  it('reports each device on its own, and never twice in a row', () => {
    const d = new FailureDetector(100)
    d.heard(A, 0)
    d.heard(B, 50)
    expect(d.check(100)).toEqual([A])
    expect(d.check(120)).toEqual([])
    expect(d.check(150)).toEqual([B])
    expect(d.check(10_000)).toEqual([])
  })

  it('nextDeadline is when the earliest device not yet suspected will be, if it stays silent', () => {
    const d = new FailureDetector(500)
    expect(d.nextDeadline()).toBeUndefined()
    d.heard(A, 100)
    d.heard(B, 300)
    expect(d.nextDeadline()).toBe(600)
    d.heard(A, 400)
    expect(d.nextDeadline()).toBe(800)
    expect(d.check(800)).toEqual([B])
    expect(d.nextDeadline()).toBe(900)
    d.lost(A, 850)
    expect(d.nextDeadline()).toBeUndefined()
  })

  it('forget drops everything known about a device', () => {
    const d = new FailureDetector(100)
    d.heard(A, 0)
    d.lost(A, 0)
    d.forget(A)
    expect(d.isSuspected(A)).toBe(false)
    expect(d.lastHeard(A)).toBeUndefined()
    expect(d.check(10_000)).toEqual([])
    expect(d.heard(A, 10_001)).toBe(false)
  })

  // ---------------------------------------------------------------- against a model

  type Op =
    | { op: 'heard'; device: number; dt: number }
    | { op: 'lost'; device: number; dt: number }
    | { op: 'check'; dt: number }
    | { op: 'forget'; device: number; dt: number }

  const DEVICES = ['a', 'b', 'c'].map(c => c.repeat(64))
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    { weight: 4, arbitrary: fc.record({ op: fc.constant('heard' as const), device: fc.nat({ max: 2 }), dt: fc.nat({ max: 300 }) }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('lost' as const), device: fc.nat({ max: 2 }), dt: fc.nat({ max: 300 }) }) },
    { weight: 4, arbitrary: fc.record({ op: fc.constant('check' as const), dt: fc.nat({ max: 300 }) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('forget' as const), device: fc.nat({ max: 2 }), dt: fc.nat({ max: 300 }) }) }
  )

  it('matches a model: suspected iff lost or silent too long since last heard; events alternate per device', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 500 }), fc.array(opArb, { maxLength: 60 }), (after, ops) => {
      const d = new FailureDetector(after)
      // The model: when each device was last heard, and whether it is suspected.
      const last = new Map<string, number>()
      const suspected = new Set<string>()
      // The event stream a node would emit from the detector's answers, per device.
      const events = new Map<string, Array<'suspected' | 'recovered'>>()
      const emit = (dev: string, ev: 'suspected' | 'recovered'): void => {
        const list = events.get(dev) ?? []
        // never two suspicions (or two recoveries) of a device in a row
        expect(list[list.length - 1]).not.toBe(ev)
        // a recovery only after a suspicion
        if (ev === 'recovered') expect(list[list.length - 1]).toBe('suspected')
        list.push(ev)
        events.set(dev, list)
      }
      let now = 0
      for (const o of ops) {
        now += o.dt
        if (o.op === 'heard') {
          const dev = DEVICES[o.device] as string
          const was = suspected.has(dev)
          last.set(dev, now)
          suspected.delete(dev)
          const got = d.heard(dev, now)
          expect(got).toBe(was)
          if (got) emit(dev, 'recovered')
        } else if (o.op === 'lost') {
          const dev = DEVICES[o.device] as string
          const fresh = !suspected.has(dev)
          suspected.add(dev)
          const got = d.lost(dev, now)
          expect(got).toBe(fresh)
          if (got) emit(dev, 'suspected')
        } else if (o.op === 'forget') {
          const dev = DEVICES[o.device] as string
          last.delete(dev)
          suspected.delete(dev)
          events.delete(dev)
          d.forget(dev)
        } else {
          const want = [...last].filter(([dev, at]) => !suspected.has(dev) && now - at >= after).map(([dev]) => dev).sort()
          for (const dev of want) suspected.add(dev)
          const got = d.check(now)
          expect([...got].sort()).toEqual(want)
          for (const dev of got) emit(dev, 'suspected')
        }
        for (const dev of DEVICES) {
          expect(d.isSuspected(dev)).toBe(suspected.has(dev))
          expect(d.suspectedSince(dev) !== undefined).toBe(suspected.has(dev))
          expect(d.lastHeard(dev)).toBe(last.get(dev))
        }
      }
      // Silence long enough always ends in suspicion of every device ever heard.
      now += after
      for (const dev of d.check(now)) emit(dev, 'suspected')
      for (const dev of last.keys()) expect(d.isSuspected(dev)).toBe(true)
    }), { numRuns: process.env.ARBOR_LONG === '1' ? 2000 : 300 })
  })

  it('a device heard at least every suspectAfterMs - 1 is never suspected', () => {
    fc.assert(fc.property(fc.integer({ min: 2, max: 1000 }), fc.array(fc.nat(), { maxLength: 50 }), (after, gaps) => {
      const d = new FailureDetector(after)
      let now = 0
      d.heard(A, now)
      for (const g of gaps) {
        now += g % after // < after
        expect(d.check(now)).toEqual([])
        expect(d.heard(A, now)).toBe(false)
      }
      expect(d.isSuspected(A)).toBe(false)
    }))
  })
})
