// Model-based tests of the supervisors (fc.commands + fc.asyncModelRun): each strategy —
// one_for_one, one_for_all, rest_for_one and DynamicSupervisor (simple_one_for_one) — is
// run against a small reference model of OTP's supervisor.erl written here, sharing no
// code with the implementation. Children are ControlledChild instances the commands crash,
// end or slow down; time is a ManualClock, drained after each command so that every
// command's effects (restarts, shutdowns, grace deadlines) are complete before checking.
//
// ARBOR_LONG=1 runs 10× as many cases. A failure prints fast-check's seed, path and the
// shrunk command list; pass { seed, path } to fc.assert to replay it.
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { ManualClock, settle } from '../../../src/shared/clock'
import { Supervisor, supervisorSpec } from '../../../src/main/runtime/supervisor/supervisor'
import { DynamicSupervisor } from '../../../src/main/runtime/supervisor/dynamic-supervisor'
import type { ExitReason, Restart, SupervisorTree } from '../../../src/main/runtime/supervisor/types'
import { ChildLab, type StopHow } from '../../helpers/controlled-child'

const LONG = process.env.ARBOR_LONG === '1'
const NUM_RUNS = LONG ? 1000 : 100
const TIMEOUT = LONG ? 1_800_000 : 60_000

// As OTP's add_restart: a restart exactly `period` old still counts (R >= Now - Period).

/** How often the model saw the interesting cases in one fc.assert (all runs, shrinking included). */
let coverage = { restarts: 0, intensityExits: 0, deadlineKills: 0 }

type Kind = 'one_for_one' | 'one_for_all' | 'rest_for_one' | 'dynamic'

// ------------------------------------------------------------------ reference model

type Ev = { ev: 'start'; id: string; at: number } | { ev: 'stop'; id: string; how: StopHow; at: number }

interface MChild {
  id: string
  restart: Restart
  brutal: boolean   // shutdown brutal_kill; otherwise a grace period of G ms
  running: boolean
  slow: boolean     // ignores shutdown requests (this instance and later ones)
}

interface ChildConf { restart: Restart; brutal: boolean }

/** What OTP's supervisor would do, step by step, with the time each step takes. */
class Model {
  time = 0
  /** Static: the specs the supervisor keeps, in start order. Dynamic: its live children. */
  children: MChild[] = []
  /** Every child that commands can address (static: the initial specs; dynamic: all ever started). */
  known: MChild[] = []
  starts = new Map<string, number>()
  restarts: number[] = []           // times of recent restarts (intensity window)
  stopped = false
  exit: ExitReason | undefined
  nextDynamic = 0
  commandsAfterStop = 0
  /** The commands run so far, with the child each addressed. */
  trace: string[] = []
  /** Starts and stops the current command should cause, in order. */
  expected: Ev[] = []

  constructor (readonly kind: Kind, readonly G: number, readonly intensity: number, readonly periodMs: number, readonly template: ChildConf) {}

  get dynamic (): boolean { return this.kind === 'dynamic' }

  start (c: MChild): void {
    c.running = true
    this.starts.set(c.id, (this.starts.get(c.id) ?? 0) + 1)
    this.expected.push({ ev: 'start', id: c.id, at: this.time })
  }

  /** Stops one child by its shutdown spec: a slow child with a grace period costs G, then is killed. */
  stopOne (c: MChild): void {
    if (!c.running) return
    let how: StopHow = 'shutdown'
    if (c.brutal) how = 'killed'
    else if (c.slow) { this.time += this.G; how = 'killed'; coverage.deadlineKills++ }
    this.expected.push({ ev: 'stop', id: c.id, how, at: this.time })
    c.running = false
  }

  /** Stops children given in start order: in reverse order one by one, or (dynamic) all at once. */
  stopMany (cs: MChild[]): void {
    if (!this.dynamic) {
      for (const c of [...cs].reverse()) this.stopOne(c)
      return
    }
    const t0 = this.time
    let waited = false
    for (const c of cs) {
      if (!c.running) continue
      const late = !c.brutal && c.slow
      if (late) { waited = true; coverage.deadlineKills++ }
      this.expected.push({ ev: 'stop', id: c.id, how: c.brutal || late ? 'killed' : 'shutdown', at: late ? t0 + this.G : t0 })
      c.running = false
    }
    if (waited) this.time = t0 + this.G
  }

