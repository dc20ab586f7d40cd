// Which turns of a long transcript are drawn: offsets from heights, the window around a viewport.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { Turn } from '../../../src/renderer/transcript/transcript-items'
import { estimateTurnHeight, nearBottom, turnAt, turnOffsets, turnWindow } from '../../../src/renderer/transcript/transcript-window'

const userTurn = (id: string, text: string): Turn => ({ id, role: 'user', items: [{ id, ts: 1, forks: [], kind: 'user', text, parent: 'p' }] })
const agentTurn = (id: string, text: string, tools = 0): Turn => ({
  id,
  role: 'agent',
  items: [{ id, ts: 1, forks: [], kind: 'assistant', text, tools: Array.from({ length: tools }, (_, i) => ({ callId: `c${i}`, name: 'bash', args: {}, status: 'ok' as const })) }]
})

describe('turn heights and offsets', () => {
  it('estimates longer text, code and tool calls as taller', () => {
    const short = estimateTurnHeight(agentTurn('a', 'Yes.'))
    expect(estimateTurnHeight(agentTurn('a', 'word '.repeat(200)))).toBeGreaterThan(short)
    expect(estimateTurnHeight(agentTurn('a', 'Yes.\n\n```ts\n' + 'x()\n'.repeat(20) + '```'))).toBeGreaterThan(short + 20 * 15)
    expect(estimateTurnHeight(agentTurn('a', 'Yes.', 2))).toBeGreaterThan(short)
    expect(estimateTurnHeight(userTurn('u', 'hi'))).toBeGreaterThan(0)
  })

  it('puts each turn after the ones before it and finds the turn at a height', () => {
    const turns = ['a', 'b', 'c'].map(id => userTurn(id, id))
    const h: Record<string, number> = { a: 10, b: 20, c: 30 }
    const offsets = turnOffsets(turns, t => h[t.id] as number)
    expect([...offsets]).toEqual([0, 10, 30, 60])
    expect([turnAt(offsets, -5), turnAt(offsets, 0), turnAt(offsets, 9.9), turnAt(offsets, 10), turnAt(offsets, 59), turnAt(offsets, 1000)]).toEqual([0, 0, 0, 1, 2, 2])
  })
})

describe('turnWindow', () => {
  const heights = Array.from({ length: 5000 }, (_, i) => 40 + (i * 37) % 300)
  const turns = heights.map((_, i) => userTurn(String(i), ''))
  const offsets = turnOffsets(turns, t => heights[Number(t.id)] as number)
  const total = offsets[turns.length] as number

  it('covers the viewport plus the overscan with a bounded number of turns', () => {
    fc.assert(fc.property(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 200, max: 1500 }), (at, height) => {
      const top = at * (total - height)
      const w = turnWindow(offsets, { top, height, atBottom: false }, 400)
      expect(offsets[w.start]).toBeLessThanOrEqual(Math.max(0, top - 400))
      expect(offsets[w.end]).toBeGreaterThanOrEqual(Math.min(total, top + height + 400))
      // at least 40 px a turn: never more than the covered span needs, plus the edge turns
      expect(w.end - w.start).toBeLessThanOrEqual(Math.ceil((height + 800) / 40) + 2)
    }))
  })

  it('draws the last turns when following the end, wherever top says', () => {
    const w = turnWindow(offsets, { top: 0, height: 800, atBottom: true }, 400)
    expect(w.end).toBe(turns.length)
    expect(offsets[w.start]).toBeLessThanOrEqual(total - 1200)
    expect(w.end - w.start).toBeLessThan(60)
  })

  it('clamps a viewport past the end, and draws nothing for no turns', () => {
    const w = turnWindow(offsets, { top: total * 2, height: 800, atBottom: false }, 0)
    expect(w.end).toBe(turns.length)
    expect(turnWindow(turnOffsets([], () => 0), { top: 0, height: 800, atBottom: true })).toEqual({ start: 0, end: 0 })
  })

  it('calls the view at the end within a few lines of it', () => {
    expect(nearBottom(1000, 600, 400)).toBe(true)
    expect(nearBottom(1000, 560, 400)).toBe(true)
    expect(nearBottom(1000, 500, 400)).toBe(false)
  })
})
