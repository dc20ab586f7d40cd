import { Worker, type ResourceLimits } from 'node:worker_threads'
import type { ExitReason, RunningChild } from './types'

/** The message a worker child gets when asked to stop; it should finish and exit. */
export const WORKER_SHUTDOWN = { type: 'arbor/shutdown' } as const

export interface WorkerChildOptions {
  workerData?: unknown
  resourceLimits?: ResourceLimits
  execArgv?: string[]
  env?: NodeJS.ProcessEnv
}

/**
 * A child that is a worker_thread: isolated memory, killable while stuck in a loop.
 * shutdown() posts WORKER_SHUTDOWN; kill() is terminate(). Resolves once the worker is
 * online; a worker that fails before that is a failed start.
 */
export async function workerChild (file: string | URL, opts: WorkerChildOptions = {}): Promise<RunningChild & { worker: Worker }> {
  const worker = new Worker(file, {
    workerData: opts.workerData,
    ...(opts.resourceLimits !== undefined ? { resourceLimits: opts.resourceLimits } : {}),
    ...(opts.execArgv !== undefined ? { execArgv: opts.execArgv } : {}),
    ...(opts.env !== undefined ? { env: opts.env } : {})
  })
  let asked: 'shutdown' | 'killed' | null = null
  let error: unknown = null
  worker.on('error', err => { error = err })
  const exit = new Promise<ExitReason>(resolve => {
    worker.once('exit', code => {
      if (asked === 'killed') resolve({ kind: 'killed' })
      else if (error !== null) resolve({ kind: 'error', error })
      else if (code !== 0) resolve({ kind: 'error', error: new Error(`worker exited with code ${code}`) })
      else resolve(asked === 'shutdown' ? { kind: 'shutdown' } : { kind: 'normal' })
    })
  })
  await new Promise<void>((resolve, reject) => {
    const onOnline = (): void => { worker.off('exit', onEarlyExit); resolve() }
    const onEarlyExit = (code: number): void => {
      worker.off('online', onOnline)
      reject(error instanceof Error ? error : new Error(`worker exited with code ${code} before it was online`))
    }
    worker.once('online', onOnline)
    worker.once('exit', onEarlyExit)
  })
  return {
    worker,
    exit,
    shutdown () {
      if (asked !== null) return
      asked = 'shutdown'
      worker.postMessage(WORKER_SHUTDOWN)
    },
    kill () {
      asked = 'killed'
      void worker.terminate()
    }
  }
}