  remove (c: MChild): void {
    const i = this.children.indexOf(c)
    if (i >= 0) this.children.splice(i, 1)
  }

  terminate (reason: ExitReason): void {
    this.stopMany(this.children)
    this.children = this.children.filter(c => c.restart !== 'temporary')
    this.stopped = true
    this.exit = reason
  }

  /** OTP add_restart: keep the restarts still inside the period, add this one, compare with intensity. */
  addRestart (): boolean {
    this.restarts = this.restarts.filter(t => this.time - t <= this.periodMs)
    this.restarts.push(this.time)
    return this.restarts.length <= this.intensity
  }

  /** A running child ended by itself. */
  childExited (c: MChild, how: 'error' | 'normal' | 'shutdown'): void {
    if (!c.running) return
    this.expected.push({ ev: 'stop', id: c.id, how, at: this.time })
    c.running = false
    const restart = c.restart === 'permanent' || (c.restart === 'transient' && how === 'error')
    if (!restart) {
      // temporary specs are dropped; simple_one_for_one forgets every child that is gone
      if (c.restart === 'temporary' || this.dynamic) this.remove(c)
      return
    }
    if (!this.addRestart()) {
      coverage.intensityExits++
      this.terminate({ kind: 'shutdown', detail: 'reached_max_restart_intensity' })
      return
    }
    coverage.restarts++
    const i = this.children.indexOf(c)
    const group = this.kind === 'one_for_all' ? [...this.children] : this.kind === 'rest_for_one' ? this.children.slice(i) : [c]
    const others = group.filter(x => x !== c)
    this.stopMany(others)
    for (const o of others) if (o.restart === 'temporary') this.remove(o)
    for (const g of group) if (this.children.includes(g)) this.start(g)
  }

  newChild (id: string, conf: ChildConf): MChild {
    const c: MChild = { id, restart: conf.restart, brutal: conf.brutal, running: false, slow: false }
    this.children.push(c)
    this.known.push(c)
    return c
  }
}

// ------------------------------------------------------------------ the real system

type Sup = Supervisor | DynamicSupervisor<string>

interface Real {
  clock: ManualClock
  lab: ChildLab
  sup: Sup
  exit: ExitReason | undefined
}

/** Lets the system finish what it is doing, moving time G at a time while deadlines are pending. */
async function drain (clock: ManualClock, G: number): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    await settle()
    if (clock.pending === 0) {
      await settle()
      if (clock.pending === 0) return
    }
    await clock.advance(G)
  }
  throw new Error('drain: timers keep coming')
}

type CallResult = 'ok' | 'rejected'

/** Starts a call, drains the system, then reports how the call ended. */
async function call (r: Real, G: number, op: () => Promise<void>): Promise<CallResult> {
  let p: Promise<CallResult>
  try {
    p = op().then(() => 'ok' as const, () => 'rejected' as const)
  } catch {
    p = Promise.resolve('rejected')
  }
  await drain(r.clock, G)
  return await p
}

function normalize (evs: Ev[], dynamic: boolean): Ev[] {
  if (!dynamic) return evs
  // simple_one_for_one stops children in no defined order: compare each run of stops as a set
  const out: Ev[] = []
  let run: Ev[] = []
  const key = (e: Ev): string => `${String(e.at).padStart(12, '0')}|${e.id}`
  const flush = (): void => { out.push(...run.sort((a, b) => key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)); run = [] }
  for (const e of evs) {
    if (e.ev === 'stop') run.push(e)
    else { flush(); out.push(e) }
  }
  flush()
  return out
}

