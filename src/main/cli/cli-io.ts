// What a command is given of the world: where it writes, its environment and directory, and
// Ctrl-C. A leaf, so runCli and the command modules it loads name it without naming each other.

export interface CliIo {
  out: (text: string) => void
  err: (text: string) => void
  env: NodeJS.ProcessEnv
  cwd: string
  /** aborted on Ctrl-C */
  signal?: AbortSignal
}
