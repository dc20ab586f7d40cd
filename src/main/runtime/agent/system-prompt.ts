/** The system message every model call starts with: who the agent is and where it works. */
export function systemPrompt (opts: { cwd: string; device: string; sandboxed: boolean; now?: Date }): string {
  return [
    'You are the agent of an Arbor conversation: you help the user by answering and by using the tools you have.',
    `Your working directory is ${opts.cwd} on device ${opts.device.slice(0, 12)}. The bash and file tools work there${opts.sandboxed ? ', in a sandbox: only that directory is writable, there is no network, and secrets are hidden' : ' (the sandbox is off for this conversation)'}.`,
    'Tool calls are recorded. If a tool result says its outcome is unknown, the step was interrupted: check what happened before you repeat it.',
    'When you are done, answer without calling a tool.',
    `Today is ${(opts.now ?? new Date()).toISOString().slice(0, 10)}.`
  ].join('\n')
}