function verify (m: Model, r: Real, mark: number): void {
  const actual: Ev[] = r.lab.log.slice(mark).map(e => e.ev === 'start' ? { ev: 'start', id: e.id, at: e.at } : { ev: 'stop', id: e.id, how: e.how, at: e.at })
  expect(normalize(actual, m.dynamic), 'starts and stops of this command').toEqual(normalize(m.expected, m.dynamic))
  expect(r.lab.violations).toEqual([])
  expect(r.clock.now(), 'time taken').toBe(m.time)
  expect(r.lab.runningIds(), 'running children').toEqual(m.known.filter(c => c.running).map(c => c.id).sort())
  for (const c of m.known) expect(r.lab.starts(c.id), `starts of ${c.id}`).toBe(m.starts.get(c.id) ?? 0)
  expect(r.exit, 'supervisor exit').toEqual(m.exit)
  const tree: SupervisorTree = r.sup.tree()
  expect(tree.strategy).toBe(m.dynamic ? 'simple_one_for_one' : m.kind)
  if (m.stopped) {
    expect(tree.state).toBe('stopped')
    expect(r.lab.runningIds(), 'nothing runs after the supervisor stopped').toEqual([])
    expect(tree.children.filter(c => c.state !== 'stopped'), 'children of a stopped supervisor').toEqual([])
    return
  }
  expect(tree.state).toBe('running')
  expect(r.sup.childIds(), 'child ids').toEqual(m.children.map(c => c.id))
  expect(tree.children.map(c => ({ id: c.id, state: c.state })), 'tree').toEqual(m.children.map(c => ({ id: c.id, state: c.running ? 'running' : 'stopped' })))
  for (const c of m.children) expect(r.sup.child(c.id) !== undefined, `child(${c.id})`).toBe(c.running)
}

// ------------------------------------------------------------------ commands

/**
 * A command. toString() names its child by index (`#i`: the i-th known child, mod their
 * number; `live#i`: the i-th running one); the model's trace, printed with a failure,
 * names the child each command actually addressed.
 */
abstract class Cmd implements fc.AsyncCommand<Model, Real> {
  protected target: string | undefined
  /** Once the supervisor has stopped, a few more commands (which must change nothing) are enough. */
  check (m: Readonly<Model>): boolean { return !m.stopped || m.commandsAfterStop < 3 }
  abstract label (target: string | undefined): string
  toString (): string { return this.label(undefined) }

