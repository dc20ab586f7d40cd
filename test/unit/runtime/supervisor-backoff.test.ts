import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { ManualClock } from '../../../src/shared/clock'
import { Supervisor, supervisorSpec } from '../../../src/main/runtime/supervisor/supervisor'
import { restartDelay, RestartWindow } from '../../../src/main/runtime/supervisor/restart-policy'
import type { SupervisorEvent } from '../../../src/main/runtime/supervisor/types'
import { ChildLab } from '../../helpers/controlled-child'

describe('backoff between restarts (Pekko BackoffSupervisor)', () => {
  it('waits min·2^n (capped, then jittered) before each restart and resets after a long run', async () => {
    const clock = new ManualClock()
    const lab = new ChildLab(clock)
    const sup = new Supervisor('s', { intensity: 100, periodMs: 60_000, backoff: { minMs: 100, maxMs: 1000, randomFactor: 0.5, resetAfterMs: 5000 } }, [lab.spec('w')], { clock, random: () => 0.5 })
    const events: SupervisorEvent[] = []
    sup.on('event', (e: SupervisorEvent) => events.push(e))
    await sup.ready()
    const delays: number[] = []
    for (let i = 0; i < 6; i++) {
      lab.current('w')?.crash()
      await clock.advance(0)
      const ev = events.filter(e => e.type === 'restarting').at(-1) as { delayMs: number }
      delays.push(ev.delayMs)
      expect(lab.running('w')).toBe(false)
      expect(sup.tree().children[0]?.state).toBe('restarting')
      await clock.advance(ev.delayMs - 1)
      expect(lab.running('w')).toBe(false) // not a millisecond early
      await clock.advance(1)
      expect(lab.running('w')).toBe(true)
    }
    expect(delays).toEqual([125, 250, 500, 1000, 1250, 1250]) // ×1.25 jitter; capped at 1000 before jitter
    await clock.advance(5000) // ran long enough: the next failure starts over
    lab.current('w')?.crash()
    await clock.advance(0)
    expect((events.filter(e => e.type === 'restarting').at(-1) as { delayMs: number }).delayMs).toBe(125)
    await clock.advance(125)
    await sup.close()
    expect(lab.runningIds()).toEqual([])
  })

  it('a supervisor stopped during a backoff does not restart the child later', async () => {
    const clock = new ManualClock()
    const lab = new ChildLab(clock)
    const sup = new Supervisor('s', { intensity: 5, backoff: { minMs: 1000, maxMs: 1000, randomFactor: 0 } }, [lab.spec('w')], { clock })
    await sup.ready()
    lab.current('w')?.crash()
    await clock.advance(10)
    await sup.close()
    await clock.advance(5000)
    expect(lab.starts('w')).toBe(1)
    expect(clock.pending).toBe(0)
  })

  it('delays stay within [base, base·(1+randomFactor)] and never below min', () => {
    fc.assert(fc.property(
      fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1, max: 100_000 }), fc.double({ min: 0, max: 1, noNaN: true }),
      fc.nat(40), fc.double({ min: 0, max: 0.9999, noNaN: true }),
      (minMs, extra, randomFactor, attempt, random) => {
        const maxMs = minMs + extra
        const d = restartDelay({ minMs, maxMs, randomFactor }, attempt, random)
        const base = Math.min(maxMs, minMs * 2 ** attempt)
        expect(d).toBeGreaterThanOrEqual(Math.floor(base))
        expect(d).toBeLessThanOrEqual(Math.ceil(base * (1 + randomFactor)))
        expect(d).toBeGreaterThanOrEqual(minMs)
      }))
  })
})

describe('restart intensity window', () => {
  it('allows exactly `intensity` restarts within any window of `period` (fast-check)', () => {
    fc.assert(fc.property(fc.nat(5), fc.integer({ min: 1, max: 10_000 }), fc.array(fc.nat(3000), { maxLength: 30 }), (intensity, periodMs, gaps) => {
      const w = new RestartWindow(intensity, periodMs)
      const stamps: number[] = []
      let t = 0
      for (const gap of gaps) {
        t += gap
        stamps.push(t)
        const inWindow = stamps.filter(s => t - s <= periodMs).length
        expect(w.add(t)).toBe(inWindow <= intensity)
      }
    }))
  })
})

describe('the live tree', () => {
  it('shows nested supervisors, states, restart counts and last exits', async () => {
    const clock = new ManualClock()
    const lab = new ChildLab(clock)
    const root = new Supervisor('root', { strategy: 'one_for_one', intensity: 5 }, [
      lab.spec('history'),
      supervisorSpec('agents', { strategy: 'one_for_one', intensity: 5 }, [lab.spec('agent-1'), lab.spec('agent-2', { restart: 'temporary' })], { clock })
    ], { clock })
    await root.ready()
    lab.current('agent-1')?.crash(new Error('model timed out'))
    await clock.advance(0)
    lab.current('agent-2')?.exitNormally()
    await clock.advance(0)
    const tree = root.tree()
    expect(tree).toMatchObject({
      id: 'root',
      state: 'running',
      children: [
        { id: 'history', type: 'worker', state: 'running', restarts: 0 },
        { id: 'agents', type: 'supervisor', state: 'running', tree: { id: 'agents', children: [{ id: 'agent-1', state: 'running', restarts: 1, lastExit: 'error: model timed out' }] } }
      ]
    })
    await root.close()
    expect(root.tree().state).toBe('stopped')
    expect(lab.log.filter(e => e.ev === 'stop').map(e => e.id)).toEqual(['agent-1', 'agent-2', 'agent-1', 'history'])
  })
})

describe('auto_shutdown (OTP significant children)', () => {
  it('ends the supervisor when a significant child ends by itself, not when it is restarted', async () => {
    const clock = new ManualClock()
    const lab = new ChildLab(clock)
    const spec = { ...lab.spec('job', { restart: 'transient' }), significant: true }
    const sup = new Supervisor('s', { autoShutdown: 'any_significant', intensity: 5 }, [lab.spec('helper'), spec], { clock })
    await sup.ready()
    lab.current('job')?.crash()
    await clock.advance(0)
    expect(lab.starts('job')).toBe(2) // abnormal exit: restarted, the supervisor stays
    expect(sup.tree().state).toBe('running')
    lab.current('job')?.exitNormally()
    await clock.advance(0)
    expect(await sup.exit).toEqual({ kind: 'shutdown', detail: 'auto_shutdown' })
    expect(lab.runningIds()).toEqual([])
    expect(() => new Supervisor('bad', { autoShutdown: 'any_significant' }, [{ ...lab.spec('p'), significant: true }])).toThrow(/significant and permanent/)
  })
})
