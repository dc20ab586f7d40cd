// Heard through a peer (src/main/sync/peers/alive-proofs.ts): a device counts as heard only by its own
// signature over a nonce this device issued within the validity, checked before it counts;
// forged, misdirected, replayed and stale answers never count, garbage from one relay never
// shuts out another's genuine answer, and a first question's answer is due only for a while.
// Property tests against a model; a failure prints fast-check's seed and path.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import crypto from 'hypercore-crypto'
import { AliveAsks, AliveRelays, signAlive, verifyAlive, type AliveProof } from '../../../src/main/sync/peers/alive-proofs'

type KP = { publicKey: Buffer; secretKey: Buffer }
const seed = (ch: string): Buffer => Buffer.alloc(32, ch)
const ASKER = crypto.keyPair(seed('a'))
const OTHER_ASKER = crypto.keyPair(seed('o'))
const DEVICES = [crypto.keyPair(seed('0')), crypto.keyPair(seed('1')), crypto.keyPair(seed('2'))]
const hex = (kp: { publicKey: Buffer }): string => kp.publicKey.toString('hex')
const SELF = hex(ASKER)
const RELAYS = ['p', 'q']
const VALID_MS = 1000
const ANSWER_MS = 300

describe('signAlive and verifyAlive', () => {
  it('a signature verifies for its device, asker and nonce only', () => {
    const n = 'c'.repeat(64)
    const sig = signAlive(DEVICES[0] as KP, SELF, n)
    expect(verifyAlive(hex(DEVICES[0] as KP), SELF, n, sig)).toBe(true)
    expect(verifyAlive(hex(DEVICES[1] as KP), SELF, n, sig)).toBe(false)
    expect(verifyAlive(hex(DEVICES[0] as KP), hex(OTHER_ASKER), n, sig)).toBe(false)
    expect(verifyAlive(hex(DEVICES[0] as KP), SELF, 'd'.repeat(64), sig)).toBe(false)
    expect(verifyAlive(hex(DEVICES[0] as KP), SELF, n, 'zz')).toBe(false)
    // a membership statement's or a feed header's signature over other bytes is no answer
    expect(verifyAlive(hex(DEVICES[0] as KP), SELF, n, crypto.sign(Buffer.concat([Buffer.from(SELF, 'hex'), Buffer.from(n, 'hex')]), (DEVICES[0] as KP).secretKey).toString('hex'))).toBe(false)
  })
})

type Forgery = 'genuine' | 'another device signed' | 'for another asker' | 'garbage'
type Op =
  | { t: 'ask'; dt: number; about: boolean[]; sent: boolean }
  | { t: 'answer'; dt: number; relay: number; device: number; nonce: number; made: Forgery }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ t: fc.constant('ask' as const), dt: fc.nat(400), about: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }), sent: fc.boolean() }),
  fc.record({ t: fc.constant('answer' as const), dt: fc.nat(400), relay: fc.nat(1), device: fc.nat(2), nonce: fc.nat(80), made: fc.constantFrom<Forgery>('genuine', 'genuine', 'another device signed', 'for another asker', 'garbage') })
)

/** The model: what counts, by the rule's words. */
interface Model {
  /** nonces issued, in order, with when */
  issued: Array<{ n: string; at: number }>
  /** per nonce, the (relay, device) answers already checked */
  checked: Map<string, Set<string>>
  /** device → the issue time of each nonce it genuinely answered */
  proven: Map<string, number[]>
  /** device → its run of questions: since when, and whether answered since */
  runs: Map<string, { since: number; answered: boolean }>
}

