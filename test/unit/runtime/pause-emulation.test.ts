// The SIGSTOP emulation the agents model test pauses a node with: its clock and its network.
import { describe, expect, it } from 'vitest'
import crypto from 'hypercore-crypto'
import { PausableClock } from '../../helpers/pausable-clock'
import { MemoryLink } from '../../helpers/in-process-network'

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

describe('PausableClock', () => {
  it('holds timers while paused, fires the overdue ones at the thaw in due order, then what waited for it', async () => {
    const clock = new PausableClock()
    const seen: string[] = []
    clock.setTimeout(() => seen.push('late'), 30)
    clock.setTimeout(() => seen.push('early'), 10)
    const cleared = clock.setTimeout(() => seen.push('cleared'), 20)
    const after = clock.setTimeout(() => seen.push('after'), 400) // not due at the thaw
    clock.pause()
    const waited = clock.running().then(() => seen.push('answer'))
    await sleep(60)
    expect(seen).toEqual([])
    clock.clearTimeout(cleared)
    const before = Date.now()
    clock.thaw()
    expect(seen).toEqual(['early', 'late'])
    await waited
    expect(seen).toEqual(['early', 'late', 'answer'])
    expect(clock.now() - before).toBeLessThan(50) // time went on during the pause: now() is real time
    await expect(clock.running()).resolves.toBeUndefined()
    clock.clearTimeout(after)
  })

  it('lets an overdue timer clear one due after it', async () => {
    const clock = new PausableClock()
    const seen: string[] = []
    let second: ReturnType<PausableClock['setTimeout']> | null = null
    clock.setTimeout(() => { seen.push('first'); if (second !== null) clock.clearTimeout(second) }, 5)
    second = clock.setTimeout(() => seen.push('second'), 10)
    clock.pause()
    await sleep(30)
    clock.thaw()
    expect(seen).toEqual(['first'])
  })
})

describe('MemoryLink.freeze', () => {
  it('delivers what a side sent before its pause, holds what it sends and what comes for it, then delivers in order', async () => {
    const link = new MemoryLink(crypto.keyPair(), crypto.keyPair())
    try {
      expect(await link.opened()).toBe(true)
      const atB: string[] = []
      const atA: string[] = []
      link.b.on('data', (d: Buffer) => atB.push(d.toString()))
      link.a.on('data', (d: Buffer) => atA.push(d.toString()))
      link.a.write(Buffer.from('before'))
      await sleep(20)
      link.freeze('a', 'out', true)
      link.freeze('a', 'in', true)
      link.a.write(Buffer.from('during-1'))
      link.a.write(Buffer.from('during-2'))
      link.b.write(Buffer.from('for-a'))
      await sleep(50)
      expect(atB).toEqual(['before'])
      expect(atA).toEqual([])
      expect(link.down).toBe(false)
      link.freeze('a', 'out', false) // its output goes first (a thaw whose input lags)
      await sleep(50)
      expect(atB).toEqual(['before', 'during-1', 'during-2'])
      expect(atA).toEqual([])
      link.freeze('a', 'in', false)
      await sleep(50)
      expect(atA).toEqual(['for-a'])
    } finally {
      await link.cut()
    }
  })
})
