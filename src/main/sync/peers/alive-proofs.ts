import crypto from 'hypercore-crypto'

/**
 * Heard through a peer (issue 23, ARCHITECTURE §5.7): a device cut off from this one alone is
 * not dead, but a peer's word that it hears it proves nothing — a compromised peer could say
 * so of a dead device for ever and hold off every revival of its agents. So a claim counts
 * only with the device's own signature over a nonce this device chose (arbor/1 message 10,
 * `alive`, protocol 1.4). Three roles, pure bookkeeping here (time and nonces come in):
 *
 * - the asker (`AliveAsks`): with every heartbeat it sends a fresh nonce to its peers, asking
 *   about the devices it does not hear (or has not heard for a while); it counts a device as
 *   heard through them only for that device's signature over one of its nonces issued within
 *   `validMs` (the detection window plus the relay allowance: a nonce goes out every heartbeat
 *   and its answer takes a relay's round trips), checked before it counts;
 * - a relaying peer (`AliveRelays`): forwards the question to the device when it hears it, and
 *   passes back only answers to questions it forwarded;
 * - the device asked about signs (`signAlive`), for askers in its cluster only.
 *
 * A relay can delay an answer or drop it (the device then looks dead a little sooner, as it
 * would to a peer that does not hear it), never forge or replay one: the nonce is fresh and
 * random, the signature names the asker.
 */

/** Domain separation: this signature can never be mistaken for a feed header or a membership statement. */
const DOMAIN = Buffer.from('arbor/1 alive\n')

/** What a device signs: the domain, the asker's key, the asker's nonce (both 32 bytes). */
function signable (asker: string, nonce: string): Buffer {
  return Buffer.concat([DOMAIN, Buffer.from(asker, 'hex'), Buffer.from(nonce, 'hex')])
}

export interface AliveKeyPair { publicKey: Buffer; secretKey: Buffer }

/** This device's answer to `asker`'s nonce: "I am alive", signed with its device key pair (hex). */
export function signAlive (kp: AliveKeyPair, asker: string, nonce: string): string {
  return crypto.sign(signable(asker, nonce), kp.secretKey).toString('hex')
}

/** Whether `sig` is `device`'s answer to `asker`'s nonce. */
export function verifyAlive (device: string, asker: string, nonce: string, sig: string): boolean {
  try {
    return crypto.verify(signable(asker, nonce), Buffer.from(sig, 'hex'), Buffer.from(device, 'hex'))
  } catch {
    return false
  }
}

/** A device's answer to an asker's nonce, as it travels back through the relay. */
export interface AliveProof { device: string; asker: string; n: string; sig: string }

/** What became of a proof that came to the asker. */
export type ProofOutcome =
  /** it counts: the device is heard through peers until its nonce is `validMs` old */
  | 'counted'
  /** not a nonce this device issued within `validMs` (an old one, another asker's, or made up) */
  | 'unknown-nonce'
  /** this relay already brought an answer for that device and nonce */
  | 'seen'
  | 'bad-signature'

/** How many nonces an asker keeps (a few seconds of heartbeats; older ones prove nothing anyway). */
const MAX_NONCES = 64

/** The asker's side: its nonces, whom it asks about since when, and whom it heard through peers. */
export class AliveAsks {
  /** nonce → when it was issued and which (relay, device) answers were checked for it; oldest first */
  private readonly nonces = new Map<string, { at: number; checked: Set<string> }>()
  /** devices asked about without a break → since when, and whether an answer came since */
  private readonly asking = new Map<string, { since: number; answered: boolean }>()
  /** device → when the newest nonce it answered was issued */
  private readonly proven = new Map<string, number>()

  /**
   * `validMs`: how long after its nonce was issued an answer counts; `answerMs`: how long a
   * first question may wait for its answer before the device counts as unheard.
   */
  constructor (readonly validMs: number, readonly answerMs: number) {}