describe('AliveAsks', () => {
  it('a device is heard through peers iff it signed one of this device\'s nonces issued within the validity; an answer is due only early in a run of questions', () => {
    fc.assert(fc.property(fc.array(opArb, { maxLength: 60 }), ops => {
      const asks = new AliveAsks(VALID_MS, ANSWER_MS)
      const m: Model = { issued: [], checked: new Map(), proven: new Map(), runs: new Map() }
      let now = 0
      let counter = 0
      for (const op of ops) {
        now += op.dt
        if (op.t === 'ask') {
          const about = DEVICES.filter((_, i) => op.about[i] === true).map(hex)
          const n = op.sent ? (counter++).toString(16).padStart(64, '0') : null
          asks.asked(n, about, now)
          for (const d of [...m.runs.keys()]) if (!about.includes(d)) m.runs.delete(d)
          if (n !== null) {
            m.issued.push({ n, at: now })
            for (const d of about) if (!m.runs.has(d)) m.runs.set(d, { since: now, answered: false })
          }
          // kept: issued within the validity, and the newest 64
          m.issued = m.issued.filter(x => x.at >= now - VALID_MS).slice(-64)
        } else {
          const device = DEVICES[op.device] as KP
          const d = hex(device)
          const known = m.issued[op.nonce]
          const n = known?.n ?? `${op.nonce}`.padStart(64, 'f') // made up, or long forgotten
          const signer = op.made === 'another device signed' ? DEVICES[(op.device + 1) % 3] as KP : device
          const sig = op.made === 'garbage' ? 'ab'.repeat(64) : signAlive(signer, op.made === 'for another asker' ? hex(OTHER_ASKER) : SELF, n)
          const relay = RELAYS[op.relay] as string
          const p: AliveProof = { device: d, asker: SELF, n, sig }
          const got = asks.accept(relay, p, now)
          let want: string
          if (known === undefined || known.at < now - VALID_MS) want = 'unknown-nonce'
          else if (m.checked.get(n)?.has(`${relay}:${d}`) === true) want = 'seen'
          else {
            const c = m.checked.get(n) ?? new Set<string>()
            c.add(`${relay}:${d}`)
            m.checked.set(n, c)
            if (op.made !== 'genuine') want = 'bad-signature'
            else {
              want = 'counted'
              m.proven.set(d, [...(m.proven.get(d) ?? []), known.at])
              const run = m.runs.get(d)
              if (run !== undefined) run.answered = true
            }
          }
          expect(got).toBe(want)
        }
        let lapse: number | undefined
        for (const kp of DEVICES) {
          const d = hex(kp)
          const newest = Math.max(...(m.proven.get(d) ?? []).filter(at => at >= now - VALID_MS), Number.NEGATIVE_INFINITY)
          expect(asks.heardThrough(d, now), `heard through at ${now}`).toBe(newest > Number.NEGATIVE_INFINITY)
          const run = m.runs.get(d)
          const due = run !== undefined && !run.answered && now - run.since < ANSWER_MS
          expect(asks.answerDue(d, now), `answer due at ${now}`).toBe(due)
          // the first moment, with nothing new, at which it is neither: a revival may be due then
          const held = Math.max(newest + VALID_MS + 1, due ? (run as { since: number }).since + ANSWER_MS : Number.NEGATIVE_INFINITY)
          if (held > now) lapse = Math.min(lapse ?? held, held)
        }
        expect(asks.nextLapse(now), `next lapse at ${now}`).toBe(lapse)
      }
    }), { numRuns: 300 })
  })

  it('garbage from one relay does not shut out another relay\'s genuine answer, nor a later genuine one from the same relay for a newer nonce', () => {
    const asks = new AliveAsks(VALID_MS, ANSWER_MS)
    const d = hex(DEVICES[0] as KP)
    const n1 = '1'.repeat(64)
    asks.asked(n1, [d], 0)
    expect(asks.answerDue(d, 10)).toBe(true)
    expect(asks.accept('p', { device: d, asker: SELF, n: n1, sig: 'ab'.repeat(64) }, 10)).toBe('bad-signature')
    expect(asks.accept('p', { device: d, asker: SELF, n: n1, sig: signAlive(DEVICES[0] as KP, SELF, n1) }, 11)).toBe('seen')
    expect(asks.heardThrough(d, 11)).toBe(false)
    expect(asks.accept('q', { device: d, asker: SELF, n: n1, sig: signAlive(DEVICES[0] as KP, SELF, n1) }, 12)).toBe('counted')
    expect(asks.heardThrough(d, 12)).toBe(true)
    expect(asks.answerDue(d, 12)).toBe(false)
    // valid for the validity from the nonce's issue, not from the answer's arrival
    expect(asks.heardThrough(d, VALID_MS)).toBe(true)
    expect(asks.heardThrough(d, VALID_MS + 1)).toBe(false)
    // the same answer again later is stale
    expect(asks.accept('r', { device: d, asker: SELF, n: n1, sig: signAlive(DEVICES[0] as KP, SELF, n1) }, VALID_MS + 1)).toBe('unknown-nonce')
  })
})

describe('AliveRelays', () => {
  it('passes back an answer only to a question it forwarded, once, and the newest per asker', () => {
    const r = new AliveRelays()
    const [d, a, b] = ['d', 'a', 'b']
    expect(r.answered(d, a, 'n1')).toBe(false)
    r.forward(d, a, 'n1')
    r.forward(d, a, 'n2')
    r.forward(d, b, 'm1')
    expect(r.answered(d, a, 'n1')).toBe(false)
    expect(r.answered('e', a, 'n2')).toBe(false)
    expect(r.answered(d, a, 'n2')).toBe(true)
    expect(r.answered(d, a, 'n2')).toBe(false)
    r.forget(d)
    expect(r.answered(d, b, 'm1')).toBe(false)
  })
})