  async run (m: Model, r: Real): Promise<void> {
    if (m.stopped) m.commandsAfterStop++
    m.expected = []
    const mark = r.lab.log.length
    this.target = undefined
    await this.step(m, r)
    m.trace.push(this.label(this.target ?? '-'))
    try {
      verify(m, r, mark)
    } catch (err) {
      throw new Error(`after ${m.trace.join(', ')}: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
    }
  }

  protected abstract step (m: Model, r: Real): Promise<void>

  /** The i-th known child (mod); with `live`, the i-th running child if any runs. */
  protected pick (m: Model, i: number, live = false): MChild | undefined {
    const running = m.known.filter(c => c.running)
    const from = live && running.length > 0 ? running : m.known
    const c = from[i % Math.max(1, from.length)]
    if (c !== undefined) this.target = c.id
    return c
  }
}

type SelfExit = 'error' | 'normal' | 'shutdown'

class ExitCmd extends Cmd {
  constructor (readonly i: number, readonly how: SelfExit) { super() }
  label (t: string | undefined): string { return `${this.how === 'error' ? 'crash' : this.how === 'normal' ? 'exitNormally' : 'exitShutdown'}(${t ?? `live#${this.i}`})` }
  protected async step (m: Model, r: Real): Promise<void> {
    const c = this.pick(m, this.i, true)
    if (c === undefined) return
    const child = r.lab.current(c.id)
    if (this.how === 'error') child?.crash(new Error(`boom ${c.id}`))
    else if (this.how === 'normal') child?.exitNormally()
    else child?.exitShutdown()
    await drain(r.clock, m.G)
    m.childExited(c, this.how)
  }
}

class SlowCmd extends Cmd {
  constructor (readonly i: number) { super() }
  label (t: string | undefined): string { return `makeSlow(${t ?? `live#${this.i}`})` }
  protected async step (m: Model, r: Real): Promise<void> {
    const c = this.pick(m, this.i, true)
    if (c === undefined) return
    r.lab.setSlow(c.id)
    c.slow = true
    await drain(r.clock, m.G)
  }
}

class AdvanceCmd extends Cmd {
  constructor (readonly ms: number) { super() }
  label (): string { return `advance(${this.ms})` }
  protected async step (m: Model, r: Real): Promise<void> {
    await r.clock.advance(this.ms)
    await drain(r.clock, m.G)
    m.time += this.ms
  }
}

class TerminateCmd extends Cmd {
  constructor (readonly i: number) { super() }
  label (t: string | undefined): string { return `terminateChild(${t ?? `#${this.i}`})` }
  protected async step (m: Model, r: Real): Promise<void> {
    const c = this.pick(m, this.i)
    if (c === undefined) return
    const got = await call(r, m.G, () => r.sup.terminateChild(c.id))
    if (m.stopped) return // a call to a stopped supervisor: nothing may start (checked by verify)
    if (!m.children.includes(c)) {
      expect(got, 'terminateChild of an unknown child').toBe('rejected')
      return
    }
    m.stopOne(c)
    if (c.restart === 'temporary' || m.dynamic) m.remove(c)
    expect(got, 'terminateChild').toBe('ok')
  }
}

class RestartCmd extends Cmd {
  constructor (readonly i: number) { super() }
  label (t: string | undefined): string { return `restartChild(${t ?? `#${this.i}`})` }
  protected async step (m: Model, r: Real): Promise<void> {
    const c = this.pick(m, this.i)
    if (c === undefined || !(r.sup instanceof Supervisor)) return
    const sup = r.sup
    const got = await call(r, m.G, () => sup.restartChild(c.id))
    if (m.stopped || !m.children.includes(c) || c.running) {
      expect(got, 'restartChild of a stopped supervisor, unknown or running child').toBe('rejected')
      return
    }
    m.start(c)
    expect(got, 'restartChild').toBe('ok')
  }
}

class StartNewCmd extends Cmd {
  label (t: string | undefined): string { return `startChild(${t ?? 'new'})` }
  protected async step (m: Model, r: Real): Promise<void> {
    if (!(r.sup instanceof DynamicSupervisor)) return
    const sup = r.sup
    const id = `d${m.nextDynamic++}`
    this.target = id
    const got = await call(r, m.G, () => sup.startChild(id, id))
    if (m.stopped) {
      expect(got, 'startChild on a stopped supervisor').toBe('rejected')
      return
    }
    m.start(m.newChild(id, m.template))
    expect(got, 'startChild').toBe('ok')
  }
}

class StopCmd extends Cmd {
  label (): string { return 'stopSupervisor' }
  protected async step (m: Model, r: Real): Promise<void> {
    const got = await call(r, m.G, () => r.sup.close())
    expect(got, 'close').toBe('ok')
    if (!m.stopped) m.terminate({ kind: 'shutdown' })
  }
}

// Multiples of 250 ms, as are periods, so that restarts land exactly on the window's edge;
// round values often, now and then past any period.
const advanceArb: fc.Arbitrary<number> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(500, 1000, 2000, 2500, 5000) },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 20 }).map(k => k * 250) },
  { weight: 1, arbitrary: fc.integer({ min: 21, max: 48 }).map(k => k * 250) })

function commandArb (kind: Kind): fc.Arbitrary<Cmd> {
  const idx = fc.nat({ max: 7 })
  const arbs: Array<fc.WeightedArbitrary<Cmd>> = [
    { weight: 18, arbitrary: idx.map(i => new ExitCmd(i, 'error')) },
    { weight: 6, arbitrary: idx.map(i => new ExitCmd(i, 'normal')) },
    { weight: 6, arbitrary: idx.map(i => new ExitCmd(i, 'shutdown')) },
    { weight: 12, arbitrary: idx.map(i => new SlowCmd(i)) },
    { weight: 24, arbitrary: advanceArb.map(ms => new AdvanceCmd(ms)) },
    { weight: 6, arbitrary: idx.map(i => new TerminateCmd(i)) },
    { weight: 1, arbitrary: fc.constant(null).map(() => new StopCmd()) }
  ]
  if (kind === 'dynamic') arbs.push({ weight: 12, arbitrary: fc.constant(null).map(() => new StartNewCmd()) })
  else arbs.push({ weight: 9, arbitrary: idx.map(i => new RestartCmd(i)) })
  return fc.oneof(...arbs)
}

// ------------------------------------------------------------------ setup

interface Setup {
  G: number
  intensity: number
  periodMs: number
  children: ChildConf[]
}

const restartArb = fc.constantFrom<Restart>('permanent', 'transient', 'temporary')
const childConfArb: fc.Arbitrary<ChildConf> = fc.record({ restart: restartArb, brutal: fc.boolean() })

function setupArb (kind: Kind): fc.Arbitrary<Setup> {
  return fc.record({
    G: fc.constantFrom(50, 100, 250, 500),
    // biased towards the higher intensities and shorter periods, where runs see more restarts
    intensity: fc.oneof({ weight: 1, arbitrary: fc.integer({ min: 0, max: 1 }) }, { weight: 3, arbitrary: fc.integer({ min: 2, max: 3 }) }),
    periodMs: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 2, max: 8 }) }, { weight: 1, arbitrary: fc.integer({ min: 9, max: 20 }) }).map(k => k * 500),
    children: kind === 'dynamic'
      ? fc.tuple(childConfArb, fc.integer({ min: 1, max: 5 })).map(([c, n]) => Array.from({ length: n }, () => c))
      : fc.array(childConfArb, { minLength: 1, maxLength: 5 })
  })
}

async function build (kind: Kind, s: Setup): Promise<{ model: Model; real: Real }> {
  const clock = new ManualClock(0)
  const lab = new ChildLab(clock)
  const template = s.children[0] ?? { restart: 'permanent', brutal: false }
  const m = new Model(kind, s.G, s.intensity, s.periodMs, template)
  const shutdownOf = (c: ChildConf): 'brutal_kill' | number => c.brutal ? 'brutal_kill' : s.G
  let sup: Sup
  if (kind === 'dynamic') {
    const dyn = new DynamicSupervisor<string>('dyn', { start: id => lab.starter(id)(), restart: template.restart, shutdown: shutdownOf(template) },
      { intensity: s.intensity, periodMs: s.periodMs }, { clock })
    await dyn.ready()
    for (let k = 0; k < s.children.length; k++) {
      const id = `d${m.nextDynamic++}`
      await dyn.startChild(id, id)
      m.start(m.newChild(id, template))
    }
    sup = dyn
  } else {
    const specs = s.children.map((c, k) => lab.spec(`c${k}`, { restart: c.restart, shutdown: shutdownOf(c) }))
    const st = new Supervisor('sup', { strategy: kind, intensity: s.intensity, periodMs: s.periodMs }, specs, { clock })
    await st.ready()
    s.children.forEach((c, k) => m.start(m.newChild(`c${k}`, c)))
    sup = st
  }
  const real: Real = { clock, lab, sup, exit: undefined }
  void sup.exit.then(r => { real.exit = r })
  await drain(clock, s.G)
  verify(m, real, 0)
  return { model: m, real }
}

function strategyProperty (kind: Kind): fc.IAsyncProperty<[Setup, Iterable<fc.AsyncCommand<Model, Real, boolean>>]> {
  return fc.asyncProperty(setupArb(kind), fc.commands([commandArb(kind)], { maxCommands: 80, size: 'max' }), async (s, cmds) => {
    await fc.asyncModelRun(() => build(kind, s), cmds)
  })
}

describe('supervisor vs a reference model of OTP', () => {
  for (const kind of ['one_for_one', 'one_for_all', 'rest_for_one', 'dynamic'] as const) {
    it(`${kind === 'dynamic' ? 'DynamicSupervisor (simple_one_for_one)' : kind} matches the model`, async () => {
      coverage = { restarts: 0, intensityExits: 0, deadlineKills: 0 }
      await fc.assert(strategyProperty(kind), { numRuns: NUM_RUNS })
      // guard against generators that stop reaching the interesting cases (typical counts are 3–10× these)
      if (!LONG) {
        expect(coverage.restarts, 'restarts').toBeGreaterThanOrEqual(50)
        expect(coverage.intensityExits, 'intensity exits').toBeGreaterThanOrEqual(10)
        expect(coverage.deadlineKills, 'kills at the grace deadline').toBeGreaterThanOrEqual(3)
      }
    }, TIMEOUT)
  }
})

// ------------------------------------------------------------------ nesting: escalation

interface NestedSetup {
  innerRestart: Restart
  innerStrategy: 'one_for_one' | 'one_for_all' | 'rest_for_one'
  innerIntensity: number
  parentIntensity: number
  cycles: number
  G: number
}

const nestedArb: fc.Arbitrary<NestedSetup> = fc.record({
  innerRestart: restartArb,
  innerStrategy: fc.constantFrom('one_for_one', 'one_for_all', 'rest_for_one'),
  innerIntensity: fc.integer({ min: 0, max: 2 }),
  parentIntensity: fc.integer({ min: 0, max: 2 }),
  cycles: fc.integer({ min: 1, max: 3 }),
  G: fc.constantFrom(100, 500)
})

describe('nested supervisors', () => {
  it('a child supervisor past its intensity exits shutdown; the parent restarts it only if permanent', async () => {
    await fc.assert(fc.asyncProperty(nestedArb, async s => {
      const clock = new ManualClock(0)
      const lab = new ChildLab(clock)
      const inner = supervisorSpec('inner', { strategy: s.innerStrategy, intensity: s.innerIntensity, periodMs: 5000 },
        [lab.spec('g0', { shutdown: s.G }), lab.spec('g1', { shutdown: 'brutal_kill' })], { clock, restart: s.innerRestart })
      const parent = new Supervisor('parent', { intensity: s.parentIntensity, periodMs: 60_000 },
        [lab.spec('p0', { shutdown: s.G }), inner, lab.spec('p1', { shutdown: 'brutal_kill' })], { clock })
      let parentExit: ExitReason | undefined
      void parent.exit.then(r => { parentExit = r })
      await parent.ready()
      expect(lab.log.map(e => `${e.ev} ${e.id}`)).toEqual(['start p0', 'start g0', 'start g1', 'start p1'])

      let parentRestarts = 0
      for (let cycle = 0; cycle < s.cycles; cycle++) {
        const innerSup = parent.child('inner')
        expect(innerSup).toBeInstanceOf(Supervisor)
        let innerExit: ExitReason | undefined
        void innerSup?.exit.then(r => { innerExit = r })
        for (let k = 0; k < s.innerIntensity; k++) {
          lab.current('g0')?.crash()
          await drain(clock, s.G)
          expect(innerExit).toBeUndefined()
        }
        const mark = lab.log.length
        lab.current('g0')?.crash()
        await drain(clock, s.G)
        expect(innerExit).toEqual({ kind: 'shutdown', detail: 'reached_max_restart_intensity' })
        const evs = lab.log.slice(mark).map(e => e.ev === 'stop' ? `stop ${e.id} ${e.how}` : `start ${e.id}`)
        const escalated = ['stop g0 error', 'stop g1 killed']

        if (s.innerRestart !== 'permanent') {
          // shutdown is a normal exit: transient is kept stopped, temporary is forgotten
          expect(evs).toEqual(escalated)
          expect(parentExit).toBeUndefined()
          expect(lab.runningIds()).toEqual(['p0', 'p1'])
          if (s.innerRestart === 'transient') {
            expect(parent.childIds()).toEqual(['p0', 'inner', 'p1'])
            const node = parent.tree().children[1]
            expect(node?.state).toBe('stopped')
            expect(node?.lastExit).toBe('shutdown (reached_max_restart_intensity)')
            await parent.restartChild('inner') // OTP restart_child brings it back
            expect(lab.runningIds()).toEqual(['g0', 'g1', 'p0', 'p1'])
          } else {
            expect(parent.childIds()).toEqual(['p0', 'p1'])
          }
          break
        }

        parentRestarts++
        if (parentRestarts > s.parentIntensity) {
          // the parent gives up too: it stops the rest in reverse order and escalates
          expect(evs).toEqual([...escalated, 'stop p1 killed', 'stop p0 shutdown'])
          expect(parentExit).toEqual({ kind: 'shutdown', detail: 'reached_max_restart_intensity' })
          expect(lab.runningIds()).toEqual([])
          expect(parent.tree().state).toBe('stopped')
          break
        }
        expect(evs).toEqual([...escalated, 'start g0', 'start g1'])
        expect(parentExit).toBeUndefined()
        expect(lab.runningIds()).toEqual(['g0', 'g1', 'p0', 'p1'])
        const node = parent.tree().children[1]
        expect(node?.state).toBe('running')
        expect(node?.tree?.children.map(c => `${c.id}:${c.state}`)).toEqual(['g0:running', 'g1:running'])
      }

      await parent.close()
      expect(lab.runningIds()).toEqual([])
      expect(parent.tree().state).toBe('stopped')
    }), { numRuns: LONG ? 500 : 50 })
  }, TIMEOUT)
})
