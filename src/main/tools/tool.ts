import type { EffectClass } from '../../shared/entry/entry'
import type { JsonSchema } from '../../shared/llm-ir'
import type { SandboxPolicy } from './sandbox-policy'

/** What a tool run may use: where it works, how to stop, how to report progress. */
export interface ToolContext {
  /** the conversation's working directory on this device (absolute) */
  cwd: string
  /** aborted on cancel, timeout or when the agent is stopped */
  signal: AbortSignal
  /** stable across re-runs of the same step (DESIGN.md, "Durable steps") */
  idemKey: string
  /** what the sandbox allows and hides */
  sandbox: SandboxPolicy
  /** live output, for the UI */
  onOutput?: (chunk: string) => void
}

export interface ToolResult {
  status: 'ok' | 'error'
  output: string
  /** the output was longer than the limit and its middle was cut */
  truncated?: boolean
  /** the bash tool: the command's exit code (absent when it was killed or did not run) */
  exitCode?: number
}

/**
 * A tool the model can call. `run` must honour ctx.signal and never throw for an
 * ordinary failure (a command exiting non-zero, a missing file): that is a result with
 * status 'error' and words the model can act on. A throw means the tool itself crashed.
 */
export interface Tool {
  name: string
  description: string
  parameters: JsonSchema
  effect: EffectClass
  /** default time limit for one run */
  timeoutMs: number
  /** when set, a numeric `timeoutMs` argument may ask for a limit up to this (the bash tool) */
  maxTimeoutMs?: number
  run (args: unknown, ctx: ToolContext): Promise<ToolResult>
}
