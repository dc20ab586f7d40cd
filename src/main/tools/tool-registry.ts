/**
 * The default tool set, its specs for the model, and runTool: argument checking, the time
 * limit (an AbortController linked to ctx.signal), and a crash turned into an error result.
 */
import type { IrToolSpec } from '../../shared/llm-ir'
import { createBashTool, type BashToolOptions } from './bash-tool'
import { createFileTools, type FileToolOptions } from './file-tools'
import { createHttpGetTool, type HttpGetOptions } from './http-get-tool'
import { abortWords, effectiveTimeout, timeoutReason, validateArgs } from './tool-args'
import type { Tool, ToolContext, ToolResult } from './tool'

export interface DefaultToolOptions {
  home?: string
  dataDir?: string
  bash?: BashToolOptions
  files?: FileToolOptions
  http?: HttpGetOptions
}

/** bash, read_file, write_file, edit_file, list_dir, http_get */
export function defaultTools (opts: DefaultToolOptions = {}): Tool[] {
  const common = { home: opts.home, dataDir: opts.dataDir }
  return [
    createBashTool({ ...common, ...opts.bash }),
    ...createFileTools({ ...common, ...opts.files }),
    createHttpGetTool(opts.http)
  ]
}

export function toolSpecs (tools: readonly Tool[]): IrToolSpec[] {
  return tools.map(t => ({ name: t.name, description: t.description, parameters: t.parameters }))
}

export function findTool (tools: readonly Tool[], name: string): Tool | undefined {
  return tools.find(t => t.name === name)
}

/** A tool that threw instead of returning a result: a bug in the tool, not in the call. */
export class ToolCrashError extends Error {
  constructor (readonly tool: string, cause: unknown) {
    super(`the ${tool} tool crashed (${cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)})`, { cause })
    this.name = 'ToolCrashError'
  }
}

/** How long runTool waits for a tool that ignores its aborted signal. */
const ABORT_GRACE_MS = 2000

export interface RunToolOptions {
  /** how long to wait for a tool that ignores its aborted signal (default 2 s) */
  abortGraceMs?: number
}

/**
 * Runs one call: bad arguments become an error the model can fix, the time limit aborts
 * the tool's signal (reason: a TimeoutError), and a throw is rethrown as ToolCrashError. A
 * tool that does not stop within a grace period after its signal is aborted is left
 * behind with an error result.
 */
export async function runTool (tool: Tool, args: unknown, ctx: ToolContext, opts: RunToolOptions = {}): Promise<ToolResult> {
  const grace = opts.abortGraceMs ?? ABORT_GRACE_MS
  const bad = validateArgs(tool.parameters, args)
  if (bad !== undefined) return { status: 'error', output: `${tool.name}: ${bad}` }
  if (ctx.signal.aborted) return { status: 'error', output: `${tool.name} did not run: ${abortWords(ctx.signal)}` }

  const ms = effectiveTimeout(tool, args)
  const ac = new AbortController()
  const onAbort = (): void => ac.abort(ctx.signal.reason)
  ctx.signal.addEventListener('abort', onAbort, { once: true })
  const timer = setTimeout(() => ac.abort(timeoutReason(ms)), ms)
  let graceTimer: ReturnType<typeof setTimeout> | undefined
  const abandoned = new Promise<ToolResult>(resolve => {
    ac.signal.addEventListener('abort', () => {
      graceTimer = setTimeout(() => resolve({
        status: 'error',
        output: `${tool.name} ${abortWords(ac.signal)} and did not stop within ${grace} ms of being told to`
      }), grace)
    }, { once: true })
  })
  try {
    const run = tool.run(args, { ...ctx, signal: ac.signal })
    return await Promise.race([run, abandoned])
  } catch (e) {
    // Let it crash: the agent's supervisor restarts it, and the step's effect class
    // decides whether the step runs again (DESIGN.md, "Durable steps").
    throw new ToolCrashError(tool.name, e)
  } finally {
    clearTimeout(timer)
    if (graceTimer !== undefined) clearTimeout(graceTimer)
    ctx.signal.removeEventListener('abort', onAbort)
  }
}