  /**
   * This device asks its peers about `about` now, with nonce `n` (null: nobody could relay it,
   * nothing was sent). Devices no longer asked about (heard directly again) end their run of
   * questions; a run begins only with a question sent.
   */
  asked (n: string | null, about: readonly string[], now: number): void {
    const wanted = new Set(about)
    for (const d of [...this.asking.keys()]) if (!wanted.has(d)) this.asking.delete(d)
    if (n !== null) {
      this.nonces.set(n, { at: now, checked: new Set() })
      for (const d of wanted) if (!this.asking.has(d)) this.asking.set(d, { since: now, answered: false })
    }
    for (const [nonce, rec] of this.nonces) if (rec.at < now - this.validMs || this.nonces.size > MAX_NONCES) this.nonces.delete(nonce)
    for (const [d, at] of this.proven) if (at < now - this.validMs) this.proven.delete(d)
  }

  /** A proof for this device (`p.asker`) that `relay` passed on: checked (nonce, then signature) before it counts. */
  accept (relay: string, p: AliveProof, now: number): ProofOutcome {
    const rec = this.nonces.get(p.n)
    if (rec === undefined || rec.at < now - this.validMs) return 'unknown-nonce'
    // each relay gets one check per device and nonce: garbage costs one verify, and never
    // shuts out another relay's genuine answer
    const key = `${relay}:${p.device}`
    if (rec.checked.has(key)) return 'seen'
    rec.checked.add(key)
    if (!verifyAlive(p.device, p.asker, p.n, p.sig)) return 'bad-signature'
    if ((this.proven.get(p.device) ?? Number.NEGATIVE_INFINITY) < rec.at) this.proven.set(p.device, rec.at)
    const run = this.asking.get(p.device)
    if (run !== undefined) run.answered = true
    return 'counted'
  }

  /** Whether `device` answered one of this device's nonces issued within `validMs`. */
  heardThrough (device: string, now: number): boolean {
    return (this.proven.get(device) ?? Number.NEGATIVE_INFINITY) >= now - this.validMs
  }

  /** Whether a first question about `device` is still within its `answerMs` and unanswered: its answer may be on the way. */
  answerDue (device: string, now: number): boolean {
    const run = this.asking.get(device)
    return run !== undefined && !run.answered && now - run.since < this.answerMs
  }

  /**
   * The first moment after `now` at which, with nothing new, a device heard through peers or
   * with an answer due is neither (it may then be taken for dead); undefined when none is.
   */
  nextLapse (now: number): number | undefined {
    let next: number | undefined
    for (const d of new Set([...this.proven.keys(), ...this.asking.keys()])) {
      const proven = this.proven.get(d)
      const heard = proven !== undefined && proven >= now - this.validMs ? proven + this.validMs + 1 : Number.NEGATIVE_INFINITY
      const due = this.answerDue(d, now) ? (this.asking.get(d) as { since: number }).since + this.answerMs : Number.NEGATIVE_INFINITY
      const lapse = Math.max(heard, due)
      if (lapse > now && (next === undefined || lapse < next)) next = lapse
    }
    return next
  }
}

/** The relay's side: which questions it forwarded to each device, so that only their answers go back. */
export class AliveRelays {
  /** device asked about → asker → its newest nonce forwarded */
  private readonly forwarded = new Map<string, Map<string, string>>()

  /** `asker`'s question about `device` goes to it with nonce `n` (a newer one replaces the asker's older). */
  forward (device: string, asker: string, n: string): void {
    let m = this.forwarded.get(device)
    if (m === undefined) this.forwarded.set(device, m = new Map())
    m.set(asker, n)
  }

  /** `device` answered `asker`'s nonce `n`: true (once) if it was forwarded here, so the answer goes on to the asker. */
  answered (device: string, asker: string, n: string): boolean {
    const m = this.forwarded.get(device)
    if (m?.get(asker) !== n) return false
    m.delete(asker)
    return true
  }

  /** The connection to `device` is gone: its questions with it. */
  forget (device: string): void { this.forwarded.delete(device) }
}
