// The slots a first sync opens peers' feeds through (feed-slots.ts): whatever the order of
// wants, releases (of held and of queued keys, twice, of unknown keys), starts that release at
// once, and clears, the accounting matches a plain model: never more than `limit` held, no key
// started while it holds a slot, the first wanted started first, no free slot while a key
// waits, and every slot given back leaves nothing held. fast-check prints the seed and path of
// a failure: replay with fc.assert(..., { seed, path }).
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { FeedSlots } from '../../../src/main/history/store/feed-slots'

const KEYS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']

type Op =
  | { op: 'want'; key: number; failsAtStart: boolean }
  | { op: 'release'; key: number }
  | { op: 'clear' }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('want' as const), key: fc.nat({ max: KEYS.length - 1 }), failsAtStart: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('release' as const), key: fc.nat({ max: KEYS.length - 1 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('clear' as const) }) }
)

describe('FeedSlots', () => {
  it('matches the model of a bounded FIFO of slots, and every release frees its slot', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 4 }), fc.array(opArb, { maxLength: 80 }), (limit, ops) => {
      const failing = new Set<string>()
      const started: string[] = []
      const model = { held: new Set<string>(), queue: [] as string[] }
      let slots: FeedSlots | null = null
      const startModel = (): void => {
        while (model.held.size < limit && model.queue.length > 0) {
          const k = model.queue.shift() as string
          if (failing.has(k)) continue // released inside its start
          model.held.add(k)
        }
      }
      slots = new FeedSlots(limit, key => {
        expect(slots?.holds(key), `${key} holds its slot as it starts`).toBe(true)
        started.push(key)
        if (failing.has(key)) slots?.release(key)
      })
      const s = slots
      const running = new Set<string>()
      for (const o of ops) {
        const before = new Set(model.held)
        const startedBefore = started.length
        if (o.op === 'want') {
          const key = KEYS[o.key] as string
          if (!model.held.has(key) && !model.queue.includes(key)) {
            if (o.failsAtStart) failing.add(key)
            else failing.delete(key)
            model.queue.push(key)
          }
          s.want(key)
        } else if (o.op === 'release') {
          const key = KEYS[o.key] as string
          const i = model.queue.indexOf(key)
          if (i >= 0) model.queue.splice(i, 1)
          else model.held.delete(key)
          s.release(key)
        } else {
          model.held.clear()
          model.queue = []
          s.clear()
        }
        startModel()
        // the keys started by this op: each the first waiting, and none already running
        for (const k of started.slice(startedBefore)) {
          expect(before.has(k), `${k} started while it held a slot`).toBe(false)
          running.add(k)
        }
        expect(s.active).toBeLessThanOrEqual(limit)
        expect(s.active).toBe(model.held.size)
        expect(s.waiting).toBe(model.queue.length)
        for (const k of KEYS) {
          expect(s.holds(k)).toBe(model.held.has(k))
          expect(s.queued(k)).toBe(model.queue.includes(k))
        }
        // no free slot while a key waits
        if (s.active < limit) expect(s.waiting).toBe(0)
      }
      // every held slot given back (whatever waits then starts, and is given back too): nothing held
      for (let round = 0; round < KEYS.length + 1 && s.active > 0; round++) {
        for (const k of KEYS) if (s.holds(k)) s.release(k)
      }
      expect(s.active).toBe(0)
      expect(s.waiting).toBe(0)
    }), { verbose: true })
  })

  it('starts in the order wanted, and a start that releases at once lets the next start', () => {
    const started: string[] = []
    const slots: FeedSlots = new FeedSlots(2, key => { started.push(key); if (key.startsWith('x')) slots.release(key) })
    for (const k of ['x1', 'a', 'x2', 'b', 'c', 'd']) slots.want(k)
    expect(started).toEqual(['x1', 'a', 'x2', 'b'])
    expect(slots.waiting).toBe(2)
    slots.release('b')
    expect(started.at(-1)).toBe('c')
    slots.release('d') // queued: taken out, never started
    slots.release('a')
    slots.release('c')
    expect(started).toEqual(['x1', 'a', 'x2', 'b', 'c'])
    expect({ active: slots.active, waiting: slots.waiting }).toEqual({ active: 0, waiting: 0 })
  })

  it('thousands queued and each released as it starts run in a loop, not nested calls', () => {
    let n = 0
    const slots: FeedSlots = new FeedSlots(1, key => { n++; if (key !== 'hold') slots.release(key) })
    slots.want('hold')
    for (let i = 0; i < 20_000; i++) slots.want(`k${i}`)
    expect(slots.waiting).toBe(20_000)
    // each start would otherwise call the next from inside its release: 20,000 deep
    slots.release('hold')
    expect(n).toBe(20_001)
    expect(slots.active).toBe(0)
  })

  it('refuses a limit that is not a positive integer', () => {
    expect(() => new FeedSlots(0, () => undefined)).toThrow(/positive integer/)
    expect(() => new FeedSlots(1.5, () => undefined)).toThrow(/positive integer/)
  })
})
