import { afterEach, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { Supervisor } from '../../../src/main/runtime/supervisor/supervisor'
import { taskChild } from '../../../src/main/runtime/supervisor/task-child'
import { workerChild } from '../../../src/main/runtime/supervisor/worker-child'
import { processChild } from '../../../src/main/runtime/supervisor/process-child'
import type { ExitReason, SupervisorEvent } from '../../../src/main/runtime/supervisor/types'
import { FIXTURES } from '../../helpers/paths'

const fixture = (name: string): URL => pathToFileURL(path.join(FIXTURES, name))
const sups: Supervisor[] = []
afterEach(async () => { await Promise.all(sups.splice(0).map(s => s.close())) })

/** Running, and not a zombie waiting for a reaper (this container's init may not reap). */
function alive (pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return false
  }
}

describe('task children', () => {
  it('end normal, with an error, on shutdown through their signal, or killed', async () => {
    expect(await taskChild(async () => {}).exit).toEqual({ kind: 'normal' })
    const boom = new Error('boom')
    expect(await taskChild(async () => { throw boom }).exit).toEqual({ kind: 'error', error: boom })
    const polite = taskChild(signal => new Promise(resolve => signal.addEventListener('abort', () => resolve())))
    polite.shutdown()
    expect(await polite.exit).toEqual({ kind: 'shutdown' })
    const deaf = taskChild(() => new Promise(() => {}))
    deaf.kill()
    expect(await deaf.exit).toEqual({ kind: 'killed' })
  })
})

describe('worker_thread children', () => {
  it('a worker stuck in an infinite loop is terminated at its shutdown deadline', async () => {
    const sup = new Supervisor('s', {}, [{ id: 'stuck', shutdown: 300, start: () => workerChild(fixture('worker-stuck.mjs')) }])
    sups.push(sup)
    const events: SupervisorEvent[] = []
    sup.on('event', (e: SupervisorEvent) => events.push(e))
    await sup.ready()
    const t0 = Date.now()
    await sup.close()
    const took = Date.now() - t0
    expect(took).toBeGreaterThanOrEqual(290)
    expect(took).toBeLessThan(3000)
    expect(events.find(e => e.type === 'exited')).toMatchObject({ child: 'stuck', reason: { kind: 'killed' } })
    expect(await sup.exit).toEqual({ kind: 'shutdown' })
  })

  it('a cooperative worker stops with shutdown; a throwing one is restarted; a memory hog dies', async () => {
    const polite = await workerChild(fixture('worker-polite.mjs'))
    polite.shutdown()
    expect(await polite.exit).toEqual({ kind: 'shutdown' })

    const thrower = await workerChild(fixture('worker-polite.mjs'), { workerData: { throwAfterMs: 10 } })
    const r = await thrower.exit
    expect(r.kind).toBe('error')
    expect(String((r as { error: Error }).error.message)).toMatch(/failed on purpose/)

    const hog = await workerChild(fixture('worker-polite.mjs'), { workerData: { hogMemory: true }, resourceLimits: { maxOldGenerationSizeMb: 32 } })
    const h = await hog.exit as ExitReason & { error?: NodeJS.ErrnoException }
    expect(h.kind).toBe('error')
    expect(h.error?.code).toBe('ERR_WORKER_OUT_OF_MEMORY')
  })
})

describe('process children', () => {
  it('a process that ignores SIGTERM is SIGKILLed at its deadline, with its own children', async () => {
    const script = 'trap "" TERM; sleep 1000 & echo $!; while :; do sleep 0.05; done'
    let grandchild = 0
    const sup = new Supervisor('s', {}, [{
      id: 'deaf',
      shutdown: 300,
      start: async () => {
        const c = await processChild('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'inherit'] })
        grandchild = await new Promise<number>(resolve => c.process.stdout?.once('data', d => resolve(Number(String(d).trim()))))
        return c
      }
    }])
    sups.push(sup)
    const events: SupervisorEvent[] = []
    sup.on('event', (e: SupervisorEvent) => events.push(e))
    await sup.ready()
    const pid = (sup.child('deaf') as unknown as { process: { pid: number } }).process.pid
    expect(alive(pid) && alive(grandchild)).toBe(true)
    const t0 = Date.now()
    await sup.close()
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290)
    expect(events.find(e => e.type === 'exited')).toMatchObject({ reason: { kind: 'killed' } })
    expect(alive(pid)).toBe(false)
    await new Promise(resolve => setTimeout(resolve, 50))
    expect(alive(grandchild)).toBe(false)
  })

  it('a process that honours SIGTERM exits with shutdown; a missing command fails to start', async () => {
    const c = await processChild('sh', ['-c', 'trap "exit 0" TERM; while :; do sleep 0.05; done'])
    await new Promise(resolve => setTimeout(resolve, 50))
    c.shutdown()
    expect(await c.exit).toEqual({ kind: 'shutdown' })
    await expect(processChild('/nonexistent/arbor-tool', [])).rejects.toThrow(/cannot start \/nonexistent\/arbor-tool: .*ENOENT/)
  })

  it('a crashing process is restarted until the intensity is exceeded, then the supervisor stops', async () => {
    const sup = new Supervisor('s', { intensity: 2, periodMs: 5000 }, [
      { id: 'ok', start: async () => taskChild(signal => new Promise(resolve => signal.addEventListener('abort', () => resolve()))) },
      { id: 'crasher', start: () => processChild('sh', ['-c', 'exit 3']) }
    ])
    const events: SupervisorEvent[] = []
    sup.on('event', (e: SupervisorEvent) => events.push(e))
    await sup.ready()
    expect(await sup.exit).toEqual({ kind: 'shutdown', detail: 'reached_max_restart_intensity' })
    expect(events.filter(e => e.type === 'started' && e.child === 'crasher')).toHaveLength(3)
    expect(events.some(e => e.type === 'intensity-exceeded')).toBe(true)
    const exits = events.filter(e => e.type === 'exited')
    expect(exits.at(-1)).toMatchObject({ child: 'ok', reason: { kind: 'shutdown' } })
    expect(String((exits[0] as { reason: { error: Error } }).reason.error.message)).toMatch(/exited with code 3/)
    expect(sup.tree()).toMatchObject({ state: 'stopped' })
  })
})

describe('no leaks', () => {
  it('leaves no sh processes of ours behind', () => {
    const out = execFileSync('ps', ['-o', 'pid,ppid,args', '--ppid', String(process.pid)], { encoding: 'utf8' })
    expect(out).not.toMatch(/sleep 1000|trap/)
  })
})
